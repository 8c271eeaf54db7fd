// Overview: counts by status, reviews pending and failed, freshness, lessons learned per day and
// the lessons used most.
import { tenantStats, allLessons } from './api.js';
import { h, add, clear, fmt, lessonHref, section, short, errorBox } from './dom.js';
import { barList, columns } from './plots.js';

const DAYS = 30;

function perDay(items) {
  const counts = new Map();
  const today = new Date(new Date().toISOString().slice(0, 10));
  for (let i = DAYS - 1; i >= 0; i--) counts.set(new Date(today.getTime() - i * 86400000).toISOString().slice(0, 10), 0);
  for (const e of items) {
    const d = String(e.created_at).slice(0, 10);
    if (counts.has(d)) counts.set(d, counts.get(d) + 1);
  }
  return [...counts].map(([label, value]) => ({ label: label.slice(5), value }));
}

export async function overviewPage(el, _arg, alive) {
  const stats = await tenantStats(true);
  const ex = stats.experiences, tr = stats.trajectories;
  const total = Object.values(ex).reduce((a, b) => a + b, 0);
  const tiles = h('div', { class: 'tiles' },
    [['active lessons', ex.active, 'tile-active'], ['archived', ex.archived], ['forgotten', ex.forgotten],
      ['reviews pending', tr.finalized, 'tile-pending'], ['reviews failed', tr.review_failed, tr.review_failed ? 'tile-failed' : ''],
      ['trajectories reviewed', tr.reviewed], ['open trajectories', tr.open]]
      .map(([label, n, cls]) => h('div', { class: 'tile ' + (cls || ''), 'data-stat': label }, h('div', { class: 'n' }, String(n ?? 0)), h('div', null, label))));
  const learned = h('div', { id: 'learned-per-day' }, h('p', { class: 'muted' }, 'Loading lessons…'));
  const top = h('div', { id: 'top-lessons' });
  add(el, h('h1', null, 'Overview'), tiles,
    h('div', { class: 'row' },
      section('Lessons by status', barList(Object.entries(ex).map(([k, v]) => ({ label: k, value: v, max: Math.max(1, total), cls: 'st-' + k })), { digits: 0 })),
      section('Freshness of active lessons', columns(stats.freshness_histogram.map((b) => ({ label: b.bucket.split('-')[0], value: b.count })), { width: 420, title: 'active lessons by freshness' }))),
    section(`Lessons learned per day (last ${DAYS} days)`, learned),
    section('Most used lessons', top));
  const { entry } = allLessons({ status: '' });
  entry.promise.then((items) => {
    if (!alive()) return;
    add(clear(learned), columns(perDay(items), { width: 640, title: 'lessons learned per day' }));
    const used = 'served' in (items[0] || {});
    const rank = used ? (e) => e.served : (e) => e.support + e.utility;
    const best = items.filter((e) => e.status === 'active').sort((a, b) => rank(b) - rank(a)).slice(0, 10);
    add(clear(top), best.length ? h('table', { class: 'lessons' },
      h('thead', null, h('tr', null, h('th', null, 'Lesson'), h('th', null, used ? 'Served' : 'Support'), h('th', null, 'Utility'), h('th', null, 'Fresh'))),
      h('tbody', null, best.map((e) => h('tr', { 'data-id': e.experience_id },
        h('td', null, h('a', { href: lessonHref(e.experience_id) }, short(e.advice, 140))),
        h('td', { class: 'num' }, String(used ? e.served : e.support)), h('td', { class: 'num' }, fmt(e.utility)), h('td', { class: 'num' }, fmt(e.freshness))))))
      : h('p', { class: 'muted' }, 'No active lesson yet.'));
    learned.dataset.loaded = 'yes';
  }).catch((err) => { if (alive()) add(clear(learned), errorBox(err)); });
}
