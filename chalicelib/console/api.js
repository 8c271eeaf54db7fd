// Calls to the JSON API of the same app. Keys live in sessionStorage only (gone with the tab) and
// travel in the Authorization header, never in a URL.
const BASE = location.pathname.replace(/\/console\/?$/, '');
const KEYS = { tenant: 'hindsight.tenant', admin: 'hindsight.admin' };

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

export const keys = {
  get: (kind) => sessionStorage.getItem(KEYS[kind]),
  set: (kind, key) => sessionStorage.setItem(KEYS[kind], key),
  drop: (kind) => sessionStorage.removeItem(KEYS[kind]),
};

export async function call(method, path, { body, admin = false, query, key } = {}) {
  const secret = key ?? keys.get(admin ? 'admin' : 'tenant');
  if (!secret) throw new ApiError(401, 'unauthorized', admin ? 'sign in with the admin key' : 'sign in with a tenant key');
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query || {})) if (v !== undefined && v !== null && v !== '') params.set(k, v);
  const url = BASE + path + (params.size ? '?' + params : '');
  for (let attempt = 0; ; attempt++) {
    const resp = await fetch(url, {
      method,
      headers: { Authorization: 'Bearer ' + secret, 'Content-Type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
      cache: 'no-store',
      credentials: 'omit',
    });
    let data = null;
    try { data = await resp.json(); } catch { data = null; }
    if ((resp.status === 429 || resp.status === 503) && attempt < 3) {
      const wait = Math.min(5, Number(resp.headers.get('Retry-After')) || 1);
      await new Promise((r) => setTimeout(r, wait * 1000));
      continue;
    }
    if (!resp.ok) {
      const e = (data && data.error) || {};
      throw new ApiError(resp.status, e.code || 'error', e.message || resp.statusText);
    }
    return data;
  }
}

let doc = null;
// What this server offers (restore, advise, ...): the console shows a feature only when its route exists.
export async function routes() {
  if (!doc) {
    doc = fetch(BASE + '/v1/openapi.json', { cache: 'no-store', credentials: 'omit' })
      .then((r) => r.json())
      .then((d) => new Set(Object.entries(d.paths || {}).flatMap(([p, ops]) => Object.keys(ops).map((m) => m.toUpperCase() + ' ' + p))))
      .catch(() => new Set());
  }
  return doc;
}

let stats = null;
export async function tenantStats(fresh = false) {
  if (!stats || fresh) stats = call('GET', '/v1/stats').catch((e) => { stats = null; throw e; });
  return stats;
}

export function forgetCaches() {
  stats = null;
  lessonCache.clear();
}

// Every lesson of the tenant (for a status and agent), loaded page by page through the list API.
// onPage is called after each page so a page can show rows before the last one arrives.
const lessonCache = new Map();
export function allLessons({ status = '', agent = '' } = {}, onPage = () => {}) {
  const k = status + '\u0000' + agent;
  let entry = lessonCache.get(k);
  if (!entry) {
    entry = { items: [], done: false, listeners: new Set(), promise: null, first: null };
    let firstPage;
    entry.first = new Promise((resolve) => { firstPage = resolve; });
    entry.promise = (async () => {
      let cursor = null;
      try {
        do {
          const page = await call('GET', '/v1/experiences', { query: { limit: 200, status, agent_id: agent, cursor } });
          entry.items.push(...page.items);
          cursor = page.cursor;
          if (!cursor) entry.done = true;
          firstPage();
          for (const fn of entry.listeners) fn(entry);
        } while (cursor);
      } catch (e) {
        lessonCache.delete(k);
        firstPage();
        throw e;
      }
      entry.done = true;
      for (const fn of entry.listeners) fn(entry);
      return entry.items;
    })();
    lessonCache.set(k, entry);
  }
  entry.listeners.add(onPage);
  if (entry.items.length) onPage(entry);
  return { entry, stop: () => entry.listeners.delete(onPage) };
}

export function invalidateLessons() {
  lessonCache.clear();
  stats = null;
}
