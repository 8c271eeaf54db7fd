// Lessons: every lesson of the tenant, loaded page by page through the list API, then searched,
// filtered and sorted here (the list API filters by status and agent only).
import { allLessons } from './api.js';
import { h, add, clear, fmt, when, short, lessonHref, badge, field, errorBox } from './dom.js';

const PAGE = 50;
const state = { q: '', status: '', agent: '', user: '', tool: '', tag: '', source: '', sort: 'updated_at', page: 0 };

const lift = (e) => (typeof e.success_when_adopted === 'number' && typeof e.success_when_ignored === 'number'
  ? e.success_when_adopted - e.success_when_ignored : null);
const SORTS = {
  updated_at: ['newest first', (e) => e.updated_at, 'desc'],
  created_at: ['learned first → last', (e) => e.created_at, 'asc'],
  freshness: ['freshness', (e) => e.freshness, 'desc'],
  utility: ['utility', (e) => e.utility, 'desc'],
  confidence: ['confidence', (e) => e.confidence, 'desc'],
  support: ['support (times learned)', (e) => e.support, 'desc'],
  served: ['served', (e) => e.served ?? -1, 'desc', 'served'],
  lift: ['lift', (e) => lift(e) ?? -2, 'desc', 'success_when_adopted'],
};

function matches(e) {
  const has = (list, v) => !v || (list || []).some((x) => x.toLowerCase() === v.toLowerCase());
  if (state.user && (e.user_id || '') !== state.user) return false;
  if (!has(e.tools, state.tool) || !has(e.tags, state.tag)) return false;
  if (state.source && e.source !== state.source) return false;
  if (state.q) {
    const text = [e.situation, e.lesson, e.advice, e.action, e.result, e.experience_id, (e.tools || []).join(' ')].join(' ').toLowerCase();
    return state.q.toLowerCase().split(/\s+/).filter(Boolean).every((w) => text.includes(w));
  }
  return true;
}

function sorted(items) {
  const [, key, dir] = SORTS[state.sort] || SORTS.updated_at;
  const out = items.filter(matches);
  out.sort((a, b) => {
    const x = key(a), y = key(b);
    const c = x < y ? -1 : x > y ? 1 : 0;
    return dir === 'desc' ? -c : c;
  });
  return out;
}

function row(e) {
  return h('tr', { 'data-id': e.experience_id },
    h('td', { class: 'lesson-cell' }, h('a', { href: lessonHref(e.experience_id), class: 'lesson-link' }, short(e.advice || e.lesson, 160)),
      h('div', { class: 'muted small' }, short(e.situation, 120))),
    h('td', null, badge(e.status)),
    h('td', null, e.agent_id || '—', e.user_id ? h('div', { class: 'muted small' }, 'user ' + e.user_id) : null),
    h('td', null, (e.tools || []).join(', ')),
    h('td', null, e.source),
    h('td', { class: 'num' }, fmt(e.freshness)),
    h('td', { class: 'num' }, fmt(e.utility)),
    h('td', { class: 'num' }, fmt(e.confidence)),
    h('td', { class: 'num' }, String(e.support)),
    'served' in e ? h('td', { class: 'num' }, String(e.served)) : null,
    h('td', { class: 'small' }, when(e.updated_at)));
}

export async function lessonsPage(el, _arg, alive) {
  const input = (name, placeholder) => {
    const i = h('input', { type: 'search', name, placeholder, value: state[name] });
    i.addEventListener('input', () => { state[name] = i.value.trim(); state.page = 0; draw(); });
    return i;
  };
  const select = (name, options, reload) => {
    const sel = h('select', { name }, options.map(([v, label]) => h('option', { value: v, selected: state[name] === v }, label)));
    sel.addEventListener('change', () => { state[name] = sel.value; state.page = 0; reload ? load() : draw(); });
    return sel;
  };
  const agent = h('input', { type: 'search', name: 'agent', placeholder: 'agent id', value: state.agent });
  agent.addEventListener('change', () => { state.agent = agent.value.trim(); state.page = 0; load(); });
  const sortSel = h('select', { name: 'sort' });
  const filters = h('form', { class: 'filters', id: 'lesson-filters' },
    field('Search', input('q', 'words in the lesson, situation, tools…')),
    field('Status', select('status', [['', 'any'], ['active', 'active'], ['archived', 'archived'], ['forgotten', 'forgotten']], true)),
    field('Agent', agent),
    field('User', input('user', 'user id')),
    field('Tool', input('tool', 'tool name')),
    field('Tag', input('tag', 'tag')),
    field('Source', select('source', [['', 'any'], ['agent', 'agent'], ['human', 'human'], ['simulation', 'simulation']])),
    field('Sort by', sortSel));
  filters.addEventListener('submit', (ev) => ev.preventDefault());
  sortSel.addEventListener('change', () => { state.sort = sortSel.value; state.page = 0; draw(); });
  const info = h('p', { class: 'muted', id: 'lesson-count' });
  const table = h('table', { class: 'lessons', id: 'lessons-table' });
  const pager = h('div', { class: 'pager' });
  add(el, h('h1', null, 'Lessons'), filters, info, table, pager);

  let entry = null, stop = () => {};
  function draw() {
    if (!alive()) return stop();
    const items = entry ? entry.items : [];
    const sample = items[0] || {};
    add(clear(sortSel), ...Object.entries(SORTS)
      .filter(([, v]) => !v[3] || v[3] in sample)
      .map(([k, v]) => h('option', { value: k, selected: state.sort === k }, v[0])));
    const list = sorted(items);
    const pages = Math.max(1, Math.ceil(list.length / PAGE));
    state.page = Math.min(state.page, pages - 1);
    const shown = list.slice(state.page * PAGE, state.page * PAGE + PAGE);
    info.textContent = `${list.length} of ${items.length} lessons` + (entry && entry.done ? '' : ' (loading…)');
    info.dataset.loaded = entry && entry.done ? 'yes' : 'no';
    const served = 'served' in sample;
    add(clear(table), 
      h('thead', null, h('tr', null, ['Lesson', 'Status', 'Scope', 'Tools', 'Source', 'Fresh', 'Utility', 'Conf.', 'Support', served ? 'Served' : null, 'Updated']
        .filter(Boolean).map((t) => h('th', null, t)))),
      h('tbody', null, shown.length ? shown.map(row) : h('tr', null, h('td', { colspan: 11, class: 'muted' }, entry && entry.done ? 'No lesson matches.' : 'Loading…'))));
    add(clear(pager), 
      h('button', { type: 'button', disabled: state.page === 0, onclick: () => { state.page--; draw(); } }, '← Previous'),
      h('span', null, ` page ${state.page + 1} of ${pages} `),
      h('button', { type: 'button', disabled: state.page >= pages - 1, onclick: () => { state.page++; draw(); } }, 'Next →'));
  }
  async function load() {
    stop();
    const loaded = allLessons({ status: state.status, agent: state.agent }, (e) => { entry = e; draw(); });
    entry = loaded.entry;
    stop = loaded.stop;
    draw();
    entry.promise.catch((err) => { if (alive()) add(el, errorBox(err)); });
    await entry.first;
  }
  await load();
}
