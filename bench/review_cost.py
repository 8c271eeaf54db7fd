"""Review cost against trajectory size, on the rules path (SQLite backend, in process).

The trajectory is the flood of issue 12: tool calls, most of them failing with varied errors
and varied parameter values, every fifth one succeeding. For each size it prints the time to
append it (batches of 100, local reviews on: the jobs the flood queues are counted), the time of
the full review after finalize (wall and CPU time: the machine is shared), and the CPU time per
event; the ratio column compares it with the smallest size's (1.0: linear). The hash embedder keeps the embedding cost out.

    .venv/bin/python -m bench.review_cost [--sizes 300,600,1200,2400,10000]
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from chalicelib.adapters.clock import SystemClock
from chalicelib.adapters.reviewers.rules import DeterministicReviewer
from chalicelib.adapters.embedders.hash import HashEmbedder
from chalicelib.adapters.embedded.index import NumpyVectorIndex
from chalicelib.adapters.embedded.db import SqliteDatabase
from chalicelib.adapters.embedded.stores import (
    SqliteExperienceStore, SqliteReviewQueue, SqliteTenantStore, SqliteTrajectoryStore,
)
from chalicelib.domain.models import FULL_REVIEW
from chalicelib.services import ingest
from chalicelib.services.deps import Deps, policies
from chalicelib.services.learning import review_and_learn
from chalicelib.settings import Settings

ERRORS = ("VendorMissing", "RateLimited", "InvalidAirport", "Timeout", "PermissionDenied", "NotFound", "BadRequest")


def flood_events(n: int) -> list[dict]:
    """n tool calls over 12 tools, 4 in 5 failing, with varied errors and literal values."""
    out = []
    for i in range(n):
        tool = f"tool_{i % 12}"
        params = {"city": f"C{i % 97:02d}X", "order": f"ord-{i * 7919 % 100003}", "amount": i % 500}
        content: dict = {"tool": tool, "params": params}
        if i % 5 == 4:
            content["result"] = f"ok {i}"
        else:
            content["status"] = "error"
            content["error"] = f"{ERRORS[i % len(ERRORS)]}: vendor v{i % 211} refused order ord-{i * 7919 % 100003}"
        out.append({"event_id": f"e{i}", "type": "tool_call", "content": content})
    return out


def build(data: Path) -> Deps:
    settings = Settings(data_dir=str(data), embedder="hash")
    db = SqliteDatabase(str(data / "hindsight.db"))
    embedder = HashEmbedder()
    return Deps(
        tenants=SqliteTenantStore(db),
        trajectories=SqliteTrajectoryStore(db),
        experiences=SqliteExperienceStore(db),
        index=NumpyVectorIndex(SqliteDatabase(str(data / "vectors.db")), embedder.dim),
        embedder=embedder,
        reviewer=DeterministicReviewer(),
        queue=SqliteReviewQueue(db),
        clock=SystemClock(),
        **policies(settings),
    )


def run(n: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        deps = build(Path(tmp))
        ingest.start_trajectory(deps, "tA", "agent", "Pay the vendors of the week", trajectory_id="flood",
                                tools=[f"tool_{i}" for i in range(12)])
        events = flood_events(n)
        t0 = time.perf_counter()
        append_times = []
        for start in range(0, n, 100):
            a0 = time.perf_counter()
            ingest.append_events(deps, "tA", "flood", events[start : start + 100])
            append_times.append(time.perf_counter() - a0)
        append_s = time.perf_counter() - t0
        queued = deps.queue.pending()
        ingest.finalize(deps, "tA", "flood", "failure", None)
        t0, c0 = time.perf_counter(), time.process_time()
        traj = review_and_learn(deps, "tA", "flood", FULL_REVIEW)
        review_s, review_cpu = time.perf_counter() - t0, time.process_time() - c0
        return {
            "n": n, "append_s": append_s, "last_append_ms": append_times[-1] * 1000, "first_append_ms": append_times[0] * 1000,
            "queued": queued, "review_s": review_s, "review_cpu": review_cpu, "lessons": len(traj.experience_ids),
        }


def main() -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.review_cost")
    ap.add_argument("--sizes", default="300,600,1200,2400,10000")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    rows = [run(n) for n in sizes]
    base = rows[0]["review_cpu"] / rows[0]["n"]
    print(f"load average at the end: {os.getloadavg()[0]:.1f} (wall time counts other processes' turns, CPU time does not)")
    print("| events | full review wall s | CPU s | CPU ms / event | ratio / event vs smallest | lessons | append s (first / last call ms) | jobs queued |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        per = r["review_cpu"] / r["n"]
        print(
            f"| {r['n']:,} | {r['review_s']:.2f} | {r['review_cpu']:.2f} | {per * 1000:.3f} | {per / base:.2f} | {r['lessons']} "
            f"| {r['append_s']:.2f} ({r['first_append_ms']:.0f} / {r['last_append_ms']:.0f}) | {r['queued']} |"
        )


if __name__ == "__main__":
    main()
