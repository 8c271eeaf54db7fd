"""Recall latency at 1k / 10k / 100k active experiences in one tenant, against the numpy floor.

Usage: .venv/bin/python -m bench.recall_latency [--sizes 1000,10000,100000] [--queries 200] [--embedder minilm|e5]
       [--clients 4] [--seconds 20] [--loads 0.5,0.8] [--load-seconds 20] [--late 0,0.4] [--before main]
       [--before-data same|copy] [--cold]

For each size the data directory is seeded directly through the adapters (SQLite experience
store + NumpyVectorIndex; vectors are real embeddings of a few hundred lesson texts, perturbed,
so queries have realistic neighbours), then the real server process is started on it
(``python server.py``, the real MiniLM embedder, or e5 with ``--embedder e5``) and the same queries are timed, interleaved
query by query so that noise on this shared machine hits every method alike:

  http      POST /v1/recall on the server process (client: httpx keep-alive, 127.0.0.1)
  wsgi      the server's own WSGI app (Chalice LocalGateway + route) called in this process
  service   chalicelib.services.recall.recall in this process (same data, same embedder)
  svc-noemb the same service call with the query vector precomputed (no embedding)
  search    NumpyVectorIndex.search alone (filters, k = recall candidates)
  floor     numpy: one float32 (N x 384) @ (384,) product + argpartition top-k + sort of k
  embed     the query embedding alone (one sentence)

Before each timed call the bench waits (bounded, <= 0.4 s) until both processes stop burning CPU:
onnxruntime's pool threads spin ~50 ms after an inference and OpenBLAS's ~100 ms after a threaded
matrix-vector product, and on 2 cores that spinning would slow whichever call is timed next. So
the latencies are those of sparse traffic (one recall at a time, idle threads at its start).

Then, on the same server, load: ``--clients`` threads without pauses (closed loop) measure the
capacity (recalls/s); then recalls arrive open loop, a Poisson process at each ``--loads`` fraction
of that capacity, latency counted from each request's scheduled send time (``open_loop``).

``--before REF``: a second server runs REF's code (app.py, server.py, worker.py and chalicelib/
exported by ``git archive``) on the same data directory (``--before-data copy``: on a copy of its
databases, so that neither reads a row the other has just brought into the page cache); its HTTP
recalls are timed beside this checkout's, query by query (alternating which goes first), in every
load phase, and their hits compared.

``--cold``: in the sparse phase, the databases' files are dropped from the OS's page cache before each
timed call, so that a recall reads its rows from the disk (as after the host reclaimed the cache).

``--late``: the late-interaction weights to measure, one after the other on the same data, each
with a server of its own (``HINDSIGHT_RECALL_LATE_WEIGHT``) and the same weight in this process;
with any above 0, every lesson is seeded with token vectors kept beside its entry, as indexing keeps
them: those of its base text, made by the model (a lesson's text is its base's and its case number,
its vector the base's perturbed), under the key of its own text. ``svc-noemb`` runs without late
interaction (its embedder gives no token vectors).

Prints numbers only; it is not a pass/fail test. Compare ratios, not absolute times: the machine
is shared and noisy, and every ratio is between numbers measured in the same run.
"""
from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import contextmanager, nullcontext
from dataclasses import asdict, replace
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np

from bench._harness import (
    ROOT, Server, dumps, export_ref, load_avg, make_inprocess_wsgi, pct, proc_cpu_seconds, proc_rss_mb, settle,
)

# --- synthetic but realistic lessons and queries ----------------------------------------------

SYSTEMS = [
    ("orders API", ["http.get", "orders.lookup"], "look up the status of a customer's order"),
    ("Postgres database", ["sql.query"], "count last month's signups"),
    ("payments service", ["payments.refund", "http.post"], "refund a duplicate card charge"),
    ("shipping carrier API", ["shipping.track"], "track a parcel for the customer"),
    ("search index", ["search.query"], "find documents about the new pricing"),
    ("CRM", ["crm.get_contact", "crm.update_contact"], "update a customer's billing address"),
    ("calendar service", ["calendar.create_event"], "book a meeting for next Tuesday"),
    ("email sender", ["email.send"], "send the weekly report to the team"),
    ("file storage bucket", ["storage.get", "storage.put"], "upload the exported CSV"),
    ("weather API", ["weather.forecast"], "get tomorrow's forecast for Berlin"),
    ("deployment pipeline", ["ci.trigger", "ci.status"], "deploy the hotfix to production"),
    ("inventory service", ["inventory.check"], "check stock for a product before promising delivery"),
    ("translation API", ["translate.text"], "translate the support answer into Spanish"),
    ("analytics warehouse", ["sql.query", "warehouse.export"], "compute the churn rate by cohort"),
    ("ticketing system", ["tickets.create", "tickets.search"], "open a support ticket for a failed login"),
    ("identity provider", ["auth.reset_password"], "reset a user's password"),
]
PROBLEMS = [
    ("timed out after 30 seconds", "split the request into smaller pages and retry with exponential backoff"),
    ("returned HTTP 429 rate limited", "wait for the Retry-After interval instead of retrying immediately"),
    ("returned an empty result", "check the filters and the date range; widen them before concluding nothing exists"),
    ("failed with a permission error", "ask the user to confirm the account scope before calling it again"),
    ("returned stale data from a cache", "pass the no-cache flag or read from the primary"),
    ("rejected the payload because of a schema mismatch", "fetch the current schema first and map the fields to it"),
    ("returned results in the wrong time zone", "convert every timestamp to UTC before comparing"),
    ("succeeded but the user said the answer was wrong", "confirm the exact entity and identifier with the user first"),
    ("returned a 500 error intermittently", "retry once, then fall back to the secondary endpoint and tell the user"),
    ("needed an id the agent did not have", "look the id up with a search call instead of guessing it"),
]
QUERY_TEMPLATES = [
    "How should I {goal}? Last time the {system} {problem}.",
    "The {system} {problem} while I tried to {goal}. What should I do?",
    "User wants me to {goal}.",
    "{goal} - any known pitfalls with the {system}?",
    "I need to {goal} but I am worried the {system} {problem}.",
    "What worked before when the {system} {problem}?",
]
TAGS = ["billing", "latency", "auth", "data-quality", "support", "ops", "reporting", "customer", "retry", "schema"]
TASK_TYPES = ["query", "operation", "analysis"]
AGENTS = [f"agent-{i}" for i in range(10)]


def base_lessons(n: int, rng: random.Random) -> list[dict]:
    combos = [(s, p, v) for s in range(len(SYSTEMS)) for p in range(len(PROBLEMS)) for v in range(2)]
    rng.shuffle(combos)
    out = []
    for s, p, v in combos[:n]:
        system, tools, goal = SYSTEMS[s]
        problem, fix = PROBLEMS[p]
        situation = f"The agent called the {system} to {goal} and it {problem}."
        if v:
            situation = f"While trying to {goal}, the {system} {problem}."
        out.append({"system": s, "problem": p, "situation": situation, "lesson": f"{fix[0].upper()}{fix[1:]}.",
                    "tools": tools, "goal": goal})
    return out


def make_experiences(tenant_id: str, start: int, count: int, bases: list[dict], base_vecs: np.ndarray,
                     rng: random.Random, nrng: np.random.Generator, now: datetime):
    from chalicelib.domain.models import Experience, Source

    exps, vecs = [], np.empty((count, base_vecs.shape[1]), dtype=np.float32)
    picks = nrng.integers(0, len(bases), size=count)
    sigmas = nrng.uniform(0.02, 0.06, size=count).astype(np.float32)
    noise = nrng.standard_normal((count, base_vecs.shape[1]), dtype=np.float32) * sigmas[:, None]
    raw = base_vecs[picks] + noise
    vecs[:] = raw / np.linalg.norm(raw, axis=1, keepdims=True)
    for j in range(count):
        i = start + j
        b = bases[int(picks[j])]
        created = now - timedelta(days=rng.uniform(0, 90))
        renewed = min(now, created + timedelta(days=rng.uniform(0, 20)))
        tools = list(b["tools"]) if rng.random() > 0.15 else []
        exps.append(
            Experience(
                tenant_id=tenant_id,
                experience_id=f"exp_{i:08d}",
                situation=f"{b['situation']} (case {i})",
                action=f"Called {tools[0] if tools else 'the service'} with the default parameters.",
                result=f"It {PROBLEMS[b['problem']][0]}.",
                lesson=b["lesson"],
                advice=f"When you need to {b['goal']}: {b['lesson'][0].lower()}{b['lesson'][1:]}",
                created_at=created,
                updated_at=renewed,
                renewed_at=renewed,
                tags=rng.sample(TAGS, rng.randint(1, 3)),
                task_type=rng.choice(TASK_TYPES),
                tools=tools,
                agent_id=rng.choice(AGENTS) if rng.random() < 0.7 else None,
                user_id=f"user-{rng.randrange(50)}" if rng.random() < 0.1 else None,
                source=Source.AGENT,
                sources=[f"traj_{rng.getrandbits(64):016x}"],
                confidence=round(rng.uniform(0.4, 0.9), 3),
                freshness=1.0,
                utility=round(rng.uniform(0.2, 0.9), 3),
                support=rng.randint(1, 5),
                fingerprint=f"fp_{b['system']}_{b['problem']}",
            )
        )
    return exps, vecs


def make_queries(n: int, rng: random.Random) -> list[dict]:
    out = []
    for i in range(n):
        system, tools, goal = SYSTEMS[rng.randrange(len(SYSTEMS))]
        problem, _ = PROBLEMS[rng.randrange(len(PROBLEMS))]
        text = rng.choice(QUERY_TEMPLATES).format(system=system, goal=goal, problem=problem)
        q: dict = {"query": text[0].upper() + text[1:], "top_k": 5}
        if i % 3 == 1:
            q["tools"] = rng.sample(tools, rng.randint(1, len(tools)))
        if i % 5 == 2:
            q["agent_id"] = rng.choice(AGENTS)
        if i % 4 == 3:
            q["task_type"] = rng.choice(TASK_TYPES)
            q["tags"] = rng.sample(TAGS, 2)
        out.append(q)
    return out


# --- seeding through the adapters -----------------------------------------------------------

@contextmanager
def one_transaction(db):
    """Run SqliteExperienceStore.put (its own SQL) many times inside one write transaction.

    ``put`` opens ``db.write()`` per row (BEGIN IMMEDIATE ... COMMIT); here ``db.write`` is shadowed
    on the instance by a context that hands out the already-open transaction.
    """
    conn = db.connection()
    conn.execute("BEGIN IMMEDIATE")
    db.write = lambda: nullcontext(conn)
    try:
        yield
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    else:
        conn.execute("COMMIT")
    finally:
        del db.write


def bulk_put(store, exps) -> None:
    with one_transaction(store.db):
        for e in exps:
            store.put(e)


class Seeder:
    def __init__(self, deps, tenant_id: str, bases, base_vecs, seed: int, base_tokens=None) -> None:
        self.deps, self.tenant_id, self.bases, self.base_vecs = deps, tenant_id, bases, base_vecs
        self.base_tokens = base_tokens  # each base text's token vectors, or None: no token vectors kept
        self.base_of = {b["situation"]: j for j, b in enumerate(bases)}
        self.rng, self.nrng = random.Random(seed), np.random.default_rng(seed)
        self.now = datetime.now(timezone.utc)
        self.n = 0
        self.put_rate: float | None = None
        self.samples: list = []

    def grow_to(self, target: int, chunk: int = 5000) -> dict:
        from chalicelib.ports import IndexEntry

        t_store = t_index = t_gen = 0.0
        while self.n < target:
            count = min(chunk, target - self.n)
            t0 = time.perf_counter()
            exps, vecs = make_experiences(self.tenant_id, self.n, count, self.bases, self.base_vecs, self.rng,
                                          self.nrng, self.now)
            t1 = time.perf_counter()
            if self.put_rate is None:  # the real per-row path for the first rows, to report its rate
                few = min(300, len(exps))
                for e in exps[:few]:
                    self.deps.experiences.put(e)
                self.put_rate = few / (time.perf_counter() - t1)
                bulk_put(self.deps.experiences, exps[few:])
            else:
                bulk_put(self.deps.experiences, exps)
            t2 = time.perf_counter()
            self.deps.index.upsert(
                self.tenant_id,
                # the entry services.indexing writes: with its text, or BM25 would search nothing
                [IndexEntry(e.experience_id, v, e.agent_id, e.user_id, tuple(e.tools), e.task_type, tuple(e.tags),
                            e.search_text(), e.intent, self.late(e))
                 for e, v in zip(exps, vecs)],
            )
            t3 = time.perf_counter()
            t_gen, t_store, t_index = t_gen + t1 - t0, t_store + t2 - t1, t_index + t3 - t2
            self.samples.extend(exps[:: max(1, count // 5)][:5])
            self.n += count
        return {"gen": t_gen, "store": t_store, "index": t_index}

    def late(self, e):
        """The lesson's token vectors as indexing keeps them: its base text's, under its own text's key."""
        if self.base_tokens is None:
            return None
        from chalicelib.domain.interaction import text_key
        from chalicelib.ports import TokenVectors
        from chalicelib.services.recall import late_text

        base = self.base_of[e.situation.rsplit(" (case ", 1)[0]]
        return TokenVectors(text_key(late_text(e, "lesson")), self.base_tokens[base])

    def check(self) -> None:
        """What the bulk path wrote reads back equal through the store, and the index agrees on N."""
        got = self.deps.experiences.get_many(self.tenant_id, [e.experience_id for e in self.samples])
        for e in self.samples:
            if got.get(e.experience_id) != e:
                raise RuntimeError(f"seeded experience {e.experience_id} does not read back equal")
        if self.deps.index.count(self.tenant_id) != self.n:
            raise RuntimeError(f"index holds {self.deps.index.count(self.tenant_id)} vectors, expected {self.n}")


# --- measurement ------------------------------------------------------------------------------


class FixedEmbedder:
    """Returns precomputed vectors: the service call without its embedding cost."""

    def __init__(self, dim: int, table: dict[str, np.ndarray], similarity_floor: float = 0.0) -> None:
        self.dim, self.table, self.similarity_floor = dim, table, similarity_floor

    def embed(self, texts, query=False):
        return np.stack([self.table[t] for t in texts])


def recall_query(tenant_id: str, q: dict):
    from chalicelib.domain.models import RecallQuery

    return RecallQuery(tenant_id=tenant_id, query=q["query"], agent_id=q.get("agent_id"), task_type=q.get("task_type"),
                       tools=tuple(q.get("tools", ())), tags=tuple(q.get("tags", ())), top_k=q["top_k"])


def floor_search(matrix: np.ndarray, q: np.ndarray, k: int) -> np.ndarray:
    sims = matrix @ q
    top = np.argpartition(-sims, k - 1)[:k]
    return top[np.argsort(-sims[top])]


METHODS = ["http", "wsgi", "service", "svc-noemb", "search", "floor", "embed", "emb+floor", "http-before"]
BEFORE = "http-before"  # the --before ref's server


def hit_ids(response) -> list[str]:
    return [h["experience"]["experience_id"] for h in response.json()["hits"]]


def measure_size(n: int, deps, tenant_id: str, key: str, queries: list[dict], data_dir: str, warmup: int,
                 max_seconds: float, clients: int = 0, seconds: float = 0.0, loads: tuple[float, ...] = (),
                 load_seconds: float = 0.0, before: Path | None = None, late: float = 0.0,
                 before_copy: bool = False, cold: bool = False) -> dict:
    import httpx

    from chalicelib.ports import IndexFilter
    from chalicelib.services import recall as recall_svc
    from chalicelib.services.recall import embedded_texts, query_text

    deps = replace(deps, recall_late_weight=late)
    qobjs = [recall_query(tenant_id, q) for q in queries]
    qargs = [asdict(q) for q in qobjs]  # the service's keyword arguments, built outside the timing
    qtexts = [query_text(q) for q in qobjs]
    qvecs = deps.embedder.embed(qtexts, query=True)
    table = {t: v for t, v in zip(qtexts, qvecs)}
    # and the texts the service embeds beside (a query that negates something: also without it)
    extra = [t for q in qobjs for t in embedded_texts(q) if t not in table]
    if extra:
        table |= dict(zip(extra, deps.embedder.embed(extra, query=True)))
    deps_noemb = replace(deps, embedder=FixedEmbedder(deps.embedder.dim, table, deps.similarity_floor),
                         token_embedder=None, token_pass=None)
    part = deps.index._partition(tenant_id)  # the same N x 384 float32 matrix the index searches
    matrix = part.vecs[: part.n]
    assert matrix.shape[0] == n and matrix.dtype == np.float32 and matrix.flags["C_CONTIGUOUS"]
    k = max(deps.recall_candidates, 5 * 4)
    filters = [IndexFilter(agent_id=q.agent_id, user_id=q.user_id, tools=q.tools) for q in qobjs]
    bodies = [dumps(q) for q in queries]
    auth = {"authorization": f"Bearer {key}"}
    from chalicelib.container import get_settings

    wsgi = make_inprocess_wsgi(deps, get_settings())

    times: dict[str, list[float]] = {m: [] for m in METHODS}
    agree = compared = empty = same_before = 0
    env = {"HINDSIGHT_EMBEDDER": get_settings().embedder, "HINDSIGHT_RECALL_LATE_WEIGHT": str(late)}
    headers = {"content-type": "application/json", **auth}
    # the code before runs with its own defaults (late interaction included)
    old_server = Server(copy_data(data_dir, deps) if before and before_copy else data_dir,
                        {"HINDSIGHT_EMBEDDER": get_settings().embedder},
                        os.path.join(data_dir, "server-before.log"), root=before) if before else nullcontext()
    with Server(data_dir, env) as server, old_server as old, \
            httpx.Client(base_url=server.url, trust_env=False, timeout=900.0, headers=headers) as client, \
            (httpx.Client(base_url=old.url, trust_env=False, timeout=900.0, headers=headers) if old else nullcontext()) as old_client:
        rss_before = proc_rss_mb(server.proc.pid)
        t0 = time.perf_counter()
        r = client.post("/v1/recall", content=bodies[0])  # loads the tenant's partition from vectors.db
        cold_ms = (time.perf_counter() - t0) * 1000
        if r.status_code != 200:
            raise RuntimeError(f"recall answered {r.status_code}: {r.text[:300]}")
        if old_client is not None and old_client.post("/v1/recall", content=bodies[0]).status_code != 200:
            raise RuntimeError("the --before server's recall failed")
        for i in range(warmup):
            j = i % len(queries)
            client.post("/v1/recall", content=bodies[j])
            if old_client is not None:
                old_client.post("/v1/recall", content=bodies[j])
            wsgi("POST", "/v1/recall", auth, bodies[j])
            recall_svc.recall(deps, **qargs[j])
            recall_svc.recall(deps_noemb, **qargs[j])
            deps.index.search(tenant_id, qvecs[j], filters[j], k)
            floor_search(matrix, qvecs[j], k)
        pids = [server.proc.pid] + ([old.proc.pid] if old else [])
        settle(pids, max_wait=2.0)
        files = [os.path.join(d, f) for d in {data_dir, old.data_dir if old else data_dir}
                 for f in ("hindsight.db", "vectors.db")]

        def idle() -> None:
            settle(pids)
            if cold:
                drop_page_cache(files)

        idle()
        cpu0 = proc_cpu_seconds(server.proc.pid)
        deadline = time.monotonic() + max_seconds
        pc = time.perf_counter
        for j, q in enumerate(qobjs):
            if time.monotonic() > deadline:
                print(f"  (N={n}: stopped after {j} queries: --max-seconds reached)", flush=True)
                break
            if old_client is not None and j % 2:  # which server goes first alternates
                t = pc(); r_old = old_client.post("/v1/recall", content=bodies[j]); times[BEFORE].append((pc() - t) * 1000)
                idle()
            t = pc(); r = client.post("/v1/recall", content=bodies[j]); times["http"].append((pc() - t) * 1000)
            if r.status_code != 200:
                raise RuntimeError(f"recall answered {r.status_code}: {r.text[:300]}")
            idle()  # let spinning onnxruntime/OpenBLAS threads (server's and ours) go idle first
            if old_client is not None and not j % 2:
                t = pc(); r_old = old_client.post("/v1/recall", content=bodies[j]); times[BEFORE].append((pc() - t) * 1000)
                idle()
            if old_client is not None:
                if r_old.status_code != 200:
                    raise RuntimeError(f"the --before server's recall answered {r_old.status_code}: {r_old.text[:300]}")
                same_before += hit_ids(r_old) == hit_ids(r)
            t = pc(); status, _ = wsgi("POST", "/v1/recall", auth, bodies[j]); times["wsgi"].append((pc() - t) * 1000)
            if status != 200:
                raise RuntimeError(f"in-process WSGI recall answered {status}")
            idle()
            t = pc(); hits, _ = recall_svc.recall(deps, **qargs[j]); times["service"].append((pc() - t) * 1000)
            idle()
            t = pc(); recall_svc.recall(deps_noemb, **qargs[j]); times["svc-noemb"].append((pc() - t) * 1000)
            idle()
            t = pc(); deps.index.search(tenant_id, qvecs[j], filters[j], k); times["search"].append((pc() - t) * 1000)
            idle()
            t = pc(); floor_search(matrix, qvecs[j], k); times["floor"].append((pc() - t) * 1000)
            idle()
            t = pc(); deps.embedder.embed([qtexts[j]], query=True); times["embed"].append((pc() - t) * 1000)
            idle()
            t = pc(); floor_search(matrix, deps.embedder.embed([qtexts[j]], query=True)[0], k)
            times["emb+floor"].append((pc() - t) * 1000)
            idle()
            http_ids = hit_ids(r)
            svc_ids = [h.experience.experience_id for h in hits]
            compared += 1
            agree += http_ids == svc_ids
            empty += not http_ids
        cpu1 = proc_cpu_seconds(server.proc.pid)
        sparse_load = load_avg()
        old_url = old.url if old else None
        sustained = sustained_load(server.url, auth, bodies, deps, qtexts, qvecs, matrix, k, clients, seconds,
                                   before_url=old_url) if clients and seconds > 0 else None
        offered = None
        if sustained and loads and load_seconds > 0:
            # what the server answered without pauses: its capacity; with --before, the before's, so that
            # both servers get the same arrivals
            capacity = sustained["rate"][BEFORE if old else "http"]
            offered = [open_loop(server.url, auth, bodies, deps, qtexts, qvecs, matrix, k, capacity * f, load_seconds,
                                 before_url=old_url)
                       | {"fraction": f, "capacity": capacity} for f in loads]
        rss_after = proc_rss_mb(server.proc.pid)
    server_cpu = (cpu1 - cpu0) * 1000 / compared if cpu0 is not None and cpu1 is not None and compared else None
    return {"n": n, "late": late, "times": times, "cold_ms": cold_ms, "agree": agree, "compared": compared, "empty": empty,
            "same_before": same_before if before else None, "sparse_load": sparse_load,
            "rss": (rss_before, rss_after), "server_cpu": server_cpu, "wsgi": wsgi, "bodies": bodies, "auth": auth,
            "sustained": sustained, "offered": offered}


SUSTAINED = ["http", "floor", "emb+floor"]


def sustained_load(url: str, auth: dict, bodies: list[bytes], deps, qtexts: list[str], qvecs: np.ndarray,
                   matrix: np.ndarray, k: int, clients: int, seconds: float, rounds: int = 2,
                   before_url: str | None = None) -> dict:
    """``clients`` threads, each sending its next query as soon as the last one answered, for
    ``seconds``: over HTTP (each thread its own keep-alive connection), then the floor in this
    process with as many threads (one N x 384 product per query, the query vector given), then the
    embedding plus the floor. The three alternate over ``rounds`` so that the machine's noise hits
    each alike; no waiting for idle threads here, this is traffic without pauses."""
    import httpx

    def http_worker(target: str):
        def run(i: int, stop: float, out: list, errors: list) -> None:
            with httpx.Client(base_url=target, trust_env=False, timeout=60.0,
                              headers={"content-type": "application/json", **auth}) as client:
                j = i * 7
                while time.monotonic() < stop:
                    t = time.perf_counter()
                    try:
                        r = client.post("/v1/recall", content=bodies[j % len(bodies)])
                        ok = r.status_code == 200
                    except httpx.HTTPError:
                        ok = False
                    (out if ok else errors).append((time.perf_counter() - t) * 1000)
                    j += 1
        return run

    def floor_worker(embed: bool):
        def run(i: int, stop: float, out: list, errors: list) -> None:
            j = i * 7
            while time.monotonic() < stop:
                t = time.perf_counter()
                q = deps.embedder.embed([qtexts[j % len(qtexts)]], query=True)[0] if embed else qvecs[j % len(qvecs)]
                floor_search(matrix, q, k)
                out.append((time.perf_counter() - t) * 1000)
                j += 1
        return run

    workers = {"http": http_worker(url), "floor": floor_worker(False), "emb+floor": floor_worker(True)}
    if before_url:
        workers[BEFORE] = http_worker(before_url)
    names = list(workers)
    times: dict[str, list[float]] = {m: [] for m in names}
    errors: list[float] = []
    spent = {m: 0.0 for m in names}
    for _ in range(rounds):
        for name in names:
            stop = time.monotonic() + seconds / rounds
            t0 = time.perf_counter()
            threads = [threading.Thread(target=workers[name], args=(i, stop, times[name], errors))
                       for i in range(clients)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            spent[name] += time.perf_counter() - t0
    return {"clients": clients, "times": times, "errors": len(errors),
            "rate": {m: len(times[m]) / spent[m] for m in names}, "load": load_avg()}


OPEN_SENDERS = 32  # threads of the open-loop phase: more than the server's, so a send is never late for want of one


def open_loop(url: str, auth: dict, bodies: list[bytes], deps, qtexts: list[str], qvecs: np.ndarray,
              matrix: np.ndarray, k: int, rate: float, seconds: float, seed: int = 11,
              before_url: str | None = None) -> dict:
    """Sustained load, open loop: recalls arrive at ``rate`` per second (a Poisson process of a fixed
    seed) for ``seconds``, whether or not the earlier ones were answered, as independent agents'
    recalls do. Each latency runs from the request's scheduled send time to its answer, so a
    request that waited for a free sender or a free server thread counts its wait (a closed loop
    hides that wait: a slow answer delays the next send). The same arrivals (the same schedule,
    the same queries) then drive the floor and the embedding plus the floor in this process, the
    embeddings concurrent and the products one at a time, as the server computes them."""
    import httpx

    rng = np.random.default_rng(seed)
    gaps = rng.exponential(1.0 / rate, size=int(rate * seconds * 1.5) + 10)
    offsets = np.cumsum(gaps)
    offsets = offsets[offsets < seconds].tolist()

    def run(send) -> tuple[list[float], int, float, float]:
        lat: list[float] = []
        errors = late = 0
        lock = threading.Lock()
        nxt = iter(range(len(offsets)))
        start = 0.0

        def begin() -> None:  # once every sender holds its connection: the schedule starts now
            nonlocal start
            start = time.perf_counter() + 0.05

        ready = threading.Barrier(OPEN_SENDERS, action=begin)

        def sender() -> None:
            nonlocal errors, late
            with send() as call:
                ready.wait()
                while True:
                    with lock:
                        i = next(nxt, None)
                    if i is None:
                        return
                    due = start + offsets[i]
                    wait = due - time.perf_counter()
                    if wait > 0:
                        time.sleep(wait)
                    elif wait < -0.005:
                        late += 1  # every sender was busy: the request queued in the client, and that counts
                    ok = call(i)
                    done = time.perf_counter()
                    with lock:
                        if ok:
                            lat.append((done - due) * 1000)
                        else:
                            errors += 1

        threads = [threading.Thread(target=sender) for _ in range(OPEN_SENDERS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return lat, errors, late, time.perf_counter() - start

    def http_sender(target: str):
        @contextmanager
        def make():
            with httpx.Client(base_url=target, trust_env=False, timeout=60.0,
                              headers={"content-type": "application/json", **auth}) as client:
                def call(i: int) -> bool:
                    try:
                        return client.post("/v1/recall", content=bodies[i % len(bodies)]).status_code == 200
                    except httpx.HTTPError:
                        return False
                yield call
        return make

    # one product at a time, as the index computes them (under its lock): many threads calling
    # numpy's threaded BLAS at once in this process thrash, and the floor would not be one
    product = threading.Lock()

    def floor_sender(embed: bool):
        @contextmanager
        def make():
            def call(i: int) -> bool:
                j = i % len(qtexts)
                q = deps.embedder.embed([qtexts[j]], query=True)[0] if embed else qvecs[j]
                with product:
                    floor_search(matrix, q, k)
                return True
            yield call
        return make

    out: dict = {"rate": rate, "seconds": seconds, "sent": len(offsets), "times": {}, "errors": {}, "late": {}}
    senders = [("http", http_sender(url)), ("floor", floor_sender(False)), ("emb+floor", floor_sender(True))]
    if before_url:
        senders.insert(1, (BEFORE, http_sender(before_url)))
    for name, send in senders:
        time.sleep(0.5)  # the previous method's threads go idle
        lat, errors, late, spent = run(send)
        out["times"][name], out["errors"][name], out["late"][name] = lat, errors, late
    out["load"] = load_avg()
    return out


def drop_page_cache(paths: list[str]) -> None:
    """The files' pages out of the OS's cache (those not written back yet stay)."""
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def copy_data(data_dir: str, deps) -> str:
    """A copy of the data directory's databases, each checkpointed first, for the --before server:
    on one directory the server that answers a query second finds the rows the first one read in
    the OS's page cache."""
    dest = os.path.join(data_dir, "before-data")
    os.makedirs(dest, exist_ok=True)
    for db in {deps.experiences.db, deps.index.db}:
        db.read().execute("PRAGMA wal_checkpoint(TRUNCATE)")
    for name in ("hindsight.db", "vectors.db"):
        for stale in (name + "-wal", name + "-shm"):
            if os.path.exists(os.path.join(dest, stale)):
                os.remove(os.path.join(dest, stale))
        shutil.copyfile(os.path.join(data_dir, name), os.path.join(dest, name))
    return dest


def index_memory(data_dir: str, tenant_id: str, dim: int) -> tuple[float, float, float] | None:
    """RSS of a fresh process before and after it loads the tenant into a NumpyVectorIndex, and the
    seconds the load took: the index's own memory, apart from the server's model and caches."""
    import json
    import subprocess

    code = (
        "import json, os, sys, time\n"
        "from bench._harness import proc_rss_mb\n"
        "from chalicelib.adapters.embedded.index import NumpyVectorIndex\n"
        "from chalicelib.adapters.embedded.db import SqliteDatabase\n"
        "index = NumpyVectorIndex(SqliteDatabase(sys.argv[1]), int(sys.argv[3]))\n"
        "before = proc_rss_mb(os.getpid()); t = time.perf_counter()\n"
        "index.count(sys.argv[2])\n"
        "print(json.dumps([before, proc_rss_mb(os.getpid()), time.perf_counter() - t]))\n"
    )
    r = subprocess.run([sys.executable, "-c", code, str(Path(data_dir) / "vectors.db"), tenant_id, str(dim)],
                       capture_output=True, text=True, cwd=ROOT, timeout=1800)
    if r.returncode != 0:
        print(f"  (index memory not measured: {r.stderr.strip()[-300:]})")
        return None
    return tuple(json.loads(r.stdout.strip().splitlines()[-1]))


def profile_wsgi(result: dict, count: int = 30) -> None:
    """cProfile of the server's WSGI app in this process (same code path as the server minus waitress)."""
    wsgi, bodies, auth = result["wsgi"], result["bodies"], result["auth"]
    prof = cProfile.Profile()
    prof.enable()
    for j in range(min(count, len(bodies))):
        wsgi("POST", "/v1/recall", auth, bodies[j])
    prof.disable()
    s = io.StringIO()
    pstats.Stats(prof, stream=s).sort_stats("cumulative").print_stats(25)
    print(f"\ncProfile of {min(count, len(bodies))} recalls through the WSGI app in-process at N={result['n']}"
          " (cumulative; cProfile inflates Python-level costs):")
    print("\n".join(line for line in s.getvalue().splitlines() if line.strip())[:6000])


def print_before(results: list[dict], ref: str) -> None:
    """This checkout's HTTP recall beside the --before ref's, in each phase of the same run."""
    print(f"\nThis checkout vs --before {ref}: HTTP recall, same run (sparse: interleaved query by query; load"
          " phases: alternating, the same arrivals); ratio = this / before; load: the 1-minute load average")
    print(f"{'N':>14} | {'phase':>16} | {'this p50':>8} {'p99':>8} | {'before p50':>10} {'p99':>8} |"
          f" {'ratio p50':>9} {'p99':>6} | {'load':>16} | {'same hits':>9}")

    def row(n: str, phase: str, this: list[float], old: list[float], load: str, same: str = "") -> None:
        t50, t99, b50, b99 = pct(this, 50), pct(this, 99), pct(old, 50), pct(old, 99)
        print(f"{n:>14} | {phase:>16} | {fmt(t50)} {fmt(t99)} | {fmt(b50):>10} {fmt(b99)} | {t50 / b50:9.2f}"
              f" {t99 / b99:6.2f} | {load:>16} | {same:>9}")

    for r in results:
        t = r["times"]
        row(label(r), "sparse", t["http"], t[BEFORE], r["sparse_load"], f"{r['same_before']}/{r['compared']}")
        sus = r["sustained"]
        if sus and BEFORE in sus["times"]:
            rate = sus["rate"]
            row(label(r), f"closed {sus['clients']} cl.", sus["times"]["http"], sus["times"][BEFORE], sus["load"])
            print(f"{'':>14} | {'':>16} | req/s {rate['http']:.1f} (this) vs {rate[BEFORE]:.1f} (before)")
        for o in r.get("offered") or ():
            if BEFORE in o["times"]:
                row(label(r), f"open {o['fraction']:.0%} {o['rate']:.0f}/s", o["times"]["http"], o["times"][BEFORE], o["load"])


def token_store(data_dir: str) -> tuple[int, int, int]:
    """(rows, bytes of their blobs) of the kept token vectors, and the bytes of vectors.db with its WAL."""
    import sqlite3
    from contextlib import closing

    with closing(sqlite3.connect(Path(data_dir) / "vectors.db")) as conn:
        rows, size = conn.execute("SELECT COUNT(*), COALESCE(SUM(LENGTH(vecs)), 0) FROM token_vectors").fetchone()
    return rows, size, sum(p.stat().st_size for p in Path(data_dir).glob("vectors.db*"))


def label(r: dict) -> str:
    """A result's row name: its N, and its late-interaction weight when on."""
    return f"{r['n']}" + (f" late {r['late']:g}" if r.get("late") else "")


def fmt(x: float) -> str:
    return f"{x:8.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.recall_latency", description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000", help="comma-separated N of active experiences")
    parser.add_argument("--queries", type=int, default=200, help="measured queries per size")
    parser.add_argument("--warmup", type=int, default=20, help="warm-up queries per size and method")
    parser.add_argument("--bases", type=int, default=300, help="real embeddings perturbed into the N vectors")
    parser.add_argument("--max-seconds", type=float, default=600.0, help="time bound of the measurement per size")
    parser.add_argument("--profile", action="store_true",
                        help="always profile the WSGI path at the largest N (default: only if HTTP p50 > 3x service p50)")
    parser.add_argument("--clients", type=int, default=4,
                        help="concurrent clients of the sustained-load phase (0: sparse traffic only)")
    parser.add_argument("--seconds", type=float, default=20.0, help="length of the sustained-load phase per method")
    parser.add_argument("--loads", default="0.5,0.8",
                        help="open-loop arrival rates as fractions of the capacity the closed loop measured ('': none)")
    parser.add_argument("--load-seconds", type=float, default=20.0, help="length of each open-loop run per method")
    parser.add_argument("--late", default=None,
                        help="late-interaction weights measured one after the other on the same data (0: off; default:"
                             " the service's); any above 0 seeds every lesson's token vectors beside its entry")
    parser.add_argument("--keep", action="store_true", help="keep the temporary data directory")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--before", default="none",
                        help="a git ref whose server runs beside this checkout's on the same data ('none': no second server)")
    parser.add_argument("--before-data", choices=("same", "copy"), default="same",
                        help="the --before server's data: the same directory, or a copy of its databases made before"
                             " each measure (its own pages in the OS's cache: neither server reads a row the other"
                             " has just read)")
    parser.add_argument("--cold", action="store_true",
                        help="sparse phase: the databases' files dropped from the OS's page cache before each timed"
                             " call (rows read from the disk, as after the host reclaimed them)")
    parser.add_argument("--embedder", choices=("minilm", "e5"), default="minilm",
                        help="the server's and the in-process embedder (the lessons' vectors too)")
    args = parser.parse_args()
    sizes = sorted({int(s) for s in args.sizes.split(",") if s.strip()})
    loads = tuple(float(f) for f in args.loads.split(",") if f.strip())
    if any(not 0 < f <= 2 for f in loads):
        parser.error("--loads: fractions of the capacity in (0, 2]")
    if not sizes or sizes[0] < 1 or args.queries < 1:
        parser.error("sizes and queries must be positive")
    from chalicelib.settings import Settings

    default_late = Settings.model_fields["recall_late_weight"].default
    lates = [float(w) for w in (args.late or str(default_late)).split(",") if w.strip()] or [default_late]
    if any(w < 0 for w in lates):
        parser.error("--late: weights >= 0")
    if any(lates) and args.embedder != "minilm":
        if args.late is not None:
            parser.error("--late: only MiniLM gives token vectors")
        lates = [0.0]  # the service's default is off by itself without token vectors

    from chalicelib.container import build_embedded, set_deps
    from chalicelib.services.tenants import create_tenant

    tmp = tempfile.mkdtemp(prefix="hindsight-bench-recall-")
    try:
        settings = Settings(data_dir=tmp, embedder=args.embedder, worker=False, admin_key="hsadmin_bench_inprocess",
                            rate_limit_per_second=0)  # measure the service, not the limit
        t0 = time.perf_counter()
        deps = build_embedded(settings)
        set_deps(deps, settings)
        deps.embedder.embed(["warm up"])
        tenant, key = create_tenant(deps, "bench")
        rng = random.Random(args.seed)
        bases = base_lessons(args.bases, rng)
        base_texts = [f"{b['situation']} {b['lesson']} Tools: {', '.join(b['tools'])}." for b in bases]
        base_tokens = None
        if any(lates):
            base_vecs, base_tokens = deps.embedder.embed_with_tokens(base_texts)
        else:
            base_vecs = deps.embedder.embed(base_texts)
        print(f"setup: model load + {len(bases)} base embeddings: {time.perf_counter() - t0:.1f} s; data dir {tmp};"
              f" load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}", flush=True)
        queries = make_queries(args.queries, random.Random(args.seed + 1))
        before = None
        if args.before != "none":
            before = Path(tmp) / "before-code"
            print(f"--before: {export_ref(args.before, before)}, exported to {before}", flush=True)
        seeder = Seeder(deps, tenant.tenant_id, bases, base_vecs, args.seed + 2, base_tokens)
        results = []
        for n in sizes:
            t0 = time.perf_counter()
            parts = seeder.grow_to(n)
            seeder.check()
            print(f"seeded N={n}: {time.perf_counter() - t0:.1f} s (generate {parts['gen']:.1f}, store "
                  f"{parts['store']:.1f}, index {parts['index']:.1f}); SqliteExperienceStore.put loop rate "
                  f"{seeder.put_rate:.0f}/s", flush=True)
            if base_tokens is not None:
                rows, size, files = token_store(tmp)
                print(f"token vectors kept: {rows} lessons, {size / 1e6:.1f} MB ({size / max(rows, 1) / 1e3:.2f} KB per"
                      f" lesson, {size / max(rows, 1) * 1e5 / 1e9:.2f} GB per 100k); vectors.db with its WAL"
                      f" {files / 1e6:.0f} MB", flush=True)
            memory = index_memory(tmp, tenant.tenant_id, deps.embedder.dim)
            for late in lates:
                t0 = time.perf_counter()
                res = measure_size(n, deps, tenant.tenant_id, key, queries, tmp, args.warmup, args.max_seconds,
                                   args.clients, args.seconds, loads, args.load_seconds, before, late,
                                   args.before_data == "copy", args.cold)
                res["index_memory"] = memory
                # the in-process embedder's cache of token vectors made at recall: 0 when every lesson's were read
                made = len(getattr(deps.embedder, "_tokens", ()))
                print(f"measured N={n} late {late:g}: {time.perf_counter() - t0:.1f} s; texts whose token vectors"
                      f" recall made in this process: {made}; load average"
                      f" {' '.join(f'{x:.1f}' for x in os.getloadavg())}", flush=True)
                results.append(res)

        print("\nSparse traffic: recall latency, ms (top_k=5; same queries, interleaved, each after the processes"
              f" are idle; {results[0]['compared']} queries per size; 1/3 with a tools filter)")
        print("floor: the N x 384 product, top k and their sort, the query vector given (embedding OUTSIDE);"
              " emb+floor: the query's embedding, then the floor (embedding INSIDE)")
        print(f"{'N':>14} | {'HTTP p50':>8} {'p99':>8} | {'svc p50':>8} {'p99':>8} | {'floor p50':>9} {'p99':>8} |"
              f" {'emb+floor p50':>13} {'p99':>8} | {'HTTP/floor p50':>14} | {'HTTP/(emb+floor) p50':>20}")
        for r in results:
            t = r["times"]
            h50, s50, f50, e50 = (pct(t[m], 50) for m in ("http", "service", "floor", "emb+floor"))
            print(f"{label(r):>14} | {fmt(h50)} {fmt(pct(t['http'], 99))} | {fmt(s50)} {fmt(pct(t['service'], 99))} |"
                  f" {fmt(f50):>9} {fmt(pct(t['floor'], 99))} | {fmt(e50):>13} {fmt(pct(t['emb+floor'], 99))} |"
                  f" {h50 / f50:14.2f} | {h50 / e50:20.2f}")

        if any(r["sustained"] for r in results):
            c = next(r["sustained"]["clients"] for r in results if r["sustained"])
            print(f"\nSaturation (closed loop): {c} clients without pauses, {args.seconds:.0f} s per method (alternating"
                  " in 2 rounds); the floor and emb+floor run in this process with as many threads. HTTP req/s is the"
                  " capacity the open-loop rates below are fractions of")
            print(f"{'N':>14} | {'HTTP p50':>8} {'p99':>8} {'req/s':>7} {'errors':>6} | {'floor p50':>9} {'p99':>8}"
                  f" {'q/s':>7} | {'emb+floor p50':>13} {'p99':>8} {'q/s':>7} | {'HTTP/floor p50':>14} |"
                  f" {'HTTP/(emb+floor) p50':>20}")
            for r in results:
                sus = r["sustained"]
                if not sus:
                    continue
                t, rate = sus["times"], sus["rate"]
                h50, f50, e50 = (pct(t[m], 50) for m in SUSTAINED)
                print(f"{label(r):>14} | {fmt(h50)} {fmt(pct(t['http'], 99))} {rate['http']:7.1f} {sus['errors']:>6} |"
                      f" {fmt(f50):>9} {fmt(pct(t['floor'], 99))} {rate['floor']:7.1f} |"
                      f" {fmt(e50):>13} {fmt(pct(t['emb+floor'], 99))} {rate['emb+floor']:7.1f} |"
                      f" {h50 / f50:14.2f} | {h50 / e50:20.2f}")

        if any(r.get("offered") for r in results):
            print(f"\nSustained load (open loop): Poisson arrivals at a fraction of the capacity above, {args.load_seconds:.0f} s"
                  " per method, the same arrivals for each; latency from each request's scheduled send time (a wait for"
                  " a sender or a server thread counts); late: sent over 5 ms after its time")
            print(f"{'N':>14} | {'load':>4} {'rate/s':>6} {'sent':>5} | {'HTTP p50':>8} {'p99':>8} {'errors':>6} {'late':>5} |"
                  f" {'floor p50':>9} {'p99':>8} | {'emb+floor p50':>13} {'p99':>8} | {'HTTP/floor p50':>14} |"
                  f" {'HTTP/(emb+floor) p50':>20}")
            for r in results:
                for o in r.get("offered") or ():
                    t = o["times"]
                    h50, f50, e50 = (pct(t[m], 50) for m in SUSTAINED)
                    print(f"{label(r):>14} | {o['fraction']:4.0%} {o['rate']:6.1f} {o['sent']:>5} | {fmt(h50)}"
                          f" {fmt(pct(t['http'], 99))} {o['errors']['http']:>6} {o['late']['http']:>5} |"
                          f" {fmt(f50):>9} {fmt(pct(t['floor'], 99))} | {fmt(e50):>13} {fmt(pct(t['emb+floor'], 99))} |"
                          f" {h50 / f50:14.2f} | {h50 / e50:20.2f}")

        if before is not None:
            print_before(results, args.before)

        print("\nWhere the time goes, p50 ms (p99 in brackets)")
        print(f"{'N':>14} | {'embed':>15} | {'floor':>15} | {'index.search':>15} | {'svc-no-embed':>15} |"
              f" {'service':>15} | {'wsgi in-proc':>15} | {'HTTP':>15}")
        for r in results:
            t = r["times"]
            cells = [f"{pct(t[m], 50):6.2f} [{pct(t[m], 99):6.2f}]" for m in
                     ("embed", "floor", "search", "svc-noemb", "service", "wsgi", "http")]
            print(f"{label(r):>14} | " + " | ".join(f"{c:>15}" for c in cells))

        print("\nRatios of p50 (same run)")
        print(f"{'N':>14} | {'HTTP/svc':>8} | {'HTTP/wsgi':>9} | {'wsgi/svc':>8} | {'search/floor':>12} |"
              f" {'(svc-noemb)-search ms':>21} | {'embed share of svc':>18}")
        for r in results:
            p = {m: pct(r["times"][m], 50) for m in METHODS}
            print(f"{label(r):>14} | {p['http'] / p['service']:8.2f} | {p['http'] / p['wsgi']:9.2f} |"
                  f" {p['wsgi'] / p['service']:8.2f} | {p['search'] / p['floor']:12.2f} |"
                  f" {p['svc-noemb'] - p['search']:21.2f} | {p['embed'] / p['service']:17.0%}")

        print("\nServer process (RSS before: at start, the tenant's loading may have begun; index alone: a fresh"
              " process before and after it loads the tenant into NumpyVectorIndex)")
        print(f"{'N':>14} | {'cold 1st recall ms':>18} | {'RSS MB before->after':>20} | {'index alone MB':>18} |"
              f" {'load s':>6} | {'server CPU ms/recall':>20} | {'HTTP==service top-5':>19} | {'empty':>5}")
        for r in results:
            rss = r["rss"]
            rss_s = f"{rss[0]:.0f} -> {rss[1]:.0f}" if rss[0] and rss[1] else "n/a"
            cpu = f"{r['server_cpu']:.1f}" if r["server_cpu"] is not None else "n/a"
            mem = r.get("index_memory")
            mem_s = f"{mem[0]:.0f} -> {mem[1]:.0f}" if mem else "n/a"
            load_s = f"{mem[2]:6.1f}" if mem else "   n/a"
            print(f"{label(r):>14} | {r['cold_ms']:18.1f} | {rss_s:>20} | {mem_s:>18} | {load_s} | {cpu:>20} |"
                  f" {r['agree']:>9}/{r['compared']:<9} | {r['empty']:>5}")

        last = results[-1]
        h50, s50 = pct(last["times"]["http"], 50), pct(last["times"]["service"], 50)
        if args.profile or any(pct(r["times"]["http"], 50) > 3 * pct(r["times"]["service"], 50) for r in results):
            profile_wsgi(last)
        else:
            print(f"\n(no profile: HTTP p50 {h50:.2f} ms is within 3x of service p50 {s50:.2f} ms at every N;"
                  " --profile forces one)")
    finally:
        if args.keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
