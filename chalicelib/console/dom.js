// The only way the console builds markup: elements and text nodes, never HTML strings, so text
// from agents (lessons, events, goals) is always shown as text.
const SVG_NS = 'http://www.w3.org/2000/svg';

function set(el, attrs) {
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === 'style' || k === 'innerHTML' || k === 'srcdoc') throw new Error('refused attribute ' + k);
    if (k === 'class') el.setAttribute('class', v);
    else if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k.startsWith('on')) throw new Error('refused handler ' + k);
    else if (k === 'href' && !String(v).startsWith('#')) throw new Error('only in-page links');
    else el.setAttribute(k, v === true ? '' : String(v));
  }
}

function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  set(el, attrs);
  append(el, children);
  return el;
}

export function s(tag, attrs, ...children) {
  const el = document.createElementNS(SVG_NS, tag);
  set(el, attrs);
  append(el, children);
  return el;
}

// Append children to an existing element, skipping null/false (Element.append would write "null").
export function add(el, ...children) {
  append(el, children);
  return el;
}

export function clear(el) {
  el.replaceChildren();
  return el;
}

export function link(hash, ...children) {
  return h('a', { href: hash }, ...children);
}

export const lessonHref = (id) => '#/lesson/' + encodeURIComponent(id);

export function fmt(n, digits = 2) {
  return typeof n === 'number' && Number.isFinite(n) ? n.toFixed(digits) : '–';
}

export function when(iso) {
  if (!iso) return '–';
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? String(iso) : d.toISOString().replace('T', ' ').slice(0, 16) + ' UTC';
}

export function short(text, n = 140) {
  const t = String(text ?? '');
  return t.length > n ? t.slice(0, n - 1) + '…' : t;
}

export function json(value) {
  if (value === undefined) return '';
  return typeof value === 'string' ? value : JSON.stringify(value);
}

export function errorBox(err) {
  const where = err && err.status ? ` (${err.status} ${err.code})` : '';
  return h('p', { class: 'error', role: 'alert' }, (err && err.message ? err.message : String(err)) + where);
}

export function badge(text, kind) {
  return h('span', { class: 'badge ' + (kind || String(text).replace(/[^a-z_]/gi, '')) }, text);
}

export function section(title, ...children) {
  return h('section', { class: 'card' }, h('h2', null, title), ...children);
}

export function field(label, input) {
  return h('label', { class: 'field' }, h('span', null, label), input);
}
