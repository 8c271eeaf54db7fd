"""How long one tenant's flood holds back another tenant's review, on the real embedded server.

Tenant A records one trajectory of N tool calls (batches of 100, 4 in 5 failing with varied
errors) and finalizes it; tenant B finalizes a 3-event trajectory right after (``devtools.flood``).
The baseline is B's delay on the same server before any flood (its review alone). ``--root`` serves
another checkout (e.g. the previous commit's worktree) to compare code versions.

``--backend aws``: the same flood on the aws stack, locally (``devtools.aws_stack``: moto server as
DynamoDB, an OpenSearch node, the OpenAI-compatible stub, the app's routes and its review function
fed by the review-jobs stream). The stream is delivered once both trajectories are finalized (the
event source mapping lagging behind the flood), so A's queued reviews stand before B's; the
baseline is B alone on the same stack, after a first review that warms it. moto is much slower
than DynamoDB: compare the ratio.

    .venv/bin/python -m bench.tenant_fairness [--events 6000] [--wait 120] [--root PATH]
    .venv/bin/python -m bench.tenant_fairness --backend aws [--events 2000] [--wait 300]
"""
from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

from devtools.flood import flood, tenant_b_delay
from devtools.server_process import ROOT, ServerProcess


def embedded(args: argparse.Namespace):
    with tempfile.TemporaryDirectory() as tmp:
        srv = ServerProcess(Path(tmp) / "data", {"HINDSIGHT_ADMIN_KEY": "hsadmin_bench_fairness"}, root=args.root)
        srv.start(timeout=120)
        try:
            idle = tenant_b_delay(srv.url, srv.admin_key, events=0, wait=args.wait)
            flooded = tenant_b_delay(srv.url, srv.admin_key, events=args.events, wait=args.wait)
        finally:
            srv.stop()
    return idle, flooded, f"served from {args.root}"


def aws(args: argparse.Namespace):
    from devtools.aws_stack import aws_tenant, local_aws_stack, stream_delivery
    from devtools.opensearch_node import node_url

    results = []
    with local_aws_stack("hsadmin_bench_fairness", node_url()) as stack:
        # a first review pays the stack's cold start (imports, the index, the idempotency table): not measured
        for run, events in enumerate((0, 0, args.events)):
            a, b = aws_tenant(stack, f"flooder-{run}"), aws_tenant(stack, f"bystander-{run}")
            results.append(flood(a, b, events=events, wait=args.wait, reviewing=lambda: stream_delivery(stack)))
    results = results[1:]
    return *results, "aws stack: moto server, OpenSearch node, review function on the jobs stream"


def main() -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.tenant_fairness")
    ap.add_argument("--backend", choices=("embedded", "aws"), default="embedded")
    ap.add_argument("--events", type=int, default=None, help="A's events (default 6000 embedded, 2000 aws)")
    ap.add_argument("--wait", type=float, default=None, help="seconds to wait for the reviews (default 120 embedded, 300 aws)")
    ap.add_argument("--root", default=str(ROOT), help="the checkout whose server.py is served (embedded)")
    args = ap.parse_args()
    on_aws = args.backend == "aws"
    args.events = args.events if args.events is not None else (2000 if on_aws else 6000)
    args.wait = args.wait if args.wait is not None else (300.0 if on_aws else 120.0)
    idle, flood_result, where = aws(args) if on_aws else embedded(args)
    fmt = lambda s: f"{s:.2f} s" if s is not None else f"> {args.wait:.0f} s (not reviewed)"  # noqa: E731
    print(f"{where}; load average {os.getloadavg()[0]:.1f}")
    print("| | tenant B's review delay | A's flood sent in | A reviewed after |")
    print("| --- | ---: | ---: | ---: |")
    print(f"| no flood (baseline) | {fmt(idle.b_delay_seconds)} | - | - |")
    f = flood_result
    print(f"| A floods {args.events:,} events | {fmt(f.b_delay_seconds)} | {f.flood_seconds:.1f} s | {fmt(f.a_reviewed_after_seconds)} |")
    if f.b_delay_seconds is not None and idle.b_delay_seconds:
        order = "before" if f.b_reviewed_first else "after"
        print(f"B's delay under the flood: {f.b_delay_seconds / idle.b_delay_seconds:.1f}x its delay alone; B reviewed {order} A")


if __name__ == "__main__":
    main()
