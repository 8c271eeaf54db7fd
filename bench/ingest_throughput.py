"""Ingest throughput: events/s accepted by POST /v1/trajectories/{id}/events with 1, 8 and 32 clients.

Usage: .venv/bin/python -m bench.ingest_throughput [--seconds 10] [--clients 1,8,32] [--batch 20]
       [--before REF [--rounds N]]

Each client is a thread with its own keep-alive http.client connection. It starts its own
trajectories (POST /v1/trajectories) and posts batches of realistic events (tool calls with
params/results, reasoning, user input, state changes, feedback), encoded before the level is timed,
to them, starting a new trajectory every --traj-events events, for a fixed duration per level. The real server process is started on a
temporary data directory (``python server.py``, worker off; the embedder does not matter
for ingest, which never embeds: --embedder hash by default).

Baselines in the same run, single thread, on the same SQLite file, another tenant:
  service    chalicelib.services.ingest.append_events in this process (the same dicts, their
             timestamps as times, no validation): the floor of the HTTP path
  wsgi       the server's own WSGI app (Chalice LocalGateway + pydantic validation + service)
             called in this process: everything but waitress, the socket and the HTTP client
The service baseline runs before and after the HTTP levels, to show drift as the database grows;
it also runs once with --service-threads threads (SQLite's single writer + the GIL, without HTTP).
Appends are group-committed and fsynced before they return, so one thread pays an fsync per call
while concurrent callers share one: the threaded row is the in-process rate the HTTP rows compare
with (column "/svcN"); "/svc1" compares with the mean of the two single-thread rows.
Each row also gives the machine's 1-minute load average when it ended (the machine is shared).
Every HTTP client has its own tenant; after the HTTP levels a read-only check counts trajectories
stored in another client's tenant and events stored in another client's trajectory.

``--before REF``: the server of a git ref too (its app.py, server.py, worker.py and chalicelib/,
exported with ``git archive``), running beside this tree's on the same data directory; every HTTP
level runs on both, alternating (before first in even rounds, after first in odd ones), ``--rounds``
times, and a last line gives each level's after/before ratios, round by round, and their median. The in-process rows are this tree's code: both servers are held to them.

Prints numbers only; it is not a pass/fail test. Compare the ratios: the machine is shared and noisy.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import random
import shutil
import statistics
import tempfile
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from bench._harness import Server, dumps, export_ref, make_inprocess_wsgi, pct, proc_cpu_seconds

TOOLS = ["orders.lookup", "shipping.track", "crm.get_contact", "payments.refund", "sql.query", "email.send",
         "search.query", "tickets.create"]
GOALS = ["Find out why order {n} has not shipped and tell the customer",
         "Refund the duplicate charge on invoice {n}",
         "Summarise last week's support tickets about login failures",
         "Update the billing address of customer {n}",
         "Count signups per country for the monthly report"]
USER_TEXTS = ["Can you check why my order {n} hasn't shipped yet? It's been a week.",
              "I was charged twice for invoice {n}, please fix it.",
              "Also send me a confirmation email when done.",
              "No, I meant the other account, the one ending in {n}."]
REASONING = ["The user wants the shipping status; look up the order first, then the carrier tracking.",
             "The lookup failed with a timeout; retry once with a smaller page before telling the user.",
             "Two charges with the same amount and minute: this is a duplicate, refund the second.",
             "I have the contact record; the address field is outdated, update it and confirm."]


def make_events(rng: random.Random, prefix: str, seq0: int, n: int, goal: str, now_ms: int) -> list[dict]:
    events = []
    for i in range(n):
        seq = seq0 + i
        r = rng.random()
        num = rng.randrange(10000, 99999)
        if r < 0.5:
            tool = rng.choice(TOOLS)
            ok = rng.random() > 0.15
            content = {
                "tool": tool,
                "params": {"id": str(num), "include": ["items", "shipping"], "limit": 20},
                "status": "ok" if ok else "error",
                "result": {"id": str(num), "status": rng.choice(["shipped", "pending", "delayed"]),
                           "items": [{"sku": f"SKU-{num % 977}", "qty": 1 + num % 3, "price": round(num / 1000, 2)}],
                           "updated_at": "2026-11-20T10:15:00Z"} if ok else None,
                "error": None if ok else "upstream timed out after 30 s",
                "available_tools": TOOLS[:5],
            }
            etype = "tool_call"
        elif r < 0.75:
            etype, content = "llm_reasoning", {"text": rng.choice(REASONING)}
        elif r < 0.9:
            etype, content = "user_input", {"text": rng.choice(USER_TEXTS).format(n=num)}
        elif r < 0.97:
            etype, content = "state_change", {"key": "order_status", "value": rng.choice(["open", "delayed", "closed"])}
        else:
            etype, content = "feedback", {"text": "Thanks, that fixed it.", "sentiment": "positive"}
        events.append({
            "event_id": f"{prefix}-e{seq}",
            "type": etype,
            "timestamp": now_ms + seq,
            "node_id": f"n{seq}",
            "parent_id": f"n{seq - 1}" if seq else None,
            "context": {"goal": goal, "subtask": "step %d" % (seq // 5), "last_user_input": USER_TEXTS[0].format(n=num)},
            "content": content,
        })
    return events


def to_event_fields(raw: list[dict]) -> list[dict]:
    """The events as the service takes them: the same dicts, the epoch-ms timestamps as times."""
    return [e | {"timestamp": datetime.fromtimestamp(e["timestamp"] / 1000, tz=timezone.utc)} for e in raw]


@dataclass
class Stats:
    latencies: list[float] = field(default_factory=list)  # ms per events call
    events: int = 0
    calls: int = 0
    errors: int = 0  # non-2xx
    exceptions: int = 0  # transport errors, timeouts
    duplicates: int = 0
    trajectories: int = 0
    traj_latencies: list[float] = field(default_factory=list)
    error_samples: list[str] = field(default_factory=list)

    def merge(self, other: "Stats") -> None:
        self.latencies += other.latencies
        self.traj_latencies += other.traj_latencies
        for name in ("events", "calls", "errors", "exceptions", "duplicates", "trajectories"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.error_samples += other.error_samples[: max(0, 3 - len(self.error_samples))]


def run_client(cid: str, post_traj, post_events, start: threading.Barrier | None, seconds: float, batch: int,
               traj_events: int, max_calls: int, seed: int, batches=None) -> Stats:
    """One client: its own trajectories, batches of events until the deadline (or max_calls).

    ``batches(rng, traj_id, seq, batch, goal, now_ms)`` gives what ``post_events`` sends (default: the
    event dicts of ``make_events``)."""
    batches = batches or make_events
    rng = random.Random(seed)
    st = Stats()
    now_ms = int(time.time() * 1000)
    if start is not None:
        start.wait(timeout=60)
    deadline = time.monotonic() + seconds
    traj_id, seq, t_n, goal = None, 0, 0, ""
    pc = time.perf_counter
    while time.monotonic() < deadline and st.calls < max_calls:
        if traj_id is None or seq >= traj_events:
            t_n += 1
            traj_id, seq = f"{cid}-t{t_n}", 0
            goal = rng.choice(GOALS).format(n=rng.randrange(10000, 99999))
            body = {"agent_id": f"agent-{cid}", "trajectory_id": traj_id, "goal": goal, "task_type": "operation",
                    "tools": TOOLS, "tags": ["bench"], "user_id": "user-1"}
            t = pc()
            try:
                status, detail = post_traj(body)
            except Exception as exc:  # a transport error is counted, not fatal
                status, detail = 0, f"{type(exc).__name__}: {exc}"
            st.traj_latencies.append((pc() - t) * 1000)
            st.trajectories += 1
            if status // 100 != 2:
                st.errors += 1
                st.error_samples.append(f"start trajectory: {status} {detail}"[:300])
                time.sleep(0.05)
                traj_id = None
                continue
        raw = batches(rng, traj_id, seq, batch, goal, now_ms)
        t = pc()
        try:
            status, accepted, dups, detail = post_events(traj_id, raw)
        except Exception as exc:  # a transport error is counted, not fatal
            st.exceptions += 1
            st.error_samples.append(f"{type(exc).__name__}: {exc}"[:200])
            time.sleep(0.05)
            continue
        st.latencies.append((pc() - t) * 1000)
        st.calls += 1
        seq += batch
        if status // 100 == 2:
            st.events += accepted
            st.duplicates += dups
        else:
            st.errors += 1
            if len(st.error_samples) < 3:
                st.error_samples.append(f"events: {status} {detail}"[:300])
    return st


# stands for the trajectory id in a pre-encoded batch: make_events writes its prefix in the event ids only
_TRAJ_MARK = "@traj@"


def encoded_batches(seed: int, batch: int, traj_events: int, now_ms: int, variants: int = 8):
    """A client's event batches encoded once, before it is timed: ``variants`` trajectories' worth of
    ``make_events`` (the same mix as the in-process rows), the trajectory id written in per call by
    one ``bytes.replace``. Generating and encoding 20 events per call cost the client, which shares
    the cores with the server, more CPU than the server's parsing and validation of them."""
    rng = random.Random(seed)
    seqs = range(0, traj_events, batch)
    bodies = []
    for _ in range(variants):
        goal = rng.choice(GOALS).format(n=rng.randrange(10000, 99999))
        bodies.append({seq: dumps({"events": make_events(rng, _TRAJ_MARK, seq, batch, goal, now_ms)}) for seq in seqs})
    mark = _TRAJ_MARK.encode()

    def body(rng: random.Random, traj_id: str, seq: int, batch: int, goal: str, now_ms: int) -> bytes:
        return bodies[rng.randrange(variants)][seq].replace(mark, traj_id.encode())

    return body


def client_batches(clients: int, batch: int, traj_events: int) -> list:
    now_ms = int(time.time() * 1000)
    return [encoded_batches(1000 * clients + i, batch, traj_events, now_ms) for i in range(clients)]


def http_level(url: str, keys: list[str], clients: int, seconds: float, batch: int, traj_events: int, max_calls: int,
               run_tag: str, batches: list | None = None) -> Stats:
    """``clients`` threads, each with one keep-alive ``http.client`` connection (the lightest client of
    the standard library) and its ``batches`` (pre-encoded
    by the caller, before the level is timed; built here when not given)."""
    import http.client
    import json
    from urllib.parse import urlsplit

    where = urlsplit(url)
    start = threading.Barrier(clients + 1)
    results: list[Stats | None] = [None] * clients
    if batches is None:
        batches = client_batches(clients, batch, traj_events)

    def worker(i: int) -> None:
        headers = {"authorization": f"Bearer {keys[i]}", "content-type": "application/json"}
        conn = http.client.HTTPConnection(where.hostname, where.port, timeout=30.0)

        def post(path: str, body: bytes) -> tuple[int, bytes]:
            try:
                conn.request("POST", path, body, headers)
                answer = conn.getresponse()
                return answer.status, answer.read()
            except (OSError, http.client.HTTPException):
                conn.close()  # the next request opens a new connection
                raise

        def post_traj(body):
            status, out = post("/v1/trajectories", dumps(body))
            return status, out.decode(errors="replace")

        def post_events(traj_id, body: bytes):
            status, out = post(f"/v1/trajectories/{traj_id}/events", body)
            if status == 202:
                doc = json.loads(out)
                return status, doc["accepted"], doc["duplicates"], ""
            return status, 0, 0, out.decode(errors="replace")

        try:
            results[i] = run_client(f"{run_tag}c{i}", post_traj, post_events, start, seconds, batch, traj_events,
                                    max_calls, seed=1000 * clients + i, batches=batches[i])
        finally:
            conn.close()

    threads = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(clients)]
    for t in threads:
        t.start()
    start.wait(timeout=60)
    for t in threads:
        t.join(timeout=seconds + 90)
    total = Stats()
    for r in results:
        if r is None:
            total.exceptions += 1
            total.error_samples.append("a client thread did not finish")
        else:
            total.merge(r)
    return total


def service_level(deps, tenant_id: str, seconds: float, batch: int, traj_events: int, max_calls: int,
                  run_tag: str, threads: int = 1) -> Stats:
    from chalicelib.services import ingest

    def post_traj(body):
        ingest.start_trajectory(deps, tenant_id, body["agent_id"], body["goal"], trajectory_id=body["trajectory_id"],
                                user_id=body["user_id"], task_type=body["task_type"], tools=body["tools"], tags=body["tags"])
        return 201, ""

    def post_events(traj_id, raw):
        res = ingest.append_events(deps, tenant_id, traj_id, to_event_fields(raw))
        return 202, res.accepted, res.duplicates, ""

    if threads == 1:
        return run_client(run_tag, post_traj, post_events, None, seconds, batch, traj_events, max_calls, seed=7)
    start = threading.Barrier(threads + 1)
    results: list[Stats | None] = [None] * threads

    def worker(i: int) -> None:
        results[i] = run_client(f"{run_tag}c{i}", post_traj, post_events, start, seconds, batch, traj_events,
                                max_calls, seed=7 + i)

    pool = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(threads)]
    for t in pool:
        t.start()
    start.wait(timeout=60)
    for t in pool:
        t.join(timeout=seconds + 90)
    total = Stats()
    for r in results:
        if r is None:
            total.exceptions += 1
        else:
            total.merge(r)
    return total


def integrity(deps, tenant_of_client: dict[str, str]) -> dict[str, dict[str, int]]:
    """Read-only check of what the HTTP levels stored, per level: every event in its own trajectory,
    every trajectory in the tenant of the client that created it (client tag = id prefix "h<level>c<i>")."""
    conn = deps.trajectories.db.read()
    out: dict[str, dict[str, int]] = {}

    def level(tag: str) -> dict[str, int]:
        return out.setdefault(tag.split("c", 1)[0], {"trajectories": 0, "wrong_tenant": 0, "events": 0,
                                                     "wrong_trajectory": 0})

    for row in conn.execute("SELECT tenant_id, trajectory_id FROM trajectories"):
        tag = row["trajectory_id"].rsplit("-t", 1)[0]
        if tag in tenant_of_client:
            lv = level(tag)
            lv["trajectories"] += 1
            lv["wrong_tenant"] += row["tenant_id"] != tenant_of_client[tag]
    for row in conn.execute("SELECT tenant_id, trajectory_id, event_id FROM events"):
        tag = row["event_id"].rsplit("-t", 1)[0]
        if tag in tenant_of_client:
            lv = level(tag)
            lv["events"] += 1
            lv["wrong_trajectory"] += not (row["event_id"].startswith(row["trajectory_id"] + "-e")
                                           and row["tenant_id"] == tenant_of_client[tag])
    return out


def wsgi_level(deps, settings, key: str, seconds: float, batch: int, traj_events: int, max_calls: int,
               run_tag: str) -> Stats:
    import json

    call = make_inprocess_wsgi(deps, settings)
    auth = {"authorization": f"Bearer {key}"}

    def post_traj(body):
        status, out = call("POST", "/v1/trajectories", auth, dumps(body))
        return status, out.decode(errors="replace")

    def post_events(traj_id, raw):
        status, out = call("POST", f"/v1/trajectories/{traj_id}/events", auth, dumps({"events": raw}))
        if status == 202:
            doc = json.loads(out)
            return status, doc["accepted"], doc["duplicates"], ""
        return status, 0, 0, out.decode(errors="replace")

    return run_client(run_tag, post_traj, post_events, None, seconds, batch, traj_events, max_calls, seed=11)


def timed(fn, server_pid: int | None):
    w0, c0 = time.perf_counter(), time.process_time()
    s0 = proc_cpu_seconds(server_pid) if server_pid else None
    st = fn()
    wall = time.perf_counter() - w0
    client_cpu = (time.process_time() - c0) / wall
    s1 = proc_cpu_seconds(server_pid) if server_pid else None
    server_cpu = (s1 - s0) / wall if s0 is not None and s1 is not None else None
    return st, wall, client_cpu, server_cpu


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.ingest_throughput", description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="duration of each level")
    parser.add_argument("--clients", default="1,8,32", help="comma-separated concurrency levels")
    parser.add_argument("--batch", type=int, default=20, help="events per call (the API allows at most 100)")
    parser.add_argument("--traj-events", type=int, default=100, help="events per trajectory before starting another")
    parser.add_argument("--max-calls", type=int, default=1_000_000, help="bound on calls per client and level")
    parser.add_argument("--service-threads", type=int, default=8,
                        help="also run the in-process service baseline with this many threads (1: skip)")
    parser.add_argument("--embedder", choices=["hash", "minilm"], default="hash", help="the server's embedder")
    parser.add_argument("--server-env", action="append", default=[], metavar="NAME=VALUE",
                        help="an environment variable of the server process (e.g. HINDSIGHT_THREADS=8); repeatable")
    parser.add_argument("--keep", action="store_true", help="keep the temporary data directory")
    parser.add_argument("--before", default=None, metavar="REF",
                        help="also run the server of this git ref, its HTTP levels alternating with this tree's")
    parser.add_argument("--rounds", type=int, default=1, help="with --before: times each HTTP level runs on each side")
    args = parser.parse_args()
    levels = [int(c) for c in args.clients.split(",") if c.strip()]
    server_env = {"HINDSIGHT_EMBEDDER": args.embedder}
    for item in args.server_env:
        name, sep, value = item.partition("=")
        if not sep or not name:
            parser.error(f"--server-env takes NAME=VALUE, got {item!r}")
        server_env[name] = value
    if not levels or min(levels) < 1 or not 1 <= args.batch <= 100 or args.seconds <= 0:
        parser.error("clients >= 1, 1 <= batch <= 100, seconds > 0")

    from chalicelib.container import build_embedded, set_deps
    from chalicelib.services.tenants import create_tenant
    from chalicelib.settings import Settings

    tmp = tempfile.mkdtemp(prefix="hindsight-bench-ingest-")
    rows: list[tuple[str, Stats, float, float, float | None, float]] = []
    try:
        settings = Settings(data_dir=tmp, embedder="hash", worker=False, admin_key="hsadmin_bench_inprocess",
                            rate_limit_per_second=0)  # measure the service, not the limit
        deps = build_embedded(settings)
        set_deps(deps, settings)
        inproc_tenant, _ = create_tenant(deps, "bench-inprocess")
        wsgi_tenant, wsgi_key = create_tenant(deps, "bench-wsgi")
        del wsgi_tenant
        # every HTTP client is its own tenant (its own API key), as separate agents' deployments would be
        http_tenants = [create_tenant(deps, f"bench-http-{i}") for i in range(max(levels))]
        http_keys = [key for _, key in http_tenants]
        # the tag that starts the ids a client writes: h<level>[<side><round>]c<i>
        run_tags = [""] + ([f"{side}{r}" for side in "ba" for r in range(args.rounds)] if args.before else [])
        tenant_of_client = {f"h{c}{t}c{i}": http_tenants[i][0].tenant_id for c in levels for t in run_tags for i in range(c)}
        kw = dict(seconds=args.seconds, batch=args.batch, traj_events=args.traj_events, max_calls=args.max_calls)

        print(f"data dir {tmp}; {args.seconds:g} s per level, {args.batch} events per call", flush=True)
        st, wall, ccpu, _ = timed(lambda: service_level(deps, inproc_tenant.tenant_id, run_tag="svc1", **kw), None)
        rows.append(("service, 1 thread (before)", st, wall, ccpu, None, os.getloadavg()[0]))
        print(f"  {rows[-1][0]}: {st.events / wall:.0f} events/s", flush=True)
        if args.service_threads > 1:
            n = args.service_threads
            st, wall, ccpu, _ = timed(
                lambda: service_level(deps, inproc_tenant.tenant_id, run_tag="svcN", threads=n, **kw), None)
            rows.append((f"service, {n} threads", st, wall, ccpu, None, os.getloadavg()[0]))
            print(f"  {rows[-1][0]}: {st.events / wall:.0f} events/s", flush=True)
        st, wall, ccpu, _ = timed(lambda: wsgi_level(deps, settings, wsgi_key, run_tag="wsgi", **kw), None)
        rows.append(("wsgi in-process, 1 thread", st, wall, ccpu, None, os.getloadavg()[0]))
        print(f"  {rows[-1][0]}: {st.events / wall:.0f} events/s", flush=True)

        if args.server_env:
            print(f"server environment: {' '.join(args.server_env)}", flush=True)
        sides: dict[str, Path | None] = {"": None}
        if args.before:
            before_root = Path(tmp) / "before-code"
            label = export_ref(args.before, before_root)
            print(f"before = {label}, after = this tree; {args.rounds} round(s) of each level on each side", flush=True)
            sides = {" (before)": before_root, " (after)": None}
        ratios: dict[int, list[float]] = {c: [] for c in levels}
        with contextlib.ExitStack() as stack:
            servers = {tag: stack.enter_context(Server(tmp, server_env, log_path=os.path.join(tmp, f"server{i}.log"), root=root))
                       for i, (tag, root) in enumerate(sides.items())}
            for r in range(args.rounds if args.before else 1):
                for c in levels:
                    bodies = client_batches(c, args.batch, args.traj_events)
                    rate: dict[str, float] = {}
                    # the sides take turns going first: neither always meets the larger database or the warmer server
                    for tag, server in (list(servers.items())[::-1] if r % 2 else list(servers.items())):
                        tag_run = f"h{c}" + (f"{tag.strip(' ()')[0]}{r}" if args.before else "")
                        st, wall, ccpu, scpu = timed(
                            lambda: http_level(server.url, http_keys, c, run_tag=tag_run, batches=bodies, **kw), server.proc.pid)
                        rows.append((f"HTTP, {c} client{'s' if c > 1 else ''}{tag}", st, wall, ccpu, scpu, os.getloadavg()[0]))
                        rate[tag] = st.events / wall
                        print(f"  {rows[-1][0]}: {st.events / wall:.0f} events/s", flush=True)
                        time.sleep(1)  # let the server drain between levels
                    if args.before:
                        ratios[c].append(rate[" (after)"] / rate[" (before)"])
            for server in servers.values():
                if server.proc.poll() is not None:
                    raise RuntimeError(f"server died:\n{server.log_tail()}")

        check = integrity(deps, tenant_of_client)
        st, wall, ccpu, _ = timed(lambda: service_level(deps, inproc_tenant.tenant_id, run_tag="svc2", **kw), None)
        rows.append(("service, 1 thread (after)", st, wall, ccpu, None, os.getloadavg()[0]))
        print(f"  {rows[-1][0]}: {st.events / wall:.0f} events/s", flush=True)

        base = (rows[0][1].events / rows[0][2] + rows[-1][1].events / rows[-1][2]) / 2
        threaded = [r for r in rows if r[0].startswith("service, ") and "threads" in r[0]]
        base_n = threaded[0][1].events / threaded[0][2] if threaded else base
        print(f"\nIngest throughput ({args.batch} events per call, {args.seconds:g} s per row; /svc1 = events/s over"
              f" the mean of the two single-thread service rows, /svcN = over the threaded service row)")
        print(f"{'run':<28} | {'events/s':>9} | {'calls/s':>8} | {'p50 ms':>7} | {'p99 ms':>7} | {'errors':>6} |"
              f" {'/svc1':>6} | {'/svcN':>6} | {'client CPU':>10} | {'server CPU':>10} | {'ms/req':>6} | {'load':>5}")
        for name, st, wall, ccpu, scpu, load in rows:
            errs = st.errors + st.exceptions
            scpu_s = f"{scpu:.2f} cores" if scpu is not None else "-"
            # server CPU per request (appends and starts): what the server spends whatever the machine's load
            per_req = f"{scpu * wall * 1000 / max(1, st.calls + st.trajectories):6.2f}" if scpu is not None else "-"
            print(f"{name:<28} | {st.events / wall:9.0f} | {st.calls / wall:8.1f} | {pct(st.latencies, 50):7.2f} |"
                  f" {pct(st.latencies, 99):7.2f} | {errs:>6} | {st.events / wall / base:6.2f} |"
                  f" {st.events / wall / base_n:6.2f} | {ccpu:6.2f} cores | {scpu_s:>10} | {per_req:>6} | {load:5.1f}")
        print("\n(errors = non-2xx answers + transport errors; client CPU = this process, which also runs the"
              " in-process baselines; server CPU = the server process, HTTP rows only; ms/req = server CPU per"
              " request, starts included; load = the machine's 1-minute load average when the row ended, on"
              f" {os.cpu_count()} CPUs)")
        traj = Stats()
        for _, st, *_ in rows:
            traj.merge(st)
        print(f"trajectories started: {traj.trajectories} (p50 {pct(traj.traj_latencies, 50):.2f} ms); "
              f"duplicates reported: {traj.duplicates}")
        print("\nIntegrity of what the HTTP levels stored (read back from SQLite; each client has its own tenant)")
        print(f"{'ids h<clients>[b|a<round>]':<28} | {'trajectories':>12} | {'in a wrong tenant':>17} | {'events':>8} |"
              f" {'in a wrong trajectory/tenant':>28}")
        for tag in sorted(check, key=lambda t: (len(t), t)):
            lv = check[tag]
            print(f"{tag:<28} | {lv['trajectories']:>12} |"
                  f" {lv['wrong_tenant']:>17} | {lv['events']:>8} | {lv['wrong_trajectory']:>28}")
        if args.before:
            print("\nafter / before, events/s of the same level in the same round: " + "; ".join(
                f"{c} client{'s' if c > 1 else ''}: median {statistics.median(ratios[c]):.2f} ({', '.join(f'{x:.2f}' for x in ratios[c])})"
                for c in levels))
        for name, st, *_ in rows:
            if st.error_samples:
                print(f"error samples ({name}): {st.error_samples[:3]}")
    finally:
        if args.keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
