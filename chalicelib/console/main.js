// The console's entry point: sign in, a hash router, and the pages.
import { call, keys, forgetCaches } from './api.js';
import { h, clear, errorBox, field } from './dom.js';
import { lessonsPage } from './lessons.js';
import { lessonPage } from './lesson.js';
import { playgroundPage } from './playground.js';
import { overviewPage } from './overview.js';
import { adminPage } from './admin.js';

const view = document.getElementById('view');
let rendering = 0;

const PAGES = {
  overview: overviewPage,
  lessons: lessonsPage,
  lesson: lessonPage,
  playground: playgroundPage,
  admin: adminPage,
};

export function signInForm(kind, done) {
  const input = h('input', { type: 'password', name: kind + '-key', autocomplete: 'off', spellcheck: 'false', required: true, placeholder: kind === 'admin' ? 'admin key' : 'hs_…' });
  const status = h('div', { class: 'status' });
  const form = h('form', { class: 'signin', id: 'signin-' + kind },
    field(kind === 'admin' ? 'Admin key' : 'Tenant API key', input),
    h('button', { type: 'submit' }, 'Sign in'),
    status);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const key = input.value.trim();
    clear(status);
    try {
      await (kind === 'admin' ? call('GET', '/v1/tenants', { key }) : call('GET', '/v1/stats', { key }));
    } catch (err) {
      status.append(errorBox(err.status === 401 ? new Error('This key was not accepted.') : err));
      return;
    }
    input.value = '';
    keys.set(kind, key);
    forgetCaches();
    chrome();
    done();
  });
  return form;
}

function signInPage() {
  return h('div', { class: 'signin-page' },
    h('h1', null, 'Sign in'),
    h('p', { class: 'muted' }, 'The key stays in this tab (session storage) and is sent only in the Authorization header of API calls.'),
    h('div', { class: 'row' },
      h('section', { class: 'card' }, h('h2', null, 'Tenant'), signInForm('tenant', () => { location.hash = '#/overview'; route(); })),
      h('section', { class: 'card' }, h('h2', null, 'Admin'), signInForm('admin', () => { location.hash = '#/admin'; route(); }))));
}

function chrome() {
  const tenant = !!keys.get('tenant'), admin = !!keys.get('admin');
  const who = document.getElementById('who');
  who.textContent = [tenant && 'tenant key', admin && 'admin key'].filter(Boolean).join(' + ');
  document.getElementById('signout').hidden = !(tenant || admin);
}

// #/<page>[/<argument>]; the argument (a lesson id) is percent-encoded, so it may hold a '/'.
function parse() {
  const [page, ...rest] = location.hash.replace(/^#\/?/, '').split('/');
  let arg = rest.join('/');
  try { arg = decodeURIComponent(arg); } catch { arg = ''; }
  return { page: page || 'overview', arg };
}

async function route() {
  const token = ++rendering;
  const { page, arg } = parse();
  chrome();
  for (const a of document.querySelectorAll('#nav a')) a.classList.toggle('active', a.dataset.page === page || (page === 'lesson' && a.dataset.page === 'lessons'));
  const fn = PAGES[page];
  const needsTenant = page !== 'admin';
  if (needsTenant && !keys.get('tenant')) {
    clear(view).append(signInPage());
    return;
  }
  if (!fn) {
    clear(view).append(h('p', null, 'No such page. '), h('a', { href: '#/overview' }, 'Overview'));
    return;
  }
  const el = h('div', { class: 'page page-' + page });
  clear(view).append(el);
  try {
    await fn(el, arg, () => token === rendering);
  } catch (err) {
    if (token !== rendering) return;
    if (err.status === 401) {
      keys.drop(page === 'admin' ? 'admin' : 'tenant');
      clear(view).append(errorBox(new Error('The key was refused; sign in again.')), signInPage());
      return;
    }
    el.append(errorBox(err));
  }
  if (token === rendering) document.body.dataset.ready = page;
}

document.getElementById('signout').addEventListener('click', () => {
  keys.drop('tenant');
  keys.drop('admin');
  forgetCaches();
  location.hash = '#/overview';
  route();
});
window.addEventListener('hashchange', () => { delete document.body.dataset.ready; route(); });
route();
