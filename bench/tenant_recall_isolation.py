"""How much a large tenant's recall load slows a small tenant's recalls on the embedded server.

Usage: .venv/bin/python -m bench.tenant_recall_isolation [--big 100000] [--small 1000] [--queries 150]
       [--clients 4] [--before REF] [--rounds 2]

Tenant A holds ``--big`` lessons, tenant B ``--small`` (seeded through the adapters as
``recall_latency.py`` seeds, real MiniLM vectors perturbed, token vectors kept), in one data
directory. On the real server process (``python server.py``, MiniLM), B's recalls are timed one at
a time (each after the server is idle) twice: alone, and while ``--clients`` threads recall A
without pauses. B's recall embeds its query and searches its own small partition, so what A's load
adds to it is the wait for the cores, the GIL and whatever A holds that B needs.

``--before REF``: the server of a git ref too (app.py, server.py, worker.py, chalicelib/ exported by
``git archive``), on the same data; the sides take turns going first, ``--rounds`` times each. Prints
B's p50 / p99 alone and under A's load, the ratio, A's recalls/s, per side and round. Numbers only;
compare the sides of one run.
"""
from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import shutil
import tempfile
import threading
import time
from pathlib import Path

from bench._harness import HOST, Server, export_ref, pct, settle
from bench.recall_latency import Seeder, base_lessons, make_queries


def seed(data_dir: str, big: int, small: int, rng_seed: int) -> dict[str, str]:
    """The two tenants' ids, their lessons seeded into ``data_dir``."""
    from chalicelib.container import build_embedded, set_deps
    from chalicelib.services.tenants import create_tenant
    from chalicelib.settings import Settings

    settings = Settings(data_dir=data_dir, worker=False, admin_key="hsadmin_bench_inprocess", rate_limit_per_second=0)
    deps = build_embedded(settings)
    set_deps(deps, settings)
    bases = base_lessons(300, random.Random(rng_seed))
    texts = [f"{b['situation']} {b['lesson']} Tools: {', '.join(b['tools'])}." for b in bases]
    vecs, tokens = deps.embedder.embed_with_tokens(texts)
    tenants = {}
    for name, n, s in (("a", big, rng_seed + 2), ("b", small, rng_seed + 3)):
        tenant, _ = create_tenant(deps, f"bench-{name}")
        seeder = Seeder(deps, tenant.tenant_id, bases, vecs, s, tokens)
        seeder.grow_to(n)
        seeder.check()
        tenants[name] = tenant.tenant_id
    return tenants


def issue_key(port: int, admin_key: str, tenant_id: str) -> str:
    conn = http.client.HTTPConnection(HOST, port, timeout=60)
    conn.request("POST", f"/v1/tenants/{tenant_id}/keys", b"{}",
                 {"authorization": f"Bearer {admin_key}", "content-type": "application/json"})
    resp = conn.getresponse()
    body = resp.read()
    if resp.status != 201 and resp.status != 200:
        raise RuntimeError(f"key for {tenant_id}: {resp.status} {body[:200]!r}")
    return json.loads(body)["api_key"]


class Client:
    def __init__(self, port: int, key: str) -> None:
        self.conn = http.client.HTTPConnection(HOST, port, timeout=120)
        self.headers = {"authorization": f"Bearer {key}", "content-type": "application/json"}

    def recall(self, body: bytes) -> float:
        t = time.perf_counter()
        self.conn.request("POST", "/v1/recall", body, self.headers)
        resp = self.conn.getresponse()
        resp.read()
        if resp.status != 200:
            raise RuntimeError(f"recall answered {resp.status}")
        return (time.perf_counter() - t) * 1000


def measure(server: Server, keys: dict[str, str], bodies: list[bytes], clients: int) -> dict:
    b = Client(server.port, keys["b"])
    a_clients = [Client(server.port, keys["a"]) for _ in range(clients)]
    for body in bodies[:20]:  # loads both partitions, warms the model
        b.recall(body)
        a_clients[0].recall(body)
    alone = []
    for body in bodies:
        settle([server.proc.pid])
        alone.append(b.recall(body))
    stop = threading.Event()
    done = [0] * clients

    def flood(i: int) -> None:
        j = i
        while not stop.is_set():
            a_clients[i].recall(bodies[j % len(bodies)])
            done[i] += 1
            j += clients

    threads = [threading.Thread(target=flood, args=(i,), daemon=True) for i in range(clients)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    time.sleep(1.0)
    loaded = []
    rng = random.Random(11)
    for body in bodies:
        time.sleep(rng.uniform(0.01, 0.05))  # B at its own pace, not in step with A's calls
        loaded.append(b.recall(body))
    stop.set()
    for t in threads:
        t.join(120)
    wall = time.perf_counter() - t0
    return {"alone": alone, "loaded": loaded, "a_rate": sum(done) / wall}


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.tenant_recall_isolation", description=__doc__.splitlines()[0])
    parser.add_argument("--big", type=int, default=100_000, help="lessons of tenant A")
    parser.add_argument("--small", type=int, default=1000, help="lessons of tenant B")
    parser.add_argument("--queries", type=int, default=150, help="B's recalls per phase")
    parser.add_argument("--clients", type=int, default=4, help="A's clients recalling without pauses")
    parser.add_argument("--before", default=None, help="a git ref whose server is measured beside this checkout's")
    parser.add_argument("--rounds", type=int, default=2, help="rounds of each side")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--keep", action="store_true", help="keep the data directory")
    args = parser.parse_args()

    tmp = tempfile.mkdtemp(prefix="hindsight-bench-isolation-")
    try:
        t0 = time.perf_counter()
        tenants = seed(tmp, args.big, args.small, args.seed)
        print(f"seeded A={args.big} and B={args.small} lessons in {time.perf_counter() - t0:.0f} s; data dir {tmp}",
              flush=True)
        bodies = [json.dumps(q).encode() for q in make_queries(args.queries, random.Random(args.seed + 1))]
        sides: list[tuple[str, Path | None]] = [("this tree", None)]
        if args.before:
            root = Path(tmp) / "before-code"
            print(f"before = {export_ref(args.before, root)}", flush=True)
            sides = [("before", root), ("this tree", None)]
        rows = []
        for r in range(args.rounds):
            for name, root in (sides if r % 2 == 0 else sides[::-1]):
                with Server(tmp, {"HINDSIGHT_EMBEDDER": "minilm"}, log_path=os.path.join(tmp, f"server-{r}.log"),
                            root=root) as server:
                    keys = {t: issue_key(server.port, server.admin_key, tid) for t, tid in tenants.items()}
                    res = measure(server, keys, bodies, args.clients)
                rows.append((name, r, res, os.getloadavg()[0]))
                a50, l50 = pct(res["alone"], 50), pct(res["loaded"], 50)
                print(f"  round {r} {name}: B alone p50 {a50:.1f} ms, under A's load {l50:.1f} ms", flush=True)

        print(f"\nTenant B ({args.small} lessons) recalling one at a time, alone and while {args.clients} clients recall"
              f" tenant A ({args.big} lessons) without pauses; {args.queries} recalls per phase")
        print(f"{'side':<10} | {'round':>5} | {'B alone p50':>11} {'p99':>7} | {'B under A p50':>13} {'p99':>7} |"
              f" {'p50 ratio':>9} {'p99 ratio':>9} | {'A recalls/s':>11} | {'load':>5}")
        for name, r, res, load in rows:
            al, lo = res["alone"], res["loaded"]
            print(f"{name:<10} | {r:>5} | {pct(al, 50):11.1f} {pct(al, 99):7.1f} | {pct(lo, 50):13.1f}"
                  f" {pct(lo, 99):7.1f} | {pct(lo, 50) / pct(al, 50):9.2f} {pct(lo, 99) / pct(al, 99):9.2f} |"
                  f" {res['a_rate']:11.1f} | {load:5.1f}")
        if args.before:
            for q in (50, 99):
                ratios = []
                for r in range(args.rounds):
                    by = {name: res for name, rr, res, _ in rows if rr == r}
                    ratios.append(pct(by["this tree"]["loaded"], q) / pct(by["before"]["loaded"], q))
                print(f"B under A's load, p{q} this tree / before, by round: {' '.join(f'{x:.2f}' for x in ratios)}")
    finally:
        if args.keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
