// One lesson: what is injected, its scope and scores, its version chain, its freshness over time,
// where it came from (each source trajectory as a timeline and a decision graph), and actions.
import { call, routes, tenantStats, invalidateLessons } from './api.js';
import { h, add, clear, fmt, when, json, lessonHref, badge, section, field, errorBox, short } from './dom.js';
import { timeline, legend, decisionGraph, barList } from './plots.js';

const DAY = 86400000;
const MAX_SOURCES = 10;

function keepScore(f, utility, confidence) {
  const trust = Math.min(1, 2 * utility) * Math.min(1, 2 * confidence);
  const proven = Math.max(0, (utility - 0.5) * 2) * confidence;
  return Math.max(f * trust, proven);
}

async function chain(exp) {
  const older = [], newer = [];
  let cur = exp;
  for (let i = 0; i < 20 && cur.supersedes; i++) {
    try { cur = await call('GET', '/v1/experiences/' + encodeURIComponent(cur.supersedes)); older.unshift(cur); } catch { break; }
  }
  cur = exp;
  for (let i = 0; i < 20 && cur.superseded_by; i++) {
    try { cur = await call('GET', '/v1/experiences/' + encodeURIComponent(cur.superseded_by)); newer.push(cur); } catch { break; }
  }
  return [...older, exp, ...newer];
}

function freshnessPlot(exp, policy, sources) {
  const now = new Date();
  const created = new Date(exp.created_at), renewed = new Date(exp.renewed_at || exp.created_at);
  const half = policy.half_life_days;
  const fAt = (t) => (t < renewed ? 1 : 0.5 ** ((t - renewed) / (half * DAY)));
  // until the keep score crosses the threshold (or four half-lives from now)
  let end = new Date(now.getTime() + 4 * half * DAY);
  for (let t = now.getTime(); t < now.getTime() + 20 * half * DAY; t += half * DAY / 10) {
    if (keepScore(fAt(new Date(t)), exp.utility, exp.confidence) < policy.archive_below) { end = new Date(t + half * DAY); break; }
  }
  const start = new Date(Math.min(created.getTime(), ...sources.map((t) => new Date(t.created_at).getTime())));
  const pts = [], keep = [];
  const steps = 120;
  for (let i = 0; i <= steps; i++) {
    const t = new Date(start.getTime() + ((end - start) * i) / steps);
    if (t < created) continue;
    pts.push([t, fAt(t)]);
    keep.push([t, keepScore(fAt(t), exp.utility, exp.confidence)]);
  }
  const markers = [
    { at: created, label: 'learned ' + when(exp.created_at), short: 'learned', cls: 'm-learned' },
    ...sources.map((t) => ({ at: new Date(t.updated_at), value: 1, label: `source ${t.trajectory_id} (${t.outcome || t.status})`, short: 'source', cls: 'm-source' })),
    { at: renewed, value: 1, label: 'last renewed (written or used) ' + when(exp.renewed_at), short: 'renewed', cls: 'm-renewed' },
    { at: now, value: fAt(now), label: 'now', short: 'now', cls: 'm-now' },
    ...(exp.feedback_events || []).map((f) => ({ at: new Date(f.at), value: fAt(new Date(f.at)), label: 'feedback ' + f.signal, short: f.signal, cls: 'm-feedback' })),
  ];
  return h('div', null,
    timeline({ lines: [{ points: pts, cls: 'fresh', label: 'freshness' }, { points: keep, cls: 'keep', label: 'keep score' }],
      threshold: policy.archive_below, markers, from: start, to: end, title: 'Freshness over time' }),
    legend([['fresh', `freshness (halves every ${half} days without use)`], ['keep', 'keep score (freshness × trust; archived below the line)'],
      ['m-source', 'source trajectories'], ['m-renewed', 'last use or write'], ['m-now', 'now']]));
}

// Which steps of a source trajectory the lesson came from: the contrasts on its tools (the call
// that failed and the one that fixed it), else its tools' failed calls; wasted calls are marked too.
function lessonRoles(exp, data) {
  const tools = new Set((exp.tools || []).map((t) => t.toLowerCase()));
  const byId = new Map(data.events.map((e) => [e.event_id, e]));
  const tool = (id) => ((byId.get(id) || {}).content || {}).tool;
  const roles = new Map();
  for (const c of data.contrasts) {
    if (tools.size && !tools.has(String(tool(c.failed)).toLowerCase()) && !tools.has(String(tool(c.worked)).toLowerCase())) continue;
    roles.set(c.failed, 'failed here');
    roles.set(c.worked, 'fixed it');
  }
  if (!roles.size) {
    for (const e of data.events) if (e.label === 'failed' && (!tools.size || tools.has(String(tool(e.event_id)).toLowerCase()))) roles.set(e.event_id, 'failed here');
  }
  for (const e of data.events) if (!roles.has(e.event_id) && ['repeated', 'objected'].includes(e.label)) roles.set(e.event_id, 'wasted');
  return roles;
}

function eventBody(e) {
  const c = e.content || {};
  if (e.type === 'tool_call') {
    return h('div', null,
      h('code', null, c.tool || '?'), ' ', h('code', { class: 'small' }, json(c.params || {})),
      c.status === 'error' ? h('div', { class: 'err' }, 'error: ', json(c.error)) : c.result !== undefined ? h('div', null, '→ ', short(json(c.result), 300)) : null);
  }
  if (e.type === 'state_change') return h('div', null, h('code', null, c.key), ' = ', short(json(c.value), 300));
  if (e.type === 'feedback') return h('div', null, c.sentiment ? badge(c.sentiment) : null, ' ', c.text || '');
  return h('div', null, short(c.text ?? json(c), 500));
}

function provenance(exp, traj, data) {
  const roles = lessonRoles(exp, data);
  const items = data.events.map((e) => h('li', { class: 'event ' + (e.label || e.type) + (roles.has(e.event_id) ? ' lesson-step' : ''), 'data-event': e.event_id },
    h('div', { class: 'event-head' }, h('span', { class: 'seq' }, '#' + e.seq), ' ', badge(e.type, 'type'), ' ',
      e.label ? badge(e.label) : null, ' ', roles.has(e.event_id) ? badge(roles.get(e.event_id), 'role') : null,
      h('span', { class: 'muted small' }, ' ' + when(e.timestamp))),
    eventBody(e)));
  const detail = h('div', { class: 'event-detail muted small' }, 'Select a node to see the step.');
  const graph = decisionGraph(data.events, { roles, onPick: (e) => add(clear(detail), h('strong', null, `#${e.seq} ${e.type}`), eventBody(e)) });
  const tabs = h('div', { class: 'tabs' });
  const tl = h('ol', { class: 'timeline-list' }, items);
  const gr = h('div', { class: 'graph-view', hidden: true }, graph, detail,
    legend([['effective', 'effective'], ['recovery', 'recovery (fixed a failure)'], ['failed', 'failed'], ['repeated', 'repeated (wasted)'], ['lesson-step', 'the steps the lesson came from']]));
  const show = (which) => { tl.hidden = which !== 'timeline'; gr.hidden = which !== 'graph'; for (const b of tabs.children) b.classList.toggle('active', b.dataset.tab === which); };
  tabs.append(
    h('button', { type: 'button', 'data-tab': 'timeline', class: 'active', onclick: () => show('timeline') }, 'Timeline'),
    h('button', { type: 'button', 'data-tab': 'graph', onclick: () => show('graph') }, 'Decision graph'));
  return h('article', { class: 'source', 'data-trajectory': traj.trajectory_id },
    h('h3', null, 'Trajectory ', h('code', null, traj.trajectory_id), ' ', badge(traj.outcome || traj.status)),
    h('p', null, h('strong', null, 'Goal: '), traj.goal),
    h('p', { class: 'muted small' }, `agent ${traj.agent_id}`, traj.user_id ? `, user ${traj.user_id}` : '', `, ${traj.event_count} events, ${when(traj.created_at)}`,
      traj.review ? `; review: ${traj.review.tool_calls ?? '?'} calls, ${traj.review.failed_calls ?? '?'} failed, ${traj.review.wasted_calls ?? '?'} wasted` : ''),
    data.contrasts.length ? h('ul', { class: 'contrasts' }, data.contrasts.map((c) => h('li', null,
      `#${(data.events.find((e) => e.event_id === c.failed) || {}).seq} failed, #${(data.events.find((e) => e.event_id === c.worked) || {}).seq} worked (${c.kind}`,
      c.changed_params.length ? `: ${c.changed_params.join(', ')}` : '', c.prerequisite ? `: ${c.prerequisite} first` : '', ')'))) : null,
    tabs, tl, gr);
}

// What the last action did, shown once on the page drawn again after it.
let flash = null;

function actions(exp, features, rerender, el) {
  const status = h('div', { class: 'status', id: 'action-status' }, flash ? h('p', { class: 'ok' }, flash) : null);
  flash = null;
  const run = async (fn, message) => {
    clear(status);
    try {
      const out = await fn();
      invalidateLessons();
      flash = message(out);
      await rerender(out);
    } catch (err) { add(status, errorBox(err)); }
  };
  const path = '/v1/experiences/' + encodeURIComponent(exp.experience_id);
  const fb = h('div', { class: 'buttons' }, ['adopted', 'succeeded', 'ignored', 'failed'].map((signal) =>
    h('button', { type: 'button', 'data-signal': signal, disabled: exp.status === 'forgotten',
      onclick: () => run(() => call('POST', path + '/feedback', { body: { signal } }), (x) => `Feedback "${signal}" recorded: utility ${fmt(x.utility)}, confidence ${fmt(x.confidence)}.`) }, signal)));
  const reason = h('input', { type: 'text', name: 'reason', maxlength: 1000, placeholder: 'why (kept with the tombstone)' });
  const forget = h('form', { class: 'inline', id: 'forget-form' }, reason, h('button', { type: 'submit', class: 'danger', disabled: exp.status === 'forgotten' }, 'Forget'));
  forget.addEventListener('submit', (ev) => {
    ev.preventDefault();
    run(() => call('DELETE', path, { body: { reason: reason.value.trim() || undefined } }), () => 'Forgotten: it will not be recalled again.');
  });
  const restoreRoute = features.has('POST /v1/experiences/{experience_id}/restore');
  const restore = restoreRoute && exp.status === 'archived'
    ? h('button', { type: 'button', id: 'restore', onclick: () => run(() => call('POST', path + '/restore', { body: {} }), () => 'Restored: active again.') }, 'Restore')
    : null;
  return h('div', null,
    field('Feedback', fb),
    field('Forget', forget),
    restore ? field('Restore', restore) : null,
    field('Edit', h('button', { type: 'button', id: 'edit', onclick: () => add(el, editForm(exp)) }, 'Edit as a human lesson…')),
    status);
}

function editForm(exp) {
  const area = (name, value, rows = 2) => h('textarea', { name, rows, maxlength: 4000 }, value || '');
  const inputs = {
    situation: area('situation', exp.situation), action: area('action', exp.action), result: area('result', exp.result),
    lesson: area('lesson', exp.lesson, 3), advice: area('advice', exp.advice, 3),
    tools: h('input', { name: 'tools', value: (exp.tools || []).join(', ') }), tags: h('input', { name: 'tags', value: (exp.tags || []).join(', ') }),
  };
  const status = h('div', { class: 'status' });
  const form = h('form', { class: 'card edit', id: 'edit-form' }, h('h2', null, 'Edit as a human lesson'),
    h('p', { class: 'muted small' }, 'Saves a new lesson (source: human, same scope) and forgets this one with a reason naming the new one.'),
    Object.entries(inputs).map(([k, i]) => field(k, i)), h('button', { type: 'submit' }, 'Save'), status);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const list = (v) => v.split(',').map((x) => x.trim()).filter(Boolean);
    const body = {
      situation: inputs.situation.value.trim(), action: inputs.action.value.trim(), result: inputs.result.value.trim(),
      lesson: inputs.lesson.value.trim(), advice: inputs.advice.value.trim(), tools: list(inputs.tools.value), tags: list(inputs.tags.value),
      source: 'human', task_type: exp.task_type || undefined, agent_id: exp.agent_id || undefined, user_id: exp.user_id || undefined,
      sources: exp.sources || [],
    };
    clear(status);
    try {
      const created = await call('POST', '/v1/experiences', { body });
      await call('DELETE', '/v1/experiences/' + encodeURIComponent(exp.experience_id), { body: { reason: 'edited: replaced by ' + created.experience_id } });
      invalidateLessons();
      location.hash = lessonHref(created.experience_id);
    } catch (err) { add(status, errorBox(err)); }
  });
  return form;
}

export async function lessonPage(el, id, alive) {
  // the decay policy comes with /v1/stats, which counts the whole tenant: the plot waits for it,
  // the rest of the page does not
  const stats = tenantStats().catch(() => ({}));
  const [exp, features] = await Promise.all([call('GET', '/v1/experiences/' + encodeURIComponent(id)), routes()]);
  const sources = (exp.sources || []).slice(0, MAX_SOURCES);
  const trajs = await Promise.all(sources.map(async (tid) => {
    try {
      const p = '/v1/trajectories/' + encodeURIComponent(tid);
      const [traj, data] = await Promise.all([call('GET', p), call('GET', p + '/events')]);
      return { tid, traj, data };
    } catch (err) { return { tid, err }; }
  }));
  if (!alive()) return;
  const versions = await chain(exp);
  if (!alive()) return;
  const rerender = async () => { clear(el); await lessonPage(el, id, alive); };
  const plot = h('div', { id: 'freshness-plot' }, h('p', { class: 'muted' }, 'Loading the decay policy…'));
  stats.then((st) => {
    if (!alive()) return;
    const policy = st.decay || { half_life_days: 30, archive_below: 0.2 };
    add(clear(plot), freshnessPlot(exp, policy, trajs.filter((t) => t.traj).map((t) => t.traj)));
    plot.dataset.loaded = 'yes';
  });

  const scores = [
    { label: 'confidence', value: exp.confidence }, { label: 'utility', value: exp.utility }, { label: 'freshness', value: exp.freshness },
  ];
  if (typeof exp.served === 'number') scores.push({ label: 'served', value: exp.served, max: Math.max(1, exp.served), digits: 0 });
  if (typeof exp.adopted === 'number') scores.push({ label: 'adopted', value: exp.adopted, max: Math.max(1, exp.served || exp.adopted) });
  const lift = typeof exp.success_when_adopted === 'number' && typeof exp.success_when_ignored === 'number'
    ? exp.success_when_adopted - exp.success_when_ignored : null;

  add(el, 
    h('p', null, h('a', { href: '#/lessons' }, '← Lessons')),
    h('h1', null, 'Lesson ', h('code', null, exp.experience_id), ' ', badge(exp.status)),
    exp.status_reason ? h('p', { class: 'muted', id: 'status-reason' }, 'Reason: ', exp.status_reason) : null,
    h('div', { class: 'row' },
      section('As injected',
        h('pre', { class: 'advice', id: 'lesson-advice' }, exp.advice),
        h('dl', { class: 'kv' },
          ['situation', 'action', 'result', 'lesson'].flatMap((k) => [h('dt', null, k), h('dd', { 'data-field': k }, exp[k] || '—')]))),
      section('Scope and scores',
        h('dl', { class: 'kv' },
          [['agent', exp.agent_id || 'any agent'], ['user', exp.user_id || 'any user'], ['task type', exp.task_type || 'any'],
            ['tools', (exp.tools || []).join(', ') || '—'], ['tags', (exp.tags || []).join(', ') || '—'], ['source', exp.source],
            ['support', `${exp.support} (times learned)`], ['version', String(exp.version)], ['learned', when(exp.created_at)], ['updated', when(exp.updated_at)]]
            .flatMap(([k, v]) => [h('dt', null, k), h('dd', null, v)])),
        barList(scores),
        lift !== null ? h('p', null, `lift: ${fmt(lift)} (success when adopted ${fmt(exp.success_when_adopted)} vs ignored ${fmt(exp.success_when_ignored)})`) : null)),
    section('Version chain',
      versions.length > 1
        ? h('ol', { class: 'chain', id: 'version-chain' }, versions.map((v) => h('li', { class: v.experience_id === exp.experience_id ? 'current' : '' },
          v.experience_id === exp.experience_id ? h('strong', null, `v${v.version} (this one)`) : h('a', { href: lessonHref(v.experience_id) }, `v${v.version}`),
          ' ', badge(v.status), ' ', short(v.advice, 120))))
        : h('p', { class: 'muted', id: 'version-chain' }, 'No other version: nothing superseded it and it superseded nothing.')),
    section('Freshness over time', plot),
    section('Actions', actions(exp, features, rerender, el)),
    section(`Provenance (${(exp.sources || []).length} source${(exp.sources || []).length === 1 ? '' : 's'})`,
      trajs.length ? trajs.map((t) => (t.traj ? provenance(exp, t.traj, t.data)
        : h('p', { class: 'muted' }, h('code', null, t.tid), ': not a trajectory of this tenant (', t.err.message, ')')))
        : h('p', { class: 'muted' }, 'Written by hand: no source trajectory.'),
      (exp.sources || []).length > MAX_SOURCES ? h('p', { class: 'muted' }, `The first ${MAX_SOURCES} sources are shown.`) : null),
  );
}
