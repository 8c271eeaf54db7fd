"""OTLP ingest throughput: tool spans/s through ``POST /v1/otlp/v1/traces`` against tool-call events/s
through ``POST /v1/trajectories/{id}/events``, in the same run, on the same server.

Usage: .venv/bin/python -m bench.otlp_throughput [--seconds 6] [--clients 1,8] [--batch 20]
       [--traj-events 200] [--rounds 3] [--encoding protobuf|json]

The real embedded server (``python -m local.server``, review worker off, hash embedder) on a
temporary data directory. Each client is a thread with its own keep-alive ``http.client``
connection and its own tenant. Both routes carry the same tool calls (tool name, arguments and a
result or an error, as ``bench.ingest_throughput`` makes them), ``--batch`` per request, a new
task every ``--traj-events``:

  events   the task started with ``POST /v1/trajectories``, then its events posted in batches;
  otlp     ``execute_tool`` spans of one trace per task, an ``ExportTraceServiceRequest`` per batch
           (protobuf, as the OpenTelemetry SDKs' exporters send it by default; ``--encoding json``
           for OTLP/JSON), the task started by its first batch; the root span never comes, as
           in a long agent run (each trace queues its idle timeout once).

Bodies are encoded before a level is timed. The two routes alternate within every round (which one
goes first alternates too), and the last lines give otlp / events per level and round, and their
median: the target is at least 0.8. Prints numbers only; not a pass/fail test. The machine is
shared: compare the ratios of a run, not figures across runs.
"""
from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import statistics
import tempfile
import threading
import time
from urllib.parse import urlsplit

from bench._harness import Server, dumps, load_avg
from bench.ingest_throughput import GOALS, TOOLS


def tool_calls(rng: random.Random, n: int) -> list[dict]:
    """``n`` tool calls, the ones ``bench.ingest_throughput`` sends (15% failing)."""
    out = []
    for _ in range(n):
        num = rng.randrange(10000, 99999)
        ok = rng.random() > 0.15
        out.append({"tool": rng.choice(TOOLS), "params": {"id": str(num), "include": ["items", "shipping"], "limit": 20},
                    "status": "ok" if ok else "error",
                    "result": {"id": str(num), "status": rng.choice(["shipped", "pending", "delayed"]),
                               "items": [{"sku": f"SKU-{num % 977}", "qty": 1 + num % 3, "price": round(num / 1000, 2)}],
                               "updated_at": "2026-11-20T10:15:00Z"} if ok else None,
                    "error": None if ok else "upstream timed out after 30 s"})
    return out


def events_body(calls: list[dict], seq0: int, now_ms: int) -> bytes:
    return dumps({"events": [{"event_id": f"e{seq0 + i}", "type": "tool_call", "timestamp": now_ms + seq0 + i,
                              "content": {k: v for k, v in c.items() if v is not None}} for i, c in enumerate(calls)]})


def otlp_request(trace_id: bytes, root: bytes, calls: list[dict], seq0: int, now_ns: int, agent: str, goal: str):
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    req = ExportTraceServiceRequest()
    rs = req.resource_spans.add()
    for key, value in (("service.name", agent), ("hindsight.goal", goal)):
        a = rs.resource.attributes.add()
        a.key, a.value.string_value = key, value
    ss = rs.scope_spans.add()
    ss.scope.name = "bench"
    for i, c in enumerate(calls):
        s = ss.spans.add()
        s.trace_id, s.span_id, s.parent_span_id = trace_id, (seq0 + i + 1).to_bytes(8, "big"), root
        s.name, s.kind = f"execute_tool {c['tool']}", 1
        s.start_time_unix_nano, s.end_time_unix_nano = now_ns + (seq0 + i) * 1000, now_ns + (seq0 + i) * 1000 + 500
        attrs = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": c["tool"],
                 "gen_ai.tool.call.arguments": json.dumps(c["params"])}
        if c["status"] == "ok":
            attrs["gen_ai.tool.call.result"] = json.dumps(c["result"])
        else:
            attrs["error.type"] = "TimeoutError"
            s.status.code, s.status.message = 2, c["error"]
        for key, value in attrs.items():
            a = s.attributes.add()
            a.key, a.value.string_value = key, value
    return req


_TRACE_MARK = b"\xee" * 16  # replaced per task by its trace id (protobuf: raw bytes)
_HEX_MARK = b"ee" * 16  # the same in OTLP/JSON (hex)


def client_bodies(seed: int, batch: int, traj_events: int, encoding: str, variants: int = 4) -> dict:
    """A client's bodies, encoded before it is timed: ``variants`` tasks' worth of batches for each
    route, the ids written in per call by one ``bytes.replace``."""
    from google.protobuf import json_format

    from chalicelib.api.otlp import _hex_ids_to_base64  # noqa: F401 - the JSON form is the server's to undo

    rng = random.Random(seed)
    now_ms = int(time.time() * 1000)
    events, otlp = [], []
    for _ in range(variants):
        goal = rng.choice(GOALS).format(n=rng.randrange(10000, 99999))
        per_task_events, per_task_otlp = [], []
        for seq in range(0, traj_events, batch):
            calls = tool_calls(rng, batch)
            per_task_events.append(events_body(calls, seq, now_ms))
            req = otlp_request(_TRACE_MARK, b"\x00" * 7 + b"\x01", calls, seq, now_ms * 1_000_000, "bench-agent", goal)
            if encoding == "protobuf":
                per_task_otlp.append(req.SerializeToString())
            else:
                doc = json_format.MessageToDict(req)
                for rs in doc["resourceSpans"]:
                    for ss in rs["scopeSpans"]:
                        for s in ss["spans"]:
                            for key in ("traceId", "spanId", "parentSpanId"):
                                import base64

                                s[key] = base64.b64decode(s[key]).hex()
                per_task_otlp.append(dumps(doc))
        events.append((goal, per_task_events))
        otlp.append(per_task_otlp)
    return {"events": events, "otlp": otlp}


def tree_cpu_seconds(pid: int) -> float | None:
    """utime + stime of ``pid`` and every live descendant (its ingest and review children), found by
    their parent ids in /proc (Linux); None if unavailable."""
    stats: dict[int, tuple[int, float]] = {}
    tick = os.sysconf("SC_CLK_TCK")
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = open(f"/proc/{entry}/stat").read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            stats[int(entry)] = (int(fields[1]), (int(fields[11]) + int(fields[12])) / tick)
    if pid not in stats:
        return None
    total, todo = 0.0, [pid]
    while todo:
        p = todo.pop()
        total += stats[p][1]
        todo.extend(c for c, (ppid, _) in stats.items() if ppid == p)
    return total


def level(url: str, keys: list[str], bodies: list[dict], route: str, seconds: float, encoding: str, tag: str,
          server_pid: int | None = None) -> dict:
    where = urlsplit(url)
    clients = len(keys)
    barrier = threading.Barrier(clients + 1)
    counts = [0] * clients
    calls = [0] * clients
    errors: list[str] = []
    stop = threading.Event()

    def worker(i: int) -> None:
        rng = random.Random(i)
        conn = http.client.HTTPConnection(where.hostname, where.port, timeout=60.0)
        auth = {"authorization": f"Bearer {keys[i]}"}
        ctype = "application/x-protobuf" if encoding == "protobuf" else "application/json"
        task = 0
        barrier.wait()
        while not stop.is_set():
            task += 1
            v = rng.randrange(len(bodies[i]["otlp"]))
            if route == "events":
                goal, batches = bodies[i]["events"][v]
                tid = f"{tag}-c{i}-t{task}"
                conn.request("POST", "/v1/trajectories", dumps({"trajectory_id": tid, "agent_id": "bench-agent", "goal": goal}),
                             auth | {"content-type": "application/json"})
                r = conn.getresponse()
                r.read()
                if r.status != 201:
                    errors.append(f"start {r.status}")
                    continue
                for body in batches:
                    if stop.is_set():
                        break
                    conn.request("POST", f"/v1/trajectories/{tid}/events", body, auth | {"content-type": "application/json"})
                    r = conn.getresponse()
                    out = r.read()
                    calls[i] += 1
                    if r.status == 202:
                        counts[i] += json.loads(out)["accepted"]
                    else:
                        errors.append(f"events {r.status} {out[:200]!r}")
            else:
                trace = os.urandom(16)
                mark, new = (_TRACE_MARK, trace) if encoding == "protobuf" else (_HEX_MARK, trace.hex().encode())
                for body in bodies[i]["otlp"][v]:
                    if stop.is_set():
                        break
                    conn.request("POST", "/v1/otlp/v1/traces", body.replace(mark, new), auth | {"content-type": ctype})
                    r = conn.getresponse()
                    out = r.read()
                    calls[i] += 1
                    if r.status == 200 and b"rejected" not in out.lower():
                        counts[i] += body.count(b"execute_tool ")
                    else:
                        errors.append(f"otlp {r.status} {out[:200]!r}")
        conn.close()

    threads = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(clients)]
    for t in threads:
        t.start()
    barrier.wait()
    t0, cpu0 = time.perf_counter(), tree_cpu_seconds(server_pid) if server_pid else None
    time.sleep(seconds)
    stop.set()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - t0
    cpu1 = tree_cpu_seconds(server_pid) if server_pid else None
    # the server's CPU (its own and its ingest children's) per thousand tool calls stored: what the
    # machine's other load changes least
    cpu_per_k = (cpu1 - cpu0) / sum(counts) * 1e6 if cpu0 is not None and cpu1 is not None and sum(counts) else float("nan")
    return {"per_s": sum(counts) / elapsed, "calls": sum(calls), "errors": errors, "cpu_per_k": cpu_per_k}


def main() -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.otlp_throughput", description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, default=6.0)
    ap.add_argument("--clients", default="1,8")
    ap.add_argument("--batch", type=int, default=20)
    ap.add_argument("--traj-events", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--encoding", choices=("protobuf", "json"), default="protobuf")
    args = ap.parse_args()
    levels = [int(c) for c in args.clients.split(",")]
    ratios: dict[int, list[float]] = {c: [] for c in levels}
    cpu: dict[int, list[float]] = {c: [] for c in levels}  # events' server CPU per call / otlp's
    with tempfile.TemporaryDirectory(prefix="hindsight-otlp-bench-") as tmp, \
            Server(tmp, {"HINDSIGHT_EMBEDDER": "hash"}) as server:  # started by the with, stopped after
        admin = {"authorization": f"Bearer {server.extra_env['HINDSIGHT_ADMIN_KEY']}", "content-type": "application/json"}
        where = urlsplit(server.url)
        conn = http.client.HTTPConnection(where.hostname, where.port, timeout=30)
        keys = []
        for i in range(max(levels)):
            conn.request("POST", "/v1/tenants", dumps({"name": f"bench-{i}"}), admin)
            keys.append(json.loads(conn.getresponse().read())["api_key"])
        bodies = [client_bodies(i, args.batch, args.traj_events, args.encoding) for i in range(max(levels))]
        # warm-up, untimed: a route's first request in a process imports its modules (protobuf and
        # the OTLP mapping, the events route's schemas); each key's requests go to one ingest child,
        # so every key sends a few of each route, then every client together for a while
        ctype = "application/x-protobuf" if args.encoding == "protobuf" else "application/json"
        for i, key in enumerate(keys):
            auth = {"authorization": f"Bearer {key}"}
            for k in range(3):
                conn.request("POST", "/v1/otlp/v1/traces", bodies[i]["otlp"][0][k].replace(_TRACE_MARK if args.encoding == "protobuf"
                             else _HEX_MARK, os.urandom(16) if args.encoding == "protobuf" else os.urandom(16).hex().encode()),
                             auth | {"content-type": ctype})
                conn.getresponse().read()
                tid = f"warm-{i}-{k}"
                conn.request("POST", "/v1/trajectories", dumps({"trajectory_id": tid, "agent_id": "a", "goal": "warm-up"}),
                             auth | {"content-type": "application/json"})
                conn.getresponse().read()
                conn.request("POST", f"/v1/trajectories/{tid}/events", bodies[i]["events"][0][1][k], auth | {"content-type": "application/json"})
                conn.getresponse().read()
        for route in ("events", "otlp"):
            level(server.url, keys, bodies, route, 2.0, args.encoding, f"warm{route}")
        pid = server.proc.pid if server.proc else None
        print(f"batch {args.batch} tool calls per request, a task every {args.traj_events}, {args.seconds:.0f} s per level, "
              f"OTLP as {args.encoding}")
        print(f"{'round':>5} {'clients':>7} {'events/s (events route)':>24} {'spans/s (otlp)':>15} {'otlp/events':>12}"
              f" {'server CPU ms/1k, events':>25} {'otlp':>6}  load")
        for rnd in range(args.rounds):
            for clients in levels:
                order = ("events", "otlp") if (rnd + clients) % 2 == 0 else ("otlp", "events")
                got = {route: level(server.url, keys[:clients], bodies, route, args.seconds, args.encoding, f"r{rnd}c{clients}", pid)
                       for route in order}
                for route, res in got.items():
                    if res["errors"]:
                        print(f"  {route}: {len(res['errors'])} errors, e.g. {res['errors'][0]}")
                ratio = got["otlp"]["per_s"] / got["events"]["per_s"]
                ratios[clients].append(ratio)
                if got["otlp"]["cpu_per_k"] > 0:
                    cpu[clients].append(got["events"]["cpu_per_k"] / got["otlp"]["cpu_per_k"])
                print(f"{rnd:>5} {clients:>7} {got['events']['per_s']:>24,.0f} {got['otlp']['per_s']:>15,.0f} {ratio:>12.2f}"
                      f" {got['events']['cpu_per_k']:>25.0f} {got['otlp']['cpu_per_k']:>6.0f}  {load_avg()}")
    print("\notlp / events, median over rounds (target >= 0.8):")
    for clients, rs in ratios.items():
        med = statistics.median(rs)
        print(f"  {clients} clients: {med:.2f} ({', '.join(f'{r:.2f}' for r in rs)}) {'met' if med >= 0.8 else 'NOT met'}; "
              f"server CPU per tool call, events / otlp: {statistics.median(cpu[clients] or [float('nan')]):.2f}")


if __name__ == "__main__":
    main()
