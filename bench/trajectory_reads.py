"""What reads of a long trajectory cost the server, and the other tenants: advise by trajectory id,
GET .../events, and reindex, on the real server process; with ``--before REF`` the same run on a
git ref's server too (a fresh data directory each, seeded over HTTP), so the figures compare.

Usage: .venv/bin/python -m bench.trajectory_reads [--events 10000] [--event-bytes 9000] [--calls 200]
                                                   [--lessons 200] [--before REF]

Seeded over HTTP: tenant ``long`` with one trajectory of ``--events`` events of about
``--event-bytes`` bytes each (the probe's was 93 MB) and a short one of 20; tenant ``other`` with
``--lessons`` lessons. Then, per server:

  advise       POST /v1/advise with the long trajectory's id, with the short one's, and with none,
               interleaved call by call; the ratio long / none is the price of the trajectory id
  recall       tenant ``other``'s recall p50 alone, then while 4 threads loop advise by the long
               trajectory's id; the ratio under / alone is what those loops cost another tenant
  events       4 threads each read the long trajectory's events (every page, by its cursor, where
               the route pages): the server's peak RSS over its RSS before, and the time taken
  reindex      tenant ``other``'s reindex (every batch, where the route batches): the longest
               request and the total, and another tenant's recall p50 meanwhile

The server runs with the hash embedder (recall's ranking is not measured here, its cost is).
Prints numbers only; it is not a pass/fail test.
"""
from __future__ import annotations

import argparse
import shutil
import tempfile
import threading
import time
from pathlib import Path

from bench._harness import Server, before_and_after, pct, proc_rss_mb

TOOLS = ["sql.query", "billing.charge", "crm.lookup", "mail.send", "files.read"]


def seed(server: Server, events: int, event_bytes: int, lessons: int) -> tuple[str, str]:
    """The tenants' keys (long, other), their data stored over HTTP."""
    import httpx

    admin = {"Authorization": f"Bearer {server.admin_key}"}
    keys = []
    for name in ("long", "other"):
        resp = httpx.post(f"{server.url}/v1/tenants", json={"name": name}, headers=admin, timeout=30)
        resp.raise_for_status()
        keys.append(resp.json()["api_key"])
    long_key, other_key = keys
    pad = "x" * max(0, event_bytes - 200)
    with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {long_key}"}, timeout=120) as c:
        for tid, n in (("long", events), ("short", 20)):
            c.post("/v1/trajectories", json={"trajectory_id": tid, "agent_id": "bot", "goal": "update the sales table"}).raise_for_status()
            per_call = max(1, min(100, 900_000 // max(1, event_bytes)))
            for first in range(0, n, per_call):
                batch = [{"event_id": f"e{i}", "type": "tool_call",
                          "content": {"tool": TOOLS[i % len(TOOLS)], "params": {"q": f"step {i}", "note": pad},
                                      "status": "error" if i % 7 == 0 else "ok", "error": "Timeout" if i % 7 == 0 else None}}
                         for i in range(first, min(n, first + per_call))]  # fmt: skip
                c.post(f"/v1/trajectories/{tid}/events", json={"events": batch}).raise_for_status()
    with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {other_key}"}, timeout=60) as c:
        for i in range(lessons):
            tool = TOOLS[i % len(TOOLS)]
            c.post("/v1/experiences", json={"situation": f"Calling `{tool}` for request {i}", "tools": [tool],
                                            "advice": f"When you call `{tool}`, set `limit` to a whole number ({i})."}).raise_for_status()
    return long_key, other_key


def timed(client, method: str, path: str, body: dict | None = None) -> float:
    t = time.perf_counter()
    resp = client.request(method, path, json=body)
    took = (time.perf_counter() - t) * 1000
    if resp.status_code >= 400:
        raise RuntimeError(f"{method} {path} answered {resp.status_code}: {resp.text[:300]}")
    return took


def walk_events(client, trajectory_id: str) -> int:
    """Every event of the trajectory, a page at a time where the route pages; the count read."""
    count, cursor = 0, None
    while True:
        resp = client.get(f"/v1/trajectories/{trajectory_id}/events", params={"cursor": cursor} if cursor else None)
        resp.raise_for_status()
        body = resp.json()
        count += len(body["events"])
        cursor = body.get("cursor")
        if not cursor:
            return count


def reindex_all(client) -> list[float]:
    """Every batch of a reindex (one request where the route does not batch): each request's ms."""
    times, cursor = [], None
    while True:
        t = time.perf_counter()
        resp = client.post("/v1/maintenance/reindex", json={"cursor": cursor} if cursor else {})
        times.append((time.perf_counter() - t) * 1000)
        resp.raise_for_status()
        cursor = resp.json().get("cursor")
        if not cursor:
            return times


class Loops:
    """``n`` threads running ``step`` until stopped."""

    def __init__(self, n: int, step) -> None:
        self._stop = threading.Event()
        self.done = 0
        self.threads = [threading.Thread(target=self._run, args=(step,), daemon=True) for _ in range(n)]

    def _run(self, step) -> None:
        while not self._stop.is_set():
            step()
            self.done += 1

    def __enter__(self) -> "Loops":
        for t in self.threads:
            t.start()
        time.sleep(0.3)
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        for t in self.threads:
            t.join(60)


def measure(label: str, root: Path | None, args) -> dict[str, float]:
    import httpx

    data_dir = tempfile.mkdtemp(prefix="hindsight-trajectory-reads-")
    env = {"HINDSIGHT_EMBEDDER": "hash", "HINDSIGHT_MAX_EVENTS_PER_TRAJECTORY": str(args.events + 100)}
    out: dict[str, float] = {}
    try:
        with Server(data_dir, env, root=root) as server:
            t0 = time.perf_counter()
            long_key, other_key = seed(server, args.events, args.event_bytes, args.lessons)
            print(f"[{label}] seeded in {time.perf_counter() - t0:.1f} s", flush=True)

            def client(key: str):
                return httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {key}"}, timeout=120, trust_env=False)

            advise = {"tool": "sql.query", "params": {"q": "update sales"}, "goal": "update the sales table"}
            with client(long_key) as a, client(other_key) as b:
                for _ in range(10):  # warm up
                    timed(a, "POST", "/v1/advise", advise | {"trajectory_id": "long"})
                    timed(b, "POST", "/v1/recall", {"query": "calling sql for a request"})
                by = {"long": [], "short": [], "none": []}
                for _ in range(args.calls):
                    by["long"].append(timed(a, "POST", "/v1/advise", advise | {"trajectory_id": "long"}))
                    by["short"].append(timed(a, "POST", "/v1/advise", advise | {"trajectory_id": "short"}))
                    by["none"].append(timed(a, "POST", "/v1/advise", advise))
                for k, xs in by.items():
                    out[f"advise {k} p50 ms"] = pct(xs, 50)
                out["advise long / none"] = out["advise long p50 ms"] / out["advise none p50 ms"]

                alone = [timed(b, "POST", "/v1/recall", {"query": "calling sql for a request"}) for _ in range(args.calls)]
                loopers = [client(long_key) for _ in range(4)]
                it = iter(loopers * 1_000_000)
                local = threading.local()

                def advise_loop() -> None:
                    if not hasattr(local, "c"):
                        local.c = next(it)
                    timed(local.c, "POST", "/v1/advise", advise | {"trajectory_id": "long"})

                with Loops(4, advise_loop) as loops:
                    under = [timed(b, "POST", "/v1/recall", {"query": "calling sql for a request"}) for _ in range(args.calls)]
                for c in loopers:
                    c.close()
                out["recall alone p50 ms"] = pct(alone, 50)
                out["recall under 4 advise loops p50 ms"] = pct(under, 50)
                out["recall under / alone"] = out["recall under 4 advise loops p50 ms"] / out["recall alone p50 ms"]
                out["advise loops done"] = loops.done

                pid = server.proc.pid
                time.sleep(1.0)
                before_rss = proc_rss_mb(pid) or 0.0
                peak = [before_rss]
                stop = threading.Event()

                def sample() -> None:
                    while not stop.is_set():
                        peak[0] = max(peak[0], proc_rss_mb(pid) or 0.0)
                        time.sleep(0.01)

                sampler = threading.Thread(target=sample, daemon=True)
                sampler.start()
                readers = [client(long_key) for _ in range(4)]
                counts: list[int] = []
                t = time.perf_counter()
                threads = [threading.Thread(target=lambda c=c: counts.append(walk_events(c, "long"))) for c in readers]
                for th in threads:
                    th.start()
                for th in threads:
                    th.join()
                took = time.perf_counter() - t
                stop.set()
                sampler.join()
                for c in readers:
                    c.close()
                assert counts == [args.events] * 4, counts
                out["events: server RSS before MB"] = before_rss
                out["events: peak RSS growth MB"] = peak[0] - before_rss
                out["events: 4 walks s"] = took

                with client(other_key) as r, Loops(1, lambda: timed(b, "POST", "/v1/recall", {"query": "calling sql"})):
                    times = reindex_all(r)
                out["reindex requests"] = len(times)
                out["reindex longest request ms"] = max(times)
                out["reindex total ms"] = sum(times)
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.trajectory_reads", description=__doc__.split("\n")[0])
    ap.add_argument("--events", type=int, default=10_000)
    ap.add_argument("--event-bytes", type=int, default=9_000)
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--lessons", type=int, default=200)
    ap.add_argument("--before", help="a git ref whose server is measured the same way first")
    args = ap.parse_args()
    runs = before_and_after(args.before, lambda label, code: measure(label, code, args), "hindsight-trajectory-reads-ref-")
    names = list(runs)
    print(f"\n{args.events} events of ~{args.event_bytes} bytes in one trajectory, {args.calls} calls per measure")
    print(f"{'measure':<40}" + "".join(f"{n[:28]:>30}" for n in names) + ("      after/before" if len(names) == 2 else ""))
    for key in runs[names[-1]]:
        values = [runs[n].get(key, float("nan")) for n in names]
        ratio = f"{values[1] / values[0]:>18.2f}" if len(values) == 2 and values[0] else ""
        print(f"{key:<40}" + "".join(f"{v:>30.2f}" for v in values) + ratio)


if __name__ == "__main__":
    main()
