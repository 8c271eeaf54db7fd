"""Soak: many concurrent clients mixing ingest and recall against the real server, per backend.

Usage: .venv/bin/python -m bench.soak [--backend embedded|aws|both] [--clients 64] [--duration 60]
       [--tenants 8] [--baseline-duration 10] [--recall-share 0.45] [--llm-stub] [--moto atomic-fast|atomic|plain]
CI smoke: .venv/bin/python -m bench.soak --backend embedded --clients 8 --duration 5 --baseline-duration 2

Each backend gets what it needs, started here and always stopped here:
  embedded  ``python server.py`` on a free port, a temporary data dir, the real MiniLM
            embedder, the review worker on (reviews run in the server while the load goes on)
  aws       a moto server subprocess as DynamoDB (``HINDSIGHT_CREATE_TABLES=true``, tables under a
            fresh prefix), the OpenSearch node at ``OPENSEARCH_URL`` (else a private node started
            by devtools/opensearch/start.sh) with an index of our own, deleted at the end, and the
            same server with ``HINDSIGHT_BACKEND=aws`` (MiniLM embedder; the server's worker
            claims the review jobs from the DynamoDB queue, as the stream's Lambda would).
            ``--moto atomic`` serves one request at a time, as tests/contract does: moto does
            not make a conditional write atomic against a concurrent request, which DynamoDB
            does; ``atomic-fast`` (default) also takes moto's transaction rollback backup once per
            table rather than once per item; ``plain`` is ``python -m moto.server`` as the README runs it.
Reviews use the deterministic reviewer unless ``--llm-stub`` (devtools/openai_stub.py).

Every client is a thread with its own keep-alive httpx.Client and one of ``--tenants`` API keys.
Its loop is an agent's life: start a trajectory, append its events in 2-4 batches (tool calls that
fail and the call that fixed them, reasoning, user input, feedback, sometimes negative), finalize
(the server queues a review), with recalls interleaved so that ``--recall-share`` of requests are
``POST /v1/recall``. Each tenant is seeded first (a few reviewed trajectories) so recall finds lessons.

Per backend, in order: seed; a 1-client baseline of the same mix (``--baseline-duration``); the load
(``--clients`` x ``--duration``); reviews done vs pending at the end of the load (``GET /v1/stats``
of every tenant), then a bounded wait for the backlog to drain; every trajectory read back
(``event_count`` == events the server accepted). The server's (and moto's) VmRSS is sampled every
second. Prints numbers; it is not a pass/fail test; the machine is shared: read the ratios.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench._harness import ROOT, HOST, Server, dumps, free_port, pct, proc_cpu_seconds, proc_rss_mb, terminate

OPS = ("start", "append", "finalize", "recall")

# Task families: a call that fails, the step that fixes it, the call that then works. The
# deterministic reviewer turns such contrasts into lessons, so recall has real lessons to find.
FAMILIES = [
    {"agent": "weather-bot", "tools": ["get_weather", "ask_user"], "task_type": "query",
     "goal": "Will it rain in {city} tomorrow?", "query": "Is it going to be sunny in {city} this weekend?",
     "fail": ("get_weather", {"date": "tomorrow"}, "MissingParameter: city is required"),
     "fix": ("ask_user", {"question": "Which city?"}, "{city}"),
     "ok": ("get_weather", {"date": "tomorrow", "city": "{city}"}, "rain")},
    {"agent": "travel-bot", "tools": ["search_flights", "lookup_airport"], "task_type": "query",
     "goal": "Find a flight from {city} to Rome next Friday", "query": "Book a flight from {city} to Madrid",
     "fail": ("search_flights", {"from": "{city}", "to": "Rome"}, "InvalidAirport: expected an IATA code"),
     "fix": ("lookup_airport", {"city": "{city}"}, "CDG"),
     "ok": ("search_flights", {"from": "CDG", "to": "FCO"}, ["AZ1", "AF1404"])},
    {"agent": "support-bot", "tools": ["orders.lookup", "orders.search", "shipping.track"], "task_type": "operation",
     "goal": "Find out why order {n} has not shipped", "query": "Where is the order of customer {n}?",
     "fail": ("orders.lookup", {"id": "ORD-{n}"}, "NotFound: order id must be numeric"),
     "fix": ("orders.search", {"email": "c{n}@example.com"}, {"id": "{n}"}),
     "ok": ("shipping.track", {"order_id": "{n}"}, {"status": "delayed"})},
    {"agent": "analyst-bot", "tools": ["sql.query", "sql.describe"], "task_type": "analysis",
     "goal": "Count signups per country for {city}", "query": "Monthly signups by region in {city}",
     "fail": ("sql.query", {"sql": "SELECT country, count(*) FROM users GROUP BY signup_date"},
              "UndefinedColumn: column signup_date does not exist"),
     "fix": ("sql.describe", {"table": "users"}, ["id", "country", "created_at"]),
     "ok": ("sql.query", {"sql": "SELECT country, count(*) FROM users GROUP BY country"}, [["FR", 12]])},
    {"agent": "billing-bot", "tools": ["payments.refund", "payments.lookup_charge"], "task_type": "operation",
     "goal": "Refund the duplicate charge on invoice {n}", "query": "Customer charged twice on invoice {n}",
     "fail": ("payments.refund", {"invoice": "{n}"}, "MissingParameter: charge_id is required"),
     "fix": ("payments.lookup_charge", {"invoice": "{n}"}, {"charge_id": "ch_{n}"}),
     "ok": ("payments.refund", {"charge_id": "ch_{n}"}, {"refunded": True})},
]
CITIES = ["Lyon", "Paris", "Berlin", "Oslo", "Lisbon", "Porto", "Vienna", "Prague", "Dublin", "Madrid"]
REASONING = ["The first call failed; read the error before retrying with other parameters.",
             "I have what the next call needs now; call it with the value the previous step returned.",
             "The user wants a short answer; summarise the result in one sentence."]


def _fill(value: Any, city: str, n: int) -> Any:
    if isinstance(value, str):
        return value.format(city=city, n=n)
    if isinstance(value, dict):
        return {k: _fill(v, city, n) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, city, n) for v in value]
    return value


def make_task(rng: random.Random, tid: str, user: bool = True) -> dict:
    """One trajectory: its start body, its events in 2-4 batches, its outcome, and a recall body.

    Lessons are scoped to the trajectory's agent and user; a recall carries the task's agent and
    user, so it sees that user's lessons and the ones with no user (``user=False``: the seeds)."""
    fam = rng.choice(FAMILIES)
    city, n = rng.choice(CITIES), rng.randrange(10000, 99999)
    goal = fam["goal"].format(city=city, n=n)
    events: list[dict] = [{"type": "user_input", "content": {"text": goal}},
                          {"type": "llm_reasoning", "content": {"text": rng.choice(REASONING)}}]

    def call(step: tuple, ok: bool) -> dict:
        tool, params, out = step
        content = {"tool": tool, "params": _fill(params, city, n), "status": "ok" if ok else "error",
                   "available_tools": fam["tools"]}
        content["result" if ok else "error"] = _fill(out, city, n)
        return {"type": "tool_call", "content": content}

    shape = rng.random()
    if shape < 0.7:  # the usual: a failure, the fix, success
        events.append(call(fam["fail"], False))
        if rng.random() < 0.2:  # a blind retry: two failures in a row start a local review
            events.append(call(fam["fail"], False))
        events += [{"type": "llm_reasoning", "content": {"text": REASONING[0]}}, call(fam["fix"], True),
                   call(fam["ok"], True)]
        outcome = "success"
    elif shape < 0.85:  # a clean success
        events += [call(fam["fix"], True), call(fam["ok"], True)]
        outcome = "success"
    else:  # a failure the user complains about (negative feedback starts a local review)
        events += [call(fam["fail"], False),
                   {"type": "feedback", "content": {"text": "That did not work, you never asked me.",
                                                    "sentiment": "negative"}}]
        outcome = "failure"
    if rng.random() < 0.5:
        events.append({"type": "feedback", "content": {"text": "Thanks, that helped.", "sentiment": "positive"}})
    for i, e in enumerate(events):
        e["event_id"] = f"{tid}-e{i}"
        e["context"] = {"goal": goal}
    k = min(len(events), rng.randint(2, 4))
    cuts = sorted(rng.sample(range(1, len(events)), k - 1))
    batches = [events[a:b] for a, b in zip([0, *cuts], [*cuts, len(events)])]
    start = {"trajectory_id": tid, "agent_id": fam["agent"], "goal": goal, "task_type": fam["task_type"],
             "tools": fam["tools"], "tags": ["soak"]}
    recall = {"query": fam["query"].format(city=rng.choice(CITIES), n=rng.randrange(10000, 99999)),
              "agent_id": fam["agent"], "tools": fam["tools"], "task_type": fam["task_type"], "top_k": 5}
    if user:
        start["user_id"] = recall["user_id"] = f"user-{rng.randrange(4)}"
    return {"start": start, "batches": batches, "outcome": outcome, "recall": recall}


@dataclass
class Stats:
    lat: dict[str, list[float]] = field(default_factory=lambda: {op: [] for op in OPS})
    events: int = 0
    recall_hits: int = 0
    recalls_empty: int = 0
    errors: Counter = field(default_factory=Counter)  # (op, status or exception name) -> n
    throttled: Counter = field(default_factory=Counter)  # op -> 429s
    samples: list[str] = field(default_factory=list)
    accepted: dict[str, int] = field(default_factory=dict)  # trajectory id -> events accepted
    key_of: dict[str, str] = field(default_factory=dict)  # trajectory id -> the API key that started it
    finalized: dict[str, float] = field(default_factory=dict)  # trajectory id -> time.time() of its finalize's 202

    def merge(self, other: "Stats") -> None:
        for op in OPS:
            self.lat[op] += other.lat[op]
        self.events += other.events
        self.recall_hits += other.recall_hits
        self.recalls_empty += other.recalls_empty
        self.errors.update(other.errors)
        self.throttled.update(other.throttled)
        self.samples += other.samples[: max(0, 8 - len(self.samples))]
        self.accepted.update(other.accepted)
        self.key_of.update(other.key_of)
        self.finalized.update(other.finalized)

    def requests(self) -> int:
        return sum(len(v) for v in self.lat.values())


def run_client(url: str, key: str, tag: str, seconds: float, recall_share: float, seed: str,
               barrier: threading.Barrier | None = None) -> Stats:
    """One agent: tasks one after another, a recall before a step with probability ``recall_share``."""
    import httpx

    rng = random.Random(seed)
    st = Stats()
    pc = time.perf_counter
    headers = {"authorization": f"Bearer {key}", "content-type": "application/json"}
    with httpx.Client(base_url=url, trust_env=False, timeout=60.0, headers=headers) as client:

        def send(op: str, path: str, body: dict, ok: int) -> Any:
            t = pc()
            try:
                r = client.post(path, content=dumps(body))
            except httpx.HTTPError as exc:  # transport errors and timeouts are counted, never fatal
                st.lat[op].append((pc() - t) * 1000)
                st.errors[(op, type(exc).__name__)] += 1
                if len(st.samples) < 8:
                    st.samples.append(f"{op} {path}: {type(exc).__name__}: {exc}"[:300])
                return None
            st.lat[op].append((pc() - t) * 1000)
            if r.status_code == ok:
                return r.json()
            if r.status_code == 429:
                st.throttled[op] += 1
                time.sleep(min(1.0, float(r.headers.get("retry-after", "0.2") or 0.2)))
            else:
                st.errors[(op, str(r.status_code))] += 1
                if len(st.samples) < 8:
                    st.samples.append(f"{op} {path}: {r.status_code} {r.text[:200]}")
            return None

        if barrier is not None:
            barrier.wait(timeout=120)
        deadline = time.monotonic() + seconds
        n = 0
        task, step = None, 0
        while time.monotonic() < deadline:
            if task is None:
                n += 1
                task, step = make_task(rng, f"{tag}-t{n}"), 0
            if rng.random() < recall_share:
                doc = send("recall", "/v1/recall", task["recall"], 200)
                if doc is not None:
                    st.recall_hits += len(doc["hits"])
                    st.recalls_empty += not doc["hits"]
                continue
            tid = task["start"]["trajectory_id"]
            if step == 0:
                if send("start", "/v1/trajectories", task["start"], 201) is None:
                    task = None  # counted; the next task starts afresh
                    continue
                st.accepted[tid] = 0
                st.key_of[tid] = key
            elif step <= len(task["batches"]):
                doc = send("append", f"/v1/trajectories/{tid}/events", {"events": task["batches"][step - 1]}, 202)
                if doc is not None:
                    st.accepted[tid] += doc["accepted"]
                    st.events += doc["accepted"]
            else:
                if send("finalize", f"/v1/trajectories/{tid}/finalize", {"outcome": task["outcome"]}, 202) is not None:
                    st.finalized[tid] = time.time()
                task = None
                continue
            step += 1
    return st


def run_level(url: str, keys: list[str], clients: int, seconds: float, recall_share: float, tag: str) -> tuple[Stats, float]:
    barrier = threading.Barrier(clients + 1)
    results: list[Stats | None] = [None] * clients

    def worker(i: int) -> None:
        results[i] = run_client(url, keys[i % len(keys)], f"{tag}c{i}", seconds, recall_share, seed=f"{tag}-{i}",
                                barrier=barrier)

    threads = [threading.Thread(target=worker, args=(i,), daemon=True, name=f"soak-{tag}-{i}") for i in range(clients)]
    for t in threads:
        t.start()
    barrier.wait(timeout=120)
    t0 = time.perf_counter()
    for t in threads:
        t.join(timeout=seconds + 180)
    wall = time.perf_counter() - t0
    total = Stats()
    for r in results:
        if r is None:
            total.errors[("client", "thread did not finish")] += 1
        else:
            total.merge(r)
    return total, wall


class RssSampler:
    """VmRSS of some pids, every ``period`` seconds, in a daemon thread; marks name moments."""

    def __init__(self, pids: dict[str, int], period: float = 1.0) -> None:
        self.pids, self.period = pids, period
        self.samples: dict[str, list[tuple[float, float]]] = {name: [] for name in pids}
        self.marks: dict[str, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True, name="soak-rss")
        self.t0 = time.monotonic()

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.period)

    def sample(self) -> None:
        now = time.monotonic() - self.t0
        for name, pid in self.pids.items():
            rss = proc_rss_mb(pid, children=True)  # the embedded server with its ingest processes
            if rss is not None:
                self.samples[name].append((now, rss))

    def mark(self, label: str) -> None:
        self.sample()
        self.marks[label] = time.monotonic() - self.t0

    def start(self) -> "RssSampler":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def at(self, name: str, label: str) -> float:
        """The last sample at or before a mark."""
        t = self.marks[label]
        xs = [r for s, r in self.samples[name] if s <= t + 1e-6]
        return xs[-1] if xs else float("nan")

    def between(self, name: str, a: str, b: str) -> list[tuple[float, float]]:
        return [(s, r) for s, r in self.samples[name] if self.marks[a] - 1e-6 <= s <= self.marks[b] + 1e-6]


def slope_per_minute(points: list[tuple[float, float]]) -> float:
    """Least-squares slope of RSS over time, MiB per minute."""
    if len(points) < 3:
        return float("nan")
    n = len(points)
    mx, my = sum(p[0] for p in points) / n, sum(p[1] for p in points) / n
    var = sum((p[0] - mx) ** 2 for p in points)
    return 60.0 * sum((p[0] - mx) * (p[1] - my) for p in points) / var if var else float("nan")


# --- the stacks --------------------------------------------------------------------------------

class Moto:
    """A moto server subprocess on a free port: plain ``moto.server`` or one request at a time."""

    def __init__(self, mode: str, log_path: str) -> None:
        self.port = free_port()
        self.mode = mode
        self.log_path = log_path
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"

    def start(self) -> "Moto":
        import httpx

        cmd = ([sys.executable, "-m", "moto.server", "-H", HOST, "-p", str(self.port)] if self.mode == "plain"
               else [sys.executable, "-m", "bench.soak", "--moto-child", str(self.port),
                     *(["--moto-backup-once"] if self.mode == "atomic-fast" else [])])
        self._log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(cmd, cwd=str(ROOT), stdout=self._log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"moto exited with {self.proc.returncode}: {Path(self.log_path).read_text()[-2000:]}")
            try:
                httpx.get(f"{self.url}/moto-api/", timeout=1.0, trust_env=False)
                return self
            except httpx.HTTPError:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError("moto server did not answer within 60 s")

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        terminate(proc)
        if getattr(self, "_log", None) is not None:
            self._log.close()
            self._log = None


COUNT_PATH = "/_soak/requests"
OPS_PATH = "/_soak/operations"


def moto_requests(moto_url: str | None) -> int | None:
    """Requests the atomic moto child has served so far (None for plain moto or no moto)."""
    import httpx

    if not moto_url:
        return None
    try:
        r = httpx.get(moto_url + COUNT_PATH, timeout=10, trust_env=False)
        return int(r.text) if r.status_code == 200 else None
    except (httpx.HTTPError, ValueError):
        return None


def moto_operations(moto_url: str | None) -> dict[str, list[float]]:
    """DynamoDB operation -> [requests, seconds moto spent on them], from the atomic moto child."""
    import httpx

    if not moto_url:
        return {}
    try:
        r = httpx.get(moto_url + OPS_PATH, timeout=10, trust_env=False)
        return r.json() if r.status_code == 200 else {}
    except (httpx.HTTPError, ValueError):
        return {}


def backup_each_table_once() -> None:
    """moto 5.2's TransactWriteItems deep-copies a table once per item that names it, as a rollback
    backup taken before any write: an append of n events copies the events table (and its stream
    records) about 2n times, so each append costs O(n x table size) and the soak measures moto's
    copying. Taking the same backup once per table per transaction leaves the semantics as they are
    (one request runs at a time here, and every copy is taken before the first write)."""
    import copy
    import types

    from moto.dynamodb import models
    from moto.dynamodb.models.table import Table

    state: dict[str, dict[int, Any] | None] = {"cache": None}

    def deepcopy(obj: Any, memo: Any = None) -> Any:
        cache = state["cache"]
        if cache is None or memo is not None or not isinstance(obj, Table):
            return copy.deepcopy(obj, memo)
        if id(obj) not in cache:
            cache[id(obj)] = copy.deepcopy(obj)
        return cache[id(obj)]

    models.copy = types.SimpleNamespace(**{**vars(copy), "deepcopy": deepcopy})
    original = models.DynamoDBBackend.transact_write_items

    def transact_write_items(self: Any, transact_items: list) -> None:
        state["cache"] = {}
        try:
            return original(self, transact_items)
        finally:
            state["cache"] = None

    models.DynamoDBBackend.transact_write_items = transact_write_items


def moto_child(port: int, backup_once: bool) -> None:
    """``--moto-child PORT``: moto's WSGI app behind one lock (DynamoDB's per-item atomicity, which
    moto's threaded server lacks for conditional writes), as devtools/moto_server.py does."""
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
    from werkzeug.serving import make_server

    if backup_once:
        backup_each_table_once()

    class Quiet(MotoRequestHandler):
        def log_request(self, *args: Any, **kwargs: Any) -> None:
            pass

    app = DomainDispatcherApplication(create_backend_app)
    lock = threading.Lock()
    served = [0]
    per_op: dict[str, list[float]] = {}  # X-Amz-Target -> [count, seconds]

    def atomic(environ: Any, start_response: Any) -> Any:
        path = environ.get("PATH_INFO")
        if path in (COUNT_PATH, OPS_PATH):  # how many requests moto served, and their cost, for the report
            start_response("200 OK", [("Content-Type", "application/json")])
            with lock:
                body = str(served[0]) if path == COUNT_PATH else json.dumps(per_op)
            return [body.encode()]
        op = (environ.get("HTTP_X_AMZ_TARGET") or "?").rsplit(".", 1)[-1]
        with lock:
            t = time.perf_counter()
            served[0] += 1
            out = list(app(environ, start_response))
            acc = per_op.setdefault(op, [0, 0.0])
            acc[0] += 1
            acc[1] += time.perf_counter() - t
            return out

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    make_server(HOST, port, atomic, threaded=True, request_handler=Quiet).serve_forever()


@dataclass
class Stack:
    backend: str
    server: Server
    pids: dict[str, int]
    cleanup: list = field(default_factory=list)
    note: str = ""
    moto_url: str | None = None


@dataclass(frozen=True)
class Reviews:
    """How the server's review worker runs: jobs claimed and embedded together, texts whose vectors
    it keeps between reviews, threads a batch is split over by tenant, and where (``process``: the
    embedded server's review process, ``thread``: a thread of the server, ``default``: as the
    server decides). ``1:0:1`` is the worker as it was: one job at a time, nothing kept, one thread."""

    batch: int
    cache: int
    workers: int
    where: str = "default"

    @classmethod
    def parse(cls, text: str) -> "Reviews":
        fields = text.split(":")
        where = fields.pop() if fields and fields[-1] in ("process", "thread", "default") else "default"
        parts = [int(x) for x in fields]
        batch, cache, workers = (parts + [8, 4096, 4][len(parts):])[:3]
        return cls(batch, cache, workers, where)

    @property
    def label(self) -> str:
        return f"{self.batch}:{self.cache}:{self.workers}" + ("" if self.where == "default" else f":{self.where}")

    def env(self) -> dict[str, str]:
        env = {"HINDSIGHT_REVIEW_BATCH_SIZE": str(self.batch), "HINDSIGHT_REVIEW_VECTOR_CACHE": str(self.cache),
               "HINDSIGHT_REVIEW_WORKERS": str(self.workers)}
        if self.where != "default":
            env["HINDSIGHT_REVIEW_PROCESS"] = "true" if self.where == "process" else "false"
        return env


def start_stack(backend: str, tmp: str, args: argparse.Namespace, stub_url: str | None, reviews: Reviews,
                run_name: str) -> Stack:
    env = {"HINDSIGHT_WORKER": "true", "HINDSIGHT_EMBEDDER": args.embedder, **reviews.env()}
    if stub_url:
        env["HINDSIGHT_OPENAI_BASE_URL"] = stub_url
        env["HINDSIGHT_LLM_MAX_RETRIES"] = "0"
    cleanup: list = []
    pids: dict[str, int] = {}
    note = (f"embedder {args.embedder}, reviewer {'LLM on the local stub' if stub_url else 'deterministic'},"
            f" review batch {reviews.batch}, vector cache {reviews.cache}, review threads {reviews.workers}")
    if backend == "aws":
        moto = Moto(args.moto, os.path.join(tmp, "moto.log")).start()
        cleanup.append(moto.stop)
        pids["moto"] = moto.proc.pid
        os_url = args.opensearch_url or os.environ.get("OPENSEARCH_URL")
        from devtools.opensearch_node import node_url, reachable

        if not (os_url and reachable(os_url)):
            os_url = node_url()  # a private node on a free port, stopped when this process exits
        prefix = f"soak{secrets.token_hex(4)}-"
        index = f"{prefix}experiences"
        env |= {"HINDSIGHT_BACKEND": "aws", "HINDSIGHT_DYNAMODB_ENDPOINT": moto.url, "HINDSIGHT_CREATE_TABLES": "true",
                "HINDSIGHT_TABLE_PREFIX": prefix, "HINDSIGHT_OPENSEARCH_ENDPOINT": os_url,
                "HINDSIGHT_OPENSEARCH_INDEX": index, "HINDSIGHT_OPENSEARCH_SERVICE": "none",
                "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                "AWS_DEFAULT_REGION": "us-east-1", "AWS_ACCOUNT_ID_ENDPOINT_MODE": "disabled"}

        def drop_index() -> None:
            import httpx

            try:
                httpx.delete(f"{os_url.rstrip('/')}/{index}", timeout=30, trust_env=False)
            except httpx.HTTPError as exc:
                print(f"could not delete index {index}: {exc}")

        cleanup.append(drop_index)
        note += f"; moto {args.moto} at {moto.url}; OpenSearch {os_url} index {index}"
    data = os.path.join(tmp, f"data-{run_name}")
    os.makedirs(data, exist_ok=True)
    server = Server(data, env, log_path=os.path.join(tmp, f"server-{run_name}.log"))
    try:
        server.start(timeout=180)
    except Exception:
        for fn in reversed(cleanup):
            fn()
        raise
    cleanup.append(server.stop)
    pids = {"server": server.proc.pid, **pids}
    moto_url = env.get("HINDSIGHT_DYNAMODB_ENDPOINT") if args.moto != "plain" else None
    return Stack(backend, server, pids, cleanup, note, moto_url)


# --- the run of one backend ----------------------------------------------------------------------

def admin_post(url: str, admin: str, path: str, body: dict) -> dict:
    import httpx

    r = httpx.post(f"{url}{path}", content=dumps(body), timeout=60, trust_env=False,
                   headers={"authorization": f"Bearer {admin}", "content-type": "application/json"})
    r.raise_for_status()
    return r.json()


def review_counts(url: str, keys: list[str]) -> Counter:
    """Trajectories by status over every tenant (``GET /v1/stats``)."""
    import httpx

    total: Counter = Counter()
    for key in keys:
        r = httpx.get(f"{url}/v1/stats", headers={"authorization": f"Bearer {key}"}, timeout=60, trust_env=False)
        r.raise_for_status()
        total.update(r.json()["trajectories"])
    return total


def verify_events(url: str, key_of: dict[str, str], accepted: dict[str, int], threads: int = 4,
                  timed: dict[str, float] | None = None) -> dict:
    """Read back every trajectory: the events it holds against the events the server accepted; for
    the ``timed`` ones (id -> when the client had its finalize's answer, ``time.time()``), the
    review latency (the ``updated_at`` its review set, the server being on this machine's clock) or
    that it is still unreviewed."""
    import httpx
    from datetime import datetime

    items = list(accepted.items())
    out = {"checked": 0, "missing_events": 0, "extra_events": 0, "trajectories_short": 0, "unreadable": 0,
           "latency_s": [], "unreviewed": 0}
    lock = threading.Lock()

    def work(chunk: list[tuple[str, int]]) -> None:
        with httpx.Client(base_url=url, timeout=60, trust_env=False) as c:
            for tid, n in chunk:
                r = c.get(f"/v1/trajectories/{tid}", headers={"authorization": f"Bearer {key_of[tid]}"})
                with lock:
                    out["checked"] += 1
                    if r.status_code != 200:
                        out["unreadable"] += 1
                        continue
                    doc = r.json()
                    got = doc["event_count"]
                    if timed and tid in timed:
                        if doc["status"] == "reviewed":
                            out["latency_s"].append(datetime.fromisoformat(doc["updated_at"]).timestamp() - timed[tid])
                        else:
                            out["unreviewed"] += 1
                    out["missing_events"] += max(0, n - got)
                    out["extra_events"] += max(0, got - n)
                    out["trajectories_short"] += got < n

    ts = [threading.Thread(target=work, args=(items[i::threads],)) for i in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return out


def log_problems(path: str) -> Counter:
    """Lines of the server log worth a look: failed requests, failed reviews, tracebacks."""
    out: Counter = Counter()
    try:
        text = Path(path).read_text(errors="replace")
    except OSError:
        return out
    for line in text.splitlines():
        if "request failed" in line:
            out["request failed (500)"] += 1
        elif " review " in line and " failed " in line:
            out["review attempt failed"] += 1
        elif line.startswith("Traceback"):
            out["traceback"] += 1
        elif " ERROR " in line:
            out["ERROR line"] += 1
    return out


def seed(url: str, keys: list[str], per_tenant: int, tag: str) -> tuple[dict[str, int], dict[str, str]]:
    """A few trajectories per tenant (a thread per tenant), each with a failure and its fix, no user
    scope, finalized: lessons every later recall of that agent can find."""
    import httpx

    accepted: dict[str, int] = {}
    key_of: dict[str, str] = {}
    failures: list[BaseException] = []

    def tenant(ti: int, key: str) -> None:
        rng = random.Random(f"seed-{ti}")
        try:
            with httpx.Client(base_url=url, timeout=120, trust_env=False,
                              headers={"authorization": f"Bearer {key}", "content-type": "application/json"}) as c:
                for j in range(per_tenant):
                    tid = f"{tag}{ti}-t{j}"
                    task = make_task(rng, tid, user=False)
                    c.post("/v1/trajectories", content=dumps(task["start"])).raise_for_status()
                    accepted[tid], key_of[tid] = 0, key
                    for b in task["batches"]:
                        r = c.post(f"/v1/trajectories/{tid}/events", content=dumps({"events": b}))
                        r.raise_for_status()
                        accepted[tid] += r.json()["accepted"]
                    c.post(f"/v1/trajectories/{tid}/finalize", content=dumps({"outcome": "success"})).raise_for_status()
        except BaseException as exc:  # noqa: BLE001 -- re-raised below, in the caller's thread
            failures.append(exc)

    threads = [threading.Thread(target=tenant, args=(ti, key)) for ti, key in enumerate(keys)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if failures:
        raise RuntimeError(f"seeding failed: {failures[0]!r}") from failures[0]
    return accepted, key_of


class PendingSampler:
    """Reviews pending (trajectories ``finalized``, over every tenant) every ``period`` seconds while
    the load runs, in a daemon thread."""

    def __init__(self, url: str, keys: list[str], period: float = 2.0) -> None:
        self.url, self.keys, self.period = url, keys, period
        self.samples: list[tuple[float, int]] = []  # (seconds into the load, pending)
        self.t0 = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True, name="soak-pending")

    def _loop(self) -> None:
        while not self._stop.wait(self.period):
            try:
                n = review_counts(self.url, self.keys).get("finalized", 0)
                self.samples.append((time.monotonic() - self.t0, n))
            except Exception:  # noqa: BLE001 -- a missed sample under load; the next one counts
                pass

    def start(self) -> "PendingSampler":
        self._thread.start()
        return self

    def stop(self) -> list[tuple[float, int]]:
        self._stop.set()
        self._thread.join(timeout=70)
        return self.samples


def wait_reviews(url: str, keys: list[str], timeout: float) -> tuple[Counter, float]:
    t0 = time.monotonic()
    while True:
        counts = review_counts(url, keys)
        if counts.get("finalized", 0) == 0 or time.monotonic() - t0 > timeout:
            return counts, time.monotonic() - t0
        time.sleep(0.5)


def run_backend(backend: str, args: argparse.Namespace, tmp: str, stub_url: str | None, reviews: Reviews,
                name: str) -> dict:
    print(f"\n=== {name}: starting the stack", flush=True)
    stack = start_stack(backend, tmp, args, stub_url, reviews, name.replace(" ", "-").replace(":", "_"))
    sampler = RssSampler(stack.pids).start()
    try:
        server = stack.server
        url = server.url
        sampler.mark("start")
        print(f"{backend}: {stack.note}; server pid {server.proc.pid} at {url}", flush=True)
        keys = [admin_post(url, server.admin_key, "/v1/tenants", {"name": f"soak-{i}"})["api_key"]
                for i in range(args.tenants)]
        key_of: dict[str, str] = {}
        t0 = time.perf_counter()
        seeded, seed_keys = seed(url, keys, args.seed_per_tenant, "seed")
        key_of |= seed_keys
        counts, waited = wait_reviews(url, keys, 120)
        print(f"{backend}: seeded {len(seeded)} trajectories in {time.perf_counter() - t0:.1f} s; reviews done after "
              f"{waited:.1f} s: {dict(counts)}", flush=True)

        base = None
        if args.baseline_duration > 0:
            base, base_wall = run_level(url, keys[:1], 1, args.baseline_duration, args.recall_share, "b1")
            key_of |= base.key_of
            print(f"{backend}: baseline 1 client: {base.requests() / base_wall:.1f} req/s", flush=True)
            wait_reviews(url, keys, 60)
        sampler.mark("warm")
        cpu0 = {name: proc_cpu_seconds(pid) for name, pid in stack.pids.items()}
        ccpu0 = time.process_time()
        ddb0, ops0 = moto_requests(stack.moto_url), moto_operations(stack.moto_url)
        before = review_counts(url, keys)
        pending = PendingSampler(url, keys).start()
        load, wall = run_level(url, keys, args.clients, args.duration, args.recall_share, "L")
        pending_samples = pending.stop()
        cpu1 = {name: proc_cpu_seconds(pid) for name, pid in stack.pids.items()}
        client_cpu = (time.process_time() - ccpu0) / wall
        ddb1 = moto_requests(stack.moto_url)
        ddb = ddb1 - ddb0 if ddb0 is not None and ddb1 is not None else None
        ops1 = moto_operations(stack.moto_url)
        ddb_ops = {op: (n - ops0.get(op, [0, 0.0])[0], sec - ops0.get(op, [0, 0.0])[1]) for op, (n, sec) in ops1.items()}
        cpu = {name: (cpu1[name] - cpu0[name]) / wall if cpu0[name] is not None and cpu1[name] is not None else None
               for name in stack.pids}
        sampler.mark("end")
        key_of |= load.key_of
        print(f"{backend}: load {args.clients} clients: {load.requests() / wall:.1f} req/s", flush=True)
        at_end = review_counts(url, keys)
        pending_samples.append((wall, at_end.get("finalized", 0)))
        drained, drain_s = wait_reviews(url, keys, args.drain_timeout)
        sampler.mark("drained")
        alive = server.proc.poll() is None
        all_accepted = {**seeded, **(base.accepted if base else {}), **load.accepted}
        check = verify_events(url, key_of, all_accepted, timed=load.finalized)
        load_avg = os.getloadavg()
        return {"backend": name, "note": stack.note, "base": base, "base_wall": base_wall if base else None,
                "load": load, "wall": wall, "cpu": cpu, "ddb": ddb, "ddb_ops": ddb_ops,
                "client_cpu": client_cpu, "at_end": at_end, "drained": drained, "drain_s": drain_s, "check": check,
                "alive": alive, "log": log_problems(server.log_path), "log_path": server.log_path,
                "before": before, "pending_max": max(n for _, n in pending_samples), "pending": pending_samples, "reviews": reviews,
                "rss": {name: {"start": sampler.at(name, "start"), "warm": sampler.at(name, "warm"),
                               "peak": max((r for _, r in sampler.between(name, "warm", "end")), default=float("nan")),
                               "end": sampler.at(name, "end"), "drained": sampler.at(name, "drained"),
                               "slope": slope_per_minute(sampler.between(name, "warm", "end"))}
                        for name in stack.pids},
                "loadavg_end": load_avg}
    finally:
        sampler.stop()
        for fn in reversed(stack.cleanup):
            try:
                fn()
            except Exception as exc:  # noqa: BLE001 -- cleanup goes on; reported
                print(f"cleanup of {backend}: {exc}")


# --- the report ----------------------------------------------------------------------------------

def rate(st: Stats | None, wall: float | None) -> dict[str, float]:
    if st is None or not wall:
        return {"req": float("nan"), "events": float("nan"), "recalls": float("nan")}
    return {"req": st.requests() / wall, "events": st.events / wall, "recalls": len(st.lat["recall"]) / wall}


def report(results: list[dict], args: argparse.Namespace) -> None:
    W = max(9, *(len(r["backend"]) for r in results))
    print(f"\nSoak: {args.clients} clients x {args.duration:g} s over {args.tenants} tenants, "
          f"~{args.recall_share:.0%} of requests are recalls; baseline: 1 client x {args.baseline_duration:g} s, same mix")
    print(f"{'backend':<{W}} | {'run':<10} | {'req/s':>7} | {'events/s':>8} | {'recalls/s':>9} | {'requests':>8} |"
          f" {'errors':>6} | {'429s':>5} | {'hits/recall':>11}")
    for r in results:
        for name, st, wall in (("1 client", r["base"], r["base_wall"]), (f"{args.clients} clients", r["load"], r["wall"])):
            if st is None:
                continue
            rt = rate(st, wall)
            recalls = len(st.lat["recall"])
            print(f"{r['backend']:<{W}} | {name:<10} | {rt['req']:7.1f} | {rt['events']:8.1f} | {rt['recalls']:9.1f} |"
                  f" {st.requests():>8} | {sum(st.errors.values()):>6} | {sum(st.throttled.values()):>5} |"
                  f" {st.recall_hits / max(recalls, 1):11.2f}")
        b, lo = rate(r["base"], r["base_wall"]), rate(r["load"], r["wall"])
        print(f"{r['backend']:<{W}} | {'ratio':<10} | {lo['req'] / b['req']:7.2f} | {lo['events'] / b['events']:8.2f} |"
              f" {lo['recalls'] / b['recalls']:9.2f} |   ({args.clients} clients / 1 client)")

    print("\nLatency per operation, ms p50 / p95 / p99 (ratio = p50 under load / p50 of 1 client)")
    print(f"{'backend':<{W}} | {'op':<8} | {'1 client':>24} | {f'{args.clients} clients':>24} | {'p50 ratio':>9} | {'count':>6}")
    for r in results:
        for op in OPS:
            xs = r["load"].lat[op]
            bs = r["base"].lat[op] if r["base"] else []

            def cell(v: list[float]) -> str:
                return f"{pct(v, 50):6.1f} / {pct(v, 95):6.1f} / {pct(v, 99):6.1f}" if v else f"{'-':>24}"

            ratio = pct(xs, 50) / pct(bs, 50) if xs and bs else float("nan")
            print(f"{r['backend']:<{W}} | {op:<8} | {cell(bs):>24} | {cell(xs):>24} | {ratio:9.1f} | {len(xs):>6}")

    print("\nErrors (goal: none; 429s are the rate limit, counted apart)")
    for r in results:
        errs = Counter()
        for st in (r["base"], r["load"]):
            if st is not None:
                errs.update(st.errors)
        thr = r["load"].throttled + (r["base"].throttled if r["base"] else Counter())
        print(f"{r['backend']}: errors {dict(errs) or 0}; 429s {dict(thr) or 0}; server log: {dict(r['log']) or 'clean'};"
              f" server {'alive' if r['alive'] else 'DEAD'} at the end")
        for s in (r["load"].samples + (r["base"].samples if r["base"] else []))[:5]:
            print(f"  sample: {s}")

    print("\nEvents: every trajectory read back (event_count against the events the server accepted)")
    for r in results:
        c = r["check"]
        print(f"{r['backend']}: {c['checked']} trajectories, missing events {c['missing_events']},"
              f" extra {c['extra_events']}, short trajectories {c['trajectories_short']}, unreadable {c['unreadable']}")

    print("\nReviews (trajectories by status over every tenant, GET /v1/stats)")
    for r in results:
        def fmt(c: Counter) -> str:
            return ", ".join(f"{k} {c.get(k, 0)}" for k in ("open", "finalized", "reviewed", "review_failed"))

        print(f"{r['backend']}: end of load: {fmt(r['at_end'])} (finalized = review pending)")
        print(f"{'':<{len(r['backend'])}}  after {r['drain_s']:.1f} s of drain: {fmt(r['drained'])}")

    print(f"\nReview throughput during the load (batch:cache:threads = jobs claimed and embedded together : texts"
          f" whose vectors the worker keeps : threads a batch is split over by tenant; 1:0:1 is the single one-job"
          f" worker as it was). Pending = finalized, not yet"
          f" reviewed, sampled every 2 s; latency = from the finalize's answer to the review, for the trajectories"
          f" finalized during the load")
    print(f"{'backend':<{W}} | {'finalized/s':>11} | {'reviewed/s':>10} | {'max pending':>11} | {'pending end':>11} |"
          f" {'drained in':>10} | {'latency p50':>11} | {'p99':>7} | {'unreviewed':>10}")
    for r in results:
        c, lat = r["check"], r["check"]["latency_s"]
        reviewed = r["at_end"].get("reviewed", 0) - r["before"].get("reviewed", 0)
        left = r["drained"].get("finalized", 0)
        drained = f"{r['drain_s']:.1f} s" if left == 0 else f"not ({left})"
        print(f"{r['backend']:<{W}} | {len(r['load'].finalized) / r['wall']:11.2f} | {reviewed / r['wall']:10.2f} |"
              f" {r['pending_max']:>11} | {r['at_end'].get('finalized', 0):>11} | {drained:>10} |"
              f" {pct(lat, 50):9.1f} s | {pct(lat, 99):5.1f} s | {c['unreviewed']:>10}")
    for r in results:
        marks, shown = [], -10.0
        for t, n in r["pending"]:  # the first sample past each 10 s
            if t >= shown + 10:
                marks.append(f"{t:.0f}s:{n}")
                shown = t - t % 10
        marks.append(f"end:{r['pending'][-1][1]}")
        print(f"{r['backend']}: pending during the load (s: n): {' '.join(marks)}")

    print("\nMemory, VmRSS MiB (a process with its child processes: the embedded server's ingest processes;"
          " warm = after seeding and the baseline; growth = least-squares slope over the load)")
    print(f"{'backend':<{W}} | {'process':<7} | {'start':>7} | {'warm':>7} | {'peak':>7} | {'end':>7} | {'drained':>7} |"
          f" {'MiB/min':>7}")
    for r in results:
        for name, m in r["rss"].items():
            print(f"{r['backend']:<{W}} | {name:<7} | {m['start']:7.1f} | {m['warm']:7.1f} | {m['peak']:7.1f} |"
                  f" {m['end']:7.1f} | {m['drained']:7.1f} | {m['slope']:+7.1f}")

    print("\nCPU during the load (cores busy; the clients share the same 2 cores)")
    for r in results:
        procs = ", ".join(f"{name} {v:.2f}" if v is not None else f"{name} ?" for name, v in r["cpu"].items())
        la = " ".join(f"{x:.2f}" for x in r["loadavg_end"])
        print(f"{r['backend']}: {procs}, clients (this process) {r['client_cpu']:.2f}; load average after: {la}")
        if r["ddb"] is not None:
            print(f"{r['backend']}: moto served {r['ddb']} DynamoDB requests during the load ="
                  f" {r['ddb'] / max(r['load'].requests(), 1):.1f} per API request (reviews included),"
                  f" {r['ddb'] / r['wall']:.0f}/s; moto's time by operation (one request at a time):")
            ops = sorted(((op, n, sec) for op, (n, sec) in r["ddb_ops"].items() if n), key=lambda x: -x[2])
            for op, n, sec in ops[:6]:
                print(f"    {op:<20} {n:>6} requests {sec:7.1f} s  mean {1000 * sec / n:7.1f} ms")
    for r in results:
        print(f"{r['backend']}: {r['note']}")


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(prog="python -m bench.soak", description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=["embedded", "aws", "both"], default="both")
    parser.add_argument("--clients", type=int, default=64)
    parser.add_argument("--duration", type=float, default=60.0, help="seconds of the load")
    parser.add_argument("--tenants", type=int, default=8)
    parser.add_argument("--baseline-duration", type=float, default=10.0, help="seconds of the 1-client run (0: skip)")
    parser.add_argument("--recall-share", type=float, default=0.45, help="share of requests that are recalls")
    parser.add_argument("--seed-per-tenant", type=int, default=5, help="reviewed trajectories per tenant before the run")
    parser.add_argument("--drain-timeout", type=float, default=60.0, help="wait at most this long for pending reviews")
    parser.add_argument("--embedder", choices=["minilm", "hash"], default="minilm")
    parser.add_argument("--llm-stub", action="store_true", help="review with the LLM reviewer on devtools/openai_stub.py")
    parser.add_argument("--moto", choices=["atomic-fast", "atomic", "plain"], default="atomic-fast",
                        help="atomic: one request at a time; -fast: and one rollback copy per table per transaction")
    parser.add_argument("--moto-backup-once", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--opensearch-url", default=None, help="default: OPENSEARCH_URL, else a private node")
    parser.add_argument("--reviews", default="1:0:1,8:4096:4", type=lambda v: [Reviews.parse(x) for x in v.split(",")],
                        help="review worker settings, one run of each backend per entry: BATCH:CACHE:THREADS (jobs"
                             " claimed and embedded together : texts whose vectors are kept : threads a batch is split"
                             " over by tenant), then optionally :process or :thread (the embedded server's review"
                             " process, or a thread of the server); 1:0:1 is the worker as it was")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory (logs, SQLite)")
    parser.add_argument("--moto-child", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.moto_child is not None:
        moto_child(args.moto_child, args.moto_backup_once)
        return []
    if args.clients < 1 or args.tenants < 1 or args.duration <= 0 or not 0 <= args.recall_share < 1:
        parser.error("clients >= 1, tenants >= 1, duration > 0, 0 <= recall-share < 1")

    la = os.getloadavg()
    print(f"machine: {os.cpu_count()} cores, load average {la[0]:.2f} {la[1]:.2f} {la[2]:.2f} at start; "
          f"python {sys.version.split()[0]}", flush=True)
    tmp = tempfile.mkdtemp(prefix="hindsight-soak-")
    backends = ["embedded", "aws"] if args.backend == "both" else [args.backend]
    results: list[dict] = []
    stub = None
    try:
        if args.llm_stub:
            from devtools.openai_stub import OpenAIStub

            stub = OpenAIStub().__enter__()
        for backend in backends:
            for reviews in args.reviews:
                name = backend if len(args.reviews) == 1 else f"{backend} {reviews.label}"
                results.append(run_backend(backend, args, tmp, stub.base_url if stub else None, reviews, name))
        report(results, args)
    finally:
        if stub is not None:
            stub.__exit__(None, None, None)
        if args.keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    return results


if __name__ == "__main__":
    main()
