"""The real-runs set on a fresh server (or an existing one), beside raw retrieval.

    .venv/bin/python -m bench.realruns [--env retail|smallshop] [--roles dev,heldout] [--train-tasks N]
        [--out results.json] [--url URL --admin-key KEY]

``retail`` needs ``python -m bench.realruns.fetch`` first (the environment is never committed).
"""
from __future__ import annotations

import argparse
import secrets
import sys
from pathlib import Path
from typing import Sequence

from bench.experience_reuse.service import Api, LocalServer, create_tenant

from . import evaluate, sets


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.realruns", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--env", choices=sets.ENVIRONMENTS, default="retail")
    p.add_argument("--roles", default="dev", help="dev, heldout or both (held-out: report only)")
    p.add_argument("--train-tasks", type=int, default=sets.TRAIN_TASKS)
    p.add_argument("--mistakes", type=int, default=2, help="runs with a mistake per task, beside its gold run")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--review-timeout", type=float, default=900.0)
    p.add_argument("--url")
    p.add_argument("--admin-key")
    p.add_argument("--out")
    args = p.parse_args(argv)
    roles = tuple(r.strip() for r in args.roles.split(",") if r.strip())
    if not roles or set(roles) - {"dev", "heldout"}:
        p.error("--roles takes dev, heldout or both")
    why = sets.unavailable(args.env)
    if why:
        print(f"real runs ({args.env}) skipped: {why}")
        return 0
    server = None
    if args.url:
        url, admin = args.url, args.admin_key
    else:
        server = LocalServer().start()
        url, admin = server.url, server.admin_key
    nonce = secrets.token_hex(3)
    try:
        api = Api(url, create_tenant(url, admin, f"realruns-{nonce}"))
        try:
            res = sets.run(args.env, api, nonce, args.review_timeout, log, roles, args.train_tasks, args.mistakes, args.seed)
        finally:
            api.close()
    finally:
        if server is not None:
            server.stop()
    evaluate.print_table(res)
    if args.out:
        Path(args.out).write_text(evaluate.to_json(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
