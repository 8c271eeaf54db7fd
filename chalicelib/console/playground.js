// Recall playground: the ranked hits with each score part as a bar, and the advice block exactly
// as an agent receives it; pre-action advice too when the server has /v1/advise.
import { call, routes } from './api.js';
import { h, add, clear, fmt, lessonHref, badge, section, field, errorBox, short } from './dom.js';
import { barList } from './plots.js';

const PARTS = ['semantic', 'lexical', 'tag_match', 'freshness', 'utility', 'confidence'];
const last = { query: '', tools: '', agent_id: '', user_id: '', task_type: '', top_k: '5', recalled: false };
const list = (v) => v.split(',').map((x) => x.trim()).filter(Boolean);

function hitCard(hit, i) {
  const e = hit.experience, x = hit.explanation || {};
  const matched = [
    (x.matched_tools || []).length ? 'tools: ' + x.matched_tools.join(', ') : null,
    (x.matched_tags || []).length ? 'tags: ' + x.matched_tags.join(', ') : null,
    (x.matched_anchors || []).length ? 'anchors: ' + x.matched_anchors.join(', ') : null,
    x.task_type_match === true ? 'task type matches' : x.task_type_match === false ? 'other task type' : null,
  ].filter(Boolean);
  return h('li', { class: 'hit', 'data-id': e.experience_id },
    h('div', { class: 'hit-head' }, h('span', { class: 'rank' }, `#${i + 1}`), ' ', h('strong', { class: 'score' }, fmt(hit.score, 3)), ' ',
      h('a', { href: lessonHref(e.experience_id) }, short(e.advice, 200)), ' ', badge(e.status)),
    barList(PARTS.filter((p) => p in x).map((p) => ({ label: p, value: x[p], cls: 'part-' + p })), { width: 420 }),
    matched.length ? h('p', { class: 'muted small' }, 'matched ', matched.join('; ')) : null);
}

// The agents the tenant's lessons belong to (most lessons first): a lesson learned from an agent's
// runs is seen only by a recall that names that agent.
async function tenantAgents(features) {
  if (!features.has('GET /v1/agents')) return [];
  try { return (await call('GET', '/v1/agents')).agents || []; } catch { return []; }
}

// An empty answer that hid lessons of other agents or users: how many, and a button to recall as each.
function hiddenNote(hidden, retry) {
  const rows = Object.entries(hidden || {}).flatMap(([field, byValue]) => Object.entries(byValue).map(([value, n]) => ({ field, value, n })));
  if (!rows.length) return null;
  return h('div', { class: 'card', id: 'hidden-by-scope' },
    h('p', null, 'Lessons that match belong to another scope (a recall sees its own agent and user, and the shared lessons):'),
    h('ul', null, rows.map(({ field, value, n }) => h('li', { 'data-field': field, 'data-value': value },
      `${n} lesson${n === 1 ? '' : 's'} of ${field === 'agent_id' ? 'agent' : 'user'} `, h('code', null, value), ' ',
      h('button', { type: 'button', class: 'small', onclick: () => retry(field, value) }, `Recall as ${value}`)))));
}

export async function playgroundPage(el) {
  const features = await routes();
  const agents = await tenantAgents(features);
  // a first visit starts with the agent that has the most lessons, not with an empty agent
  if (!last.recalled && !last.agent_id && agents.length) last.agent_id = agents[0].agent_id;
  const input = (name, placeholder, type = 'text') => h('input', { name, placeholder, type, value: last[name] });
  const q = h('textarea', { name: 'query', rows: 2, required: true, placeholder: 'the task or situation, as the agent would ask' }, last.query);
  const tools = input('tools', 'tool names, comma separated'), user = input('user_id', 'user id');
  const agent = h('input', { name: 'agent_id', placeholder: 'agent id', type: 'text', value: last.agent_id, list: 'agent-list' });
  const agentList = h('datalist', { id: 'agent-list' },
    agents.map((a) => h('option', { value: a.agent_id, label: `${a.agent_id} (${a.active_lessons} lesson${a.active_lessons === 1 ? '' : 's'})` })));
  const task = input('task_type', 'query | operation | analysis'), topk = h('input', { name: 'top_k', type: 'number', min: 1, max: 50, value: last.top_k });
  const out = h('div', { id: 'recall-result' });
  const form = h('form', { class: 'card', id: 'recall-form' }, h('h2', null, 'Recall'),
    field('Query', q), h('div', { class: 'row' }, field('Tools', tools), field('Agent', agent), field('User', user), field('Task type', task), field('Top k', topk)),
    agentList, h('button', { type: 'submit' }, 'Recall'));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    Object.assign(last, { query: q.value, tools: tools.value, agent_id: agent.value, user_id: user.value, task_type: task.value, top_k: topk.value, recalled: true });
    const body = { query: q.value.trim(), tools: list(tools.value), top_k: Number(topk.value) || 5 };
    for (const [k, i] of [['agent_id', agent], ['user_id', user], ['task_type', task]]) if (i.value.trim()) body[k] = i.value.trim();
    add(clear(out), h('p', { class: 'muted' }, 'Recalling…'));
    try {
      const t0 = performance.now();
      const r = await call('POST', '/v1/recall', { body });
      const ms = performance.now() - t0;
      add(clear(out), 
        h('p', { class: 'muted small' }, `${r.hits.length} hit${r.hits.length === 1 ? '' : 's'} in ${ms.toFixed(0)} ms`, r.recall_id ? `; recall_id ${r.recall_id}` : ''),
        r.hits.length ? h('ol', { class: 'hits' }, r.hits.map(hitCard)) : h('p', { class: 'muted', id: 'no-hits' }, 'No lesson applies.'),
        r.hits.length ? null : hiddenNote(r.hidden_by_scope, (name, value) => {
          (name === 'agent_id' ? agent : user).value = value;
          form.requestSubmit();
        }),
        section(`Advice block (placed ${r.advice_placement || 'after_tools'})`, h('pre', { class: 'advice', id: 'advice-block' }, r.advice || '(empty: nothing is injected)')));
      out.dataset.done = 'yes';
    } catch (err) { add(clear(out), errorBox(err)); }
  });
  add(el, h('h1', null, 'Recall playground'), form, out);

  if (features.has('POST /v1/advise')) {
    const tool = h('input', { name: 'tool', required: true, placeholder: 'the tool about to be called' });
    const params = h('textarea', { name: 'params', rows: 2, placeholder: '{"city": "Lyon"}' });
    const goal = h('input', { name: 'goal', placeholder: 'goal' });
    const adv = h('div', { id: 'advise-result' });
    const f = h('form', { class: 'card', id: 'advise-form' }, h('h2', null, 'Pre-action advice'),
      h('div', { class: 'row' }, field('Tool', tool), field('Params (JSON)', params), field('Goal', goal)), h('button', { type: 'submit' }, 'Advise'));
    f.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      clear(adv);
      let p = {};
      try { p = params.value.trim() ? JSON.parse(params.value) : {}; } catch { add(adv, errorBox(new Error('params is not JSON'))); return; }
      const body = { tool: tool.value.trim(), params: p };
      if (goal.value.trim()) body.goal = goal.value.trim();
      if (agent.value.trim()) body.agent_id = agent.value.trim();
      if (user.value.trim()) body.user_id = user.value.trim();
      try {
        const r = await call('POST', '/v1/advise', { body });
        add(adv, 
          h('ul', { class: 'warnings' }, (r.warnings || []).map((w) => h('li', null, h('a', { href: lessonHref(w.experience_id) }, w.message), w.fix ? h('div', { class: 'small' }, 'fix: ', w.fix) : null))),
          (r.hits || []).length ? h('ol', { class: 'hits' }, r.hits.map(hitCard)) : null,
          h('pre', { class: 'advice' }, r.advice || '(empty: nothing applies)'));
      } catch (err) { add(adv, errorBox(err)); }
    });
    add(el, f, adv);
  }
}
