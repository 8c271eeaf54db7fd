// Plots as inline SVG built element by element (no library, nothing fetched).
import { s, h } from './dom.js';

// Horizontal bars: [{label, value, max?, cls?}], value drawn against max (default 1).
export function barList(rows, { width = 360, unit = '', digits = 2 } = {}) {
  const rowH = 18, labelW = 110, barW = width - labelW - 60;
  const svg = s('svg', { class: 'plot bars', width, height: rows.length * rowH + 4, viewBox: `0 0 ${width} ${rows.length * rowH + 4}`, role: 'img' });
  rows.forEach((r, i) => {
    const y = i * rowH + 2;
    const max = r.max ?? 1;
    const w = max > 0 ? Math.max(0, Math.min(1, r.value / max)) * barW : 0;
    svg.append(
      s('text', { x: labelW - 6, y: y + 12, 'text-anchor': 'end', class: 'label' }, r.label),
      s('rect', { x: labelW, y: y + 2, width: barW, height: rowH - 6, class: 'track' }),
      s('rect', { x: labelW, y: y + 2, width: w.toFixed(1), height: rowH - 6, class: 'bar ' + (r.cls || '') }),
      s('text', { x: labelW + barW + 6, y: y + 12, class: 'value' }, (typeof r.value === 'number' ? r.value.toFixed(digits) : r.value) + unit),
    );
  });
  svg.prepend(s('title', null, rows.map((r) => `${r.label}: ${r.value}`).join(', ')));
  return svg;
}

// Vertical bars over categories: [{label, value}] with the label under each bar.
export function columns(rows, { width = 520, height = 160, title = '' } = {}) {
  const pad = { l: 34, r: 8, t: 10, b: 34 };
  const max = Math.max(1, ...rows.map((r) => r.value));
  const iw = width - pad.l - pad.r, ih = height - pad.t - pad.b;
  const bw = rows.length ? iw / rows.length : iw;
  const svg = s('svg', { class: 'plot columns', width, height, viewBox: `0 0 ${width} ${height}`, role: 'img' }, s('title', null, title));
  svg.append(s('line', { x1: pad.l, y1: pad.t + ih, x2: pad.l + iw, y2: pad.t + ih, class: 'axis' }));
  svg.append(s('text', { x: pad.l - 4, y: pad.t + 8, 'text-anchor': 'end', class: 'tick' }, String(max)));
  svg.append(s('text', { x: pad.l - 4, y: pad.t + ih, 'text-anchor': 'end', class: 'tick' }, '0'));
  const every = Math.max(1, Math.ceil(rows.length / 12));
  rows.forEach((r, i) => {
    const bh = (r.value / max) * ih;
    const x = pad.l + i * bw;
    svg.append(s('rect', { x: (x + 1).toFixed(1), y: (pad.t + ih - bh).toFixed(1), width: Math.max(1, bw - 2).toFixed(1), height: bh.toFixed(1), class: 'bar ' + (r.cls || '') },
      s('title', null, `${r.label}: ${r.value}`)));
    if (i % every === 0) svg.append(s('text', { x: (x + bw / 2).toFixed(1), y: height - pad.b + 14, 'text-anchor': 'middle', class: 'tick' }, r.label));
  });
  return svg;
}

// Freshness over time: lines [{points: [[Date, y]], cls}], a horizontal threshold, and markers
// [{at: Date, label, cls}] drawn as vertical ticks with a label.
export function timeline({ lines, threshold, markers = [], width = 760, height = 240, from, to, title = '' }) {
  const pad = { l: 36, r: 12, t: 12, b: 56 };
  const iw = width - pad.l - pad.r, ih = height - pad.t - pad.b;
  const t0 = from.getTime(), t1 = Math.max(to.getTime(), t0 + 1);
  const x = (d) => pad.l + ((d.getTime() - t0) / (t1 - t0)) * iw;
  const y = (v) => pad.t + (1 - v) * ih;
  const svg = s('svg', { class: 'plot timeline', width, height, viewBox: `0 0 ${width} ${height}`, role: 'img' }, s('title', null, title));
  for (const v of [0, 0.5, 1]) {
    svg.append(s('line', { x1: pad.l, x2: pad.l + iw, y1: y(v), y2: y(v), class: 'grid' }));
    svg.append(s('text', { x: pad.l - 4, y: y(v) + 4, 'text-anchor': 'end', class: 'tick' }, v.toFixed(1)));
  }
  [[from, 'start'], [new Date((t0 + t1) / 2), 'middle'], [to, 'end']].forEach(([d, anchor]) => {
    svg.append(s('text', { x: x(d), y: height - pad.b + 14, 'text-anchor': anchor, class: 'tick' }, d.toISOString().slice(0, 10)));
  });
  if (threshold !== undefined) {
    svg.append(s('line', { x1: pad.l, x2: pad.l + iw, y1: y(threshold), y2: y(threshold), class: 'threshold' }));
    svg.append(s('text', { x: pad.l + iw - 2, y: y(threshold) - 4, 'text-anchor': 'end', class: 'tick threshold-label' }, `archive below ${threshold}`));
  }
  for (const line of lines) {
    if (!line.points.length) continue;
    const d = line.points.map(([t, v], i) => `${i ? 'L' : 'M'}${x(t).toFixed(1)},${y(v).toFixed(1)}`).join(' ');
    svg.append(s('path', { d, class: 'line ' + (line.cls || '') }, s('title', null, line.label || '')));
  }
  // labels that would overlap an earlier one go one row lower (three rows, then they are left out)
  const rows = [-Infinity, -Infinity, -Infinity];
  markers.forEach((m) => {
    const mx = x(m.at);
    const row = rows.findIndex((end) => mx > end + 4);
    svg.append(s('line', { x1: mx, x2: mx, y1: pad.t, y2: pad.t + ih, class: 'marker ' + (m.cls || '') }, s('title', null, m.label)));
    svg.append(s('circle', { cx: mx, cy: y(m.value ?? 1), r: 4, class: 'dot ' + (m.cls || '') }, s('title', null, m.label)));
    if (row < 0) return;
    const label = m.short || m.label;
    rows[row] = mx + 3 + label.length * 6;
    svg.append(s('text', { x: mx + 3, y: height - pad.b + 26 + row * 11, class: 'tick ' + (m.cls || '') }, label));
  });
  return svg;
}

export function legend(items) {
  return h('ul', { class: 'legend' }, items.map(([cls, label]) => h('li', null, h('span', { class: 'swatch ' + cls }), label)));
}

// A decision graph: events in arrival order, one row each; a child continues its parent's column
// when it is the first child, and opens a new column when it is a sibling (a branch).
export function decisionGraph(events, { roles = new Map(), onPick } = {}) {
  const col = new Map(), used = new Map();
  let next = 0;
  for (const e of events) {
    const p = e.parent;
    if (p === null || p === undefined || !col.has(p)) col.set(e.event_id, next++);
    else if (!used.get(p)) { col.set(e.event_id, col.get(p)); used.set(p, true); }
    else col.set(e.event_id, next++);
  }
  const rowH = 30, colW = 26, left = 16;
  const textX = left + Math.max(1, next) * colW + 8;
  const width = Math.max(560, textX + 420), height = events.length * rowH + 16;
  const pos = new Map(events.map((e, i) => [e.event_id, [left + col.get(e.event_id) * colW, 14 + i * rowH]]));
  const svg = s('svg', { class: 'plot graph', width, height, viewBox: `0 0 ${width} ${height}`, role: 'img' },
    s('title', null, 'Decision graph: each step under the step it followed from'));
  for (const e of events) {
    if (!pos.has(e.parent)) continue;
    const [x1, y1] = pos.get(e.parent), [x2, y2] = pos.get(e.event_id);
    const d = x1 === x2 ? `M${x1},${y1} L${x2},${y2}` : `M${x1},${y1} C${x1},${y2} ${x1},${y2} ${x2},${y2}`;
    svg.append(s('path', { d, class: 'edge' }));
  }
  for (const e of events) {
    const [cx, cy] = pos.get(e.event_id);
    const role = roles.get(e.event_id);
    const g = s('g', { class: 'node ' + (e.label || e.type) + (role ? ' lesson-step' : ''), 'data-event': e.event_id, tabindex: 0 });
    if (role) g.append(s('circle', { cx, cy, r: 11, class: 'halo' }));
    g.append(s('circle', { cx, cy, r: 7, class: 'dot' }));
    const what = e.type === 'tool_call' ? (e.content && e.content.tool) || 'tool' : e.type;
    const tag = [e.label, role].filter(Boolean).join(' · ');
    g.append(s('text', { x: textX, y: cy + 4, class: 'node-label' }, `#${e.seq} ${what}${tag ? '  [' + tag + ']' : ''}`));
    g.append(s('title', null, `${e.event_id}: ${what}${tag ? ' (' + tag + ')' : ''}`));
    if (onPick) g.addEventListener('click', () => onPick(e));
    svg.append(g);
  }
  return svg;
}
