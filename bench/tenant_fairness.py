"""How long one tenant's flood holds back another tenant's review, on the real embedded server.

Tenant A records one trajectory of N tool calls (batches of 100, 4 in 5 failing with varied
errors) and finalizes it; tenant B finalizes a 3-event trajectory right after (``devtools.flood``).
The baseline is B's delay on the same server before any flood (its review alone). ``--root`` serves
another checkout (e.g. the previous commit's worktree) to compare code versions.

    .venv/bin/python bench/tenant_fairness.py [--events 6000] [--wait 120] [--root PATH]
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from devtools import server_process  # noqa: E402
from devtools.flood import tenant_b_delay  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, default=6000)
    ap.add_argument("--wait", type=float, default=120.0)
    ap.add_argument("--root", default=str(ROOT), help="the checkout whose server.py is served")
    args = ap.parse_args()
    server_process.ROOT = Path(args.root)
    with tempfile.TemporaryDirectory() as tmp:
        srv = server_process.ServerProcess(Path(tmp) / "data", {"HINDSIGHT_ADMIN_KEY": "hsadmin_bench_fairness"})
        srv.start(timeout=120)
        try:
            idle = tenant_b_delay(srv.url, srv.admin_key, events=0, wait=args.wait)
            flood = tenant_b_delay(srv.url, srv.admin_key, events=args.events, wait=args.wait)
        finally:
            srv.stop()
    fmt = lambda s: f"{s:.2f} s" if s is not None else f"> {args.wait:.0f} s (not reviewed)"  # noqa: E731
    print(f"served from {args.root}; load average {os.getloadavg()[0]:.1f}")
    print("| | tenant B's review delay | A's flood sent in | A reviewed after |")
    print("| --- | ---: | ---: | ---: |")
    print(f"| no flood (baseline) | {fmt(idle.b_delay_seconds)} | - | - |")
    print(f"| A floods {args.events:,} events | {fmt(flood.b_delay_seconds)} | {flood.flood_seconds:.1f} s | {fmt(flood.a_reviewed_after_seconds)} |")


if __name__ == "__main__":
    main()
