"""How long each console page takes to load in a real browser with 10,000 lessons in the tenant.

Usage: .venv/bin/python -m bench.console_pages [--lessons 10000] [--small 20] [--repeats 3]

Two tenants are seeded through the adapters (as bench/recall_latency.py does: SQLite store and the
numpy index, MiniLM vectors of a few hundred lesson texts, perturbed): a large one with --lessons
lessons and a small one with --small, the baseline measured in the same run. The real server
process serves them (MiniLM embedder, no rate limit) and Debian's headless Chromium loads each page
from scratch (a full navigation: HTML, modules, API calls, rendering), timed in the browser from
the start of the navigation:

  ready     the page has rendered its first content (for lists: the first page of lessons)
  complete  everything the page loads has arrived and is drawn (the whole lesson list, the plots)

and, once loaded, the time to filter the full lesson list by one search word and to run one recall
from the playground. `floor` is the JSON API alone: every page of GET /v1/experiences?limit=200
fetched with httpx, what the lessons page cannot do faster. Medians of --repeats loads.

Prints numbers only; compare ratios (large / small, page / floor), not absolute times: the machine
is shared and noisy.
"""
from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from pathlib import Path

import httpx

from bench._harness import Server
from bench.recall_latency import Seeder, base_lessons

WAIT = """
const done = arguments[arguments.length - 1];
const deadline = performance.now() + 120000;
(function poll() {
  let ok = false;
  try { ok = (CHECK); } catch (e) { ok = false; }
  if (ok) return done(performance.now());
  if (performance.now() > deadline) return done(-1);
  setTimeout(poll, 5);
})();
"""


def seed(data_dir: str, large: int, small: int) -> dict:
    from chalicelib import container
    from chalicelib.services import tenants
    from chalicelib.settings import Settings

    settings = Settings(data_dir=data_dir, worker=False)
    deps = container.build_embedded(settings)
    rng = random.Random(7)
    bases = base_lessons(300, rng)
    base_vecs = deps.embedder.embed([f"{b['situation']} {b['lesson']} Tools: {', '.join(b['tools'])}." for b in bases])
    out = {}
    for name, n, s in (("large", large, 11), ("small", small, 12)):
        tenant, key = tenants.create_tenant(deps, name)
        t0 = time.perf_counter()
        seeder = Seeder(deps, tenant.tenant_id, bases, base_vecs, s)
        seeder.grow_to(n)
        seeder.check()
        out[name] = {"key": key, "n": n, "lesson": seeder.samples[0].experience_id, "seed_s": time.perf_counter() - t0}
    return out


def in_browser(driver, check: str) -> float:
    ms = driver.execute_async_script(WAIT.replace("CHECK", check))
    if ms < 0:
        raise TimeoutError(check)
    return ms


def load(driver, url: str, key: str, hash_: str, ready: str, complete: str) -> tuple[float, float]:
    driver.get(f"{url}/console#/none")
    driver.execute_script("sessionStorage.setItem('hindsight.tenant', arguments[0])", key)
    driver.get("about:blank")
    driver.get(f"{url}/console{hash_}")
    return in_browser(driver, ready), in_browser(driver, complete)


PAGES = [
    ("overview", "#/overview", "document.body.dataset.ready === 'overview'",
     "document.querySelector('#learned-per-day')?.dataset.loaded === 'yes'"),
    ("lessons", "#/lessons", "document.querySelectorAll('#lessons-table tr[data-id]').length > 0",
     "document.querySelector('#lesson-count')?.dataset.loaded === 'yes'"),
    ("lesson", "#/lesson/{lesson}", "document.body.dataset.ready === 'lesson'",
     "document.querySelector('#freshness-plot')?.dataset.loaded === 'yes'"),
    ("playground", "#/playground", "document.body.dataset.ready === 'playground'", "document.body.dataset.ready === 'playground'"),
]

FILTER = """
const input = document.querySelector('#lesson-filters input[name="q"]');
const t0 = performance.now();
input.value = 'timeout'; input.dispatchEvent(new Event('input'));
const t1 = performance.now();
input.value = ''; input.dispatchEvent(new Event('input'));
return t1 - t0;
"""

RECALL = """
const done = arguments[arguments.length - 1];
const form = document.querySelector('#recall-form');
form.querySelector('textarea[name="query"]').value = 'The billing API timed out while creating an invoice';
const out = document.querySelector('#recall-result');
delete out.dataset.done;
const t0 = performance.now();
form.requestSubmit();
(function poll() { if (out.dataset.done === 'yes') return done(performance.now() - t0); setTimeout(poll, 2); })();
"""


def floor(url: str, key: str) -> float:
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=60, trust_env=False) as c:
        t0 = time.perf_counter()
        cursor, n = None, 0
        while True:
            page = c.get("/v1/experiences", params={"limit": 200, **({"cursor": cursor} if cursor else {})}).json()
            n += len(page["items"])
            cursor = page["cursor"]
            if not cursor:
                return (time.perf_counter() - t0) * 1000


def main() -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.console_pages")
    ap.add_argument("--lessons", type=int, default=10000)
    ap.add_argument("--small", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    from devtools.browser import make_driver

    with tempfile.TemporaryDirectory() as tmp:
        data = str(Path(tmp) / "data")
        tenants = seed(data, args.lessons, args.small)
        for name, t in tenants.items():
            print(f"seeded {t['n']} lessons ({name}) in {t['seed_s']:.1f} s")
        with Server(data) as server:
            driver = make_driver(Path(tmp) / "profile")
            try:
                results: dict = {}
                for name, t in tenants.items():
                    for _ in range(args.repeats):
                        for page, hash_, ready, complete in PAGES:
                            r, c = load(driver, server.url, t["key"], hash_.format(lesson=t["lesson"]), ready, complete)
                            results.setdefault((name, page, "ready"), []).append(r)
                            results.setdefault((name, page, "complete"), []).append(c)
                            if page == "lessons":
                                results.setdefault((name, "lessons: filter", "complete"), []).append(driver.execute_script(FILTER))
                            if page == "playground":
                                results.setdefault((name, "playground: recall", "complete"), []).append(driver.execute_async_script(RECALL))
                        results.setdefault((name, "floor: API list", "complete"), []).append(floor(server.url, t["key"]))
            finally:
                driver.quit()
    med = {k: statistics.median(v) for k, v in results.items()}
    print(f"\nmedian of {args.repeats} loads, ms (navigation start -> ready / complete)")
    print(f"{'page':<22}{'small ready':>12}{'small done':>12}{'large ready':>12}{'large done':>12}{'done ratio':>12}")
    for page in [p[0] for p in PAGES] + ["lessons: filter", "playground: recall", "floor: API list"]:
        sr, sc = med.get(("small", page, "ready")), med[("small", page, "complete")]
        lr, lc = med.get(("large", page, "ready")), med[("large", page, "complete")]
        fmt = lambda v: f"{v:12.0f}" if v is not None else f"{'':>12}"  # noqa: E731
        print(f"{page:<22}{fmt(sr)}{fmt(sc)}{fmt(lr)}{fmt(lc)}{lc / sc:12.1f}")
    lessons_done, api = med[("large", "lessons", "complete")], med[("large", "floor: API list", "complete")]
    print(f"\nlessons page complete / API floor at {args.lessons} lessons: {lessons_done / api:.2f}x")


if __name__ == "__main__":
    main()
