// Admin (admin key): tenants, failed reviews with redrive, and a decay run.
import { call, keys } from './api.js';
import { h, add, clear, when, section, field, errorBox, short } from './dom.js';
import { signInForm } from './main.js';

export async function adminPage(el, _arg, alive) {
  add(el, h('h1', null, 'Admin'));
  if (!keys.get('admin')) {
    add(el, section('Sign in with the admin key', signInForm('admin', () => { clear(el); adminPage(el, _arg, alive); })));
    return;
  }
  const [tenants, failed] = await Promise.all([call('GET', '/v1/tenants?limit=1000', { admin: true }), call('GET', '/v1/maintenance/failed-reviews', { admin: true })]);
  if (!alive()) return;
  const names = new Map(tenants.tenants.map((t) => [t.tenant_id, t.name]));
  const status = h('div', { class: 'status', id: 'admin-status' });
  const act = async (fn, msg) => {
    clear(status);
    try { const r = await fn(); add(status, h('p', { class: 'ok' }, msg(r))); } catch (err) { add(status, errorBox(err)); }
  };
  const redrive = (body) => act(() => call('POST', '/v1/maintenance/redrive', { admin: true, body }), (r) => `${r.redriven} review(s) sent round again.`);
  const asOf = h('input', { type: 'datetime-local', name: 'as_of' });
  const decay = h('form', { class: 'inline', id: 'decay-form' }, field('As of (UTC, empty: now)', asOf), h('button', { type: 'submit' }, 'Run decay'));
  decay.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const body = asOf.value ? { as_of: asOf.value + ':00Z' } : {};
    act(() => call('POST', '/v1/maintenance/decay', { admin: true, body }), (r) => `Decay: ${r.decayed} lesson(s) decayed, ${r.archived} archived.`);
  });
  add(el, status,
    section(`Tenants (${tenants.tenants.length}${tenants.cursor ? ', the oldest first; more with the CLI' : ''})`, h('table', { class: 'lessons', id: 'tenants' },
      h('thead', null, h('tr', null, h('th', null, 'Name'), h('th', null, 'Tenant id'), h('th', null, 'Created'))),
      h('tbody', null, tenants.tenants.map((t) => h('tr', null, h('td', null, t.name), h('td', null, h('code', null, t.tenant_id)), h('td', null, when(t.created_at))))))),
    section(`Failed reviews (${failed.failed.length})`,
      failed.failed.length ? h('div', null,
        h('table', { class: 'lessons', id: 'failed-reviews' },
          h('thead', null, h('tr', null, ['Tenant', 'Trajectory', 'Kind', 'Attempts', 'Error', 'Failed at', ''].map((t) => h('th', null, t)))),
          h('tbody', null, failed.failed.map((j) => h('tr', null,
            h('td', null, names.get(j.tenant_id) || j.tenant_id), h('td', null, h('code', null, j.trajectory_id)), h('td', null, j.kind),
            h('td', { class: 'num' }, String(j.attempts)), h('td', { class: 'small' }, short(j.error || '', 200)), h('td', { class: 'small' }, when(j.failed_at)),
            h('td', null, h('button', { type: 'button', onclick: () => redrive({ tenant_id: j.tenant_id, trajectory_ids: [j.trajectory_id] }) }, 'Redrive')))))),
        h('button', { type: 'button', id: 'redrive-all', onclick: () => redrive({}) }, 'Redrive all'))
        : h('p', { class: 'muted', id: 'failed-reviews' }, 'No failed review.')),
    section('Decay', h('p', { class: 'muted small' }, 'Freshness decays and stale lessons are archived (the server also runs this on a timer).'), decay));
}
