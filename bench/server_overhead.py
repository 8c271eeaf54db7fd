"""Where the embedded server's CPU per append goes: the same HTTP load on four servers that stop at
successive stages of the ingest path.

Usage: .venv/bin/python -m bench.server_overhead [--seconds 6] [--clients 32] [--rounds 2]

Each stage is the real server process (``server.create_server``: the same waitress settings, the
same garbage-collector tuning), driven by the ingest benchmark's HTTP clients (keep-alive
``http.client`` connections, batches of 20 events encoded before the level is timed, a new
trajectory every 100 events), each client its own tenant:

  waitress   a WSGI app that reads the body and answers a fixed 202: the HTTP server alone
  gateway    the server's WSGI app (Chalice's gateway, the key's authorizer, the tenant's rate
             limit, the access log); the append route answers without reading the body
  validate   as gateway, and the route parses, checks and validates the body and builds the
             events as the real view does; nothing is stored
  ingest     the real route (group commit, fsync)

Trajectory starts (one call in six) take the real route in every stage but the first. Per stage:
events/s, p50/p99 per append, server CPU per request (utime + stime over requests), and the
difference from the stage before. Stages alternate within each round; the machine is shared, so
compare stages of one round. Prints numbers only.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

from bench._harness import HOST, ROOT, free_port, pct, proc_cpu_seconds, terminate

STAGES = ("waitress", "gateway", "validate", "ingest")
EVENTS_ROUTE = "/v1/trajectories/{trajectory_id}/events"


def serve(stage: str) -> None:
    """The embedded server as ``server.main`` builds it, the append route cut short at ``stage``."""
    import logging

    from local import server as srv
    from local import wsgi
    from chalicelib import redaction
    from chalicelib.container import get_deps, get_settings

    settings = get_settings()
    logging.basicConfig(level=settings.log_level, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    redaction.install()
    get_deps()
    if stage == "waitress":
        def wsgi(environ, start_response):
            environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
            path = environ["PATH_INFO"]
            status, body = (("202 Accepted", b'{"accepted":20,"duplicates":0}') if path.endswith("/events")
                            else ("200 OK", b'{"status":"ok"}') if path == "/v1/health"
                            else ("201 Created", b'{"trajectory_id":"t"}'))
            start_response(status, [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
            return [body]
    else:
        import app as app_module
        from chalicelib.api import schemas as s
        from chalicelib.api.http import json_response, parse_json, validate
        from chalicelib.api.routes import endpoint

        chalice_app = app_module.app
        entry = chalice_app.routes[EVENTS_ROUTE]["POST"]
        if stage != "ingest":
            def append(trajectory_id: str):
                app_module.api.tenant()
                accepted = 20
                if stage == "validate":
                    raw = chalice_app.current_request.raw_body
                    data = parse_json(raw, settings.max_body_bytes)
                    app_module._event_limits(data, raw)
                    body = validate(s.EventsIn, data)
                    events = [{"event_id": e.event_id, "type": e.type, "timestamp": e.timestamp, "node_id": e.node_id,
                               "parent_id": e.parent_id, "content": e.content,
                               "context": e.context.model_dump(exclude_none=True)} for e in body.events]
                    accepted = len(events)
                return json_response({"accepted": accepted, "duplicates": 0}, 202)

            entry.view_function = endpoint(append)
        wsgi = wsgi.make_wsgi_app(chalice_app, settings.max_body_bytes)
    srv.tune_gc()
    server = wsgi.create_server(wsgi, settings)
    try:
        server.run()
    finally:
        server.close()


def drive(stage: str, clients: int, seconds: float) -> dict[str, float]:
    from bench.ingest_throughput import client_batches, http_level
    from chalicelib.container import build_embedded
    from chalicelib.services.tenants import create_tenant
    from chalicelib.settings import Settings
    from devtools.net import wait_http

    tmp = tempfile.mkdtemp(prefix="hindsight-bench-overhead-")
    try:
        deps = build_embedded(Settings(data_dir=tmp, embedder="hash", worker=False, admin_key="hsadmin_bench_overhead"))
        keys = [create_tenant(deps, f"client-{i}")[1] for i in range(clients)]
        port = free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith("HINDSIGHT_")}
        env.update({"HINDSIGHT_DATA_DIR": tmp, "HINDSIGHT_PORT": str(port), "HINDSIGHT_HOST": HOST,
                    "HINDSIGHT_ADMIN_KEY": "hsadmin_bench_overhead", "HINDSIGHT_WORKER": "false",
                    "HINDSIGHT_RATE_LIMIT_PER_SECOND": "0", "HINDSIGHT_EMBEDDER": "hash", "OPENBLAS_NUM_THREADS": "1"})
        with open(os.path.join(tmp, "server.log"), "wb") as log:
            proc = subprocess.Popen([sys.executable, "-m", "bench.server_overhead", "--serve", stage], cwd=str(ROOT),
                                    env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
            try:
                url = f"http://{HOST}:{port}"
                wait_http(f"{url}/v1/health", proc, 120)
                bodies = client_batches(clients, 20, 100)
                http_level(url, keys, clients, 1.0, 20, 100, 10**6, "warm", batches=bodies)
                cpu0, wall0 = proc_cpu_seconds(proc.pid), time.perf_counter()
                st = http_level(url, keys, clients, seconds, 20, 100, 10**6, "m", batches=bodies)
                wall, cpu = time.perf_counter() - wall0, proc_cpu_seconds(proc.pid) - cpu0
            finally:
                terminate(proc)
        requests = max(1, st.calls + st.trajectories)
        return {"events_s": st.events / wall, "p50": pct(st.latencies, 50), "p99": pct(st.latencies, 99),
                "cpu_ms": cpu * 1000 / requests, "cores": cpu / wall, "errors": st.errors + st.exceptions,
                "load": os.getloadavg()[0]}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.server_overhead", description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=6.0, help="duration of each stage")
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--serve", choices=STAGES, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve)
        return
    print(f"{args.clients} clients, 20 events per append, {args.seconds:g} s per stage; server CPU per request = "
          "(utime + stime) / (appends + starts)")
    print(f"{'round':>5} | {'stage':<9} | {'events/s':>9} | {'p50 ms':>7} | {'p99 ms':>7} | {'CPU ms/req':>10} |"
          f" {'+ stage before':>14} | {'server cores':>12} | {'errors':>6} | {'load':>5}")
    for r in range(1, args.rounds + 1):
        before = None
        for stage in STAGES:
            m = drive(stage, args.clients, args.seconds)
            step = f"{m['cpu_ms'] - before:+.2f}" if before is not None else "-"
            before = m["cpu_ms"]
            print(f"{r:>5} | {stage:<9} | {m['events_s']:9.0f} | {m['p50']:7.1f} | {m['p99']:7.1f} | {m['cpu_ms']:10.2f} |"
                  f" {step:>14} | {m['cores']:12.2f} | {m['errors']:>6.0f} | {m['load']:5.1f}", flush=True)


if __name__ == "__main__":
    main()
