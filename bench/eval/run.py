"""Every evaluation set beside its baselines, measured in one run against one fresh server.

    .venv/bin/python -m bench.eval [--sets reuse,independent,locomo,retail] [--out results.json]
        [--independent PATH] [--locomo PATH] [--url URL --admin-key KEY] [--reuse-tasks dev]
        [--retail-roles dev]

Dev sets (changes are decided on them): experience_reuse dev, the blind sets
(bench/blind2, bench/blind3, bench/blind4), LoCoMo, the real-runs set's dev tasks. Held-out sets (report only, run rarely, never tuned on): experience_reuse held-out, the
independent set (bench/independent), the real-runs set's held-out tasks. The real-runs set (retail, bench/realruns) runs
when ``python -m bench.realruns.fetch`` has fetched its environment, and is skipped otherwise.
"""
from __future__ import annotations

import argparse
import json
import os
import secrets
import sys
import time
from pathlib import Path
from typing import Any, Sequence

from bench.experience_reuse.service import Api, LocalServer, create_tenant
from bench.realruns import evaluate as realruns
from bench.realruns import sets as realrun_sets
from devtools.env import changed_env as server_env

from . import compare, corrections, independent, locomo, offline, replay, reuse

SETS = ("reuse", "blind2", "blind3", "blind4", "independent", "corrections", "locomo", "retail")
LABELS = {"reuse": "experience_reuse", "blind2": "blind2", "blind3": "blind3", "blind4": "blind4", "independent": "independent",
          "corrections": "corrections", "locomo": "LoCoMo", "retail": "real runs (retail)"}
BLIND_SETS = independent.BLIND_SETS  # sets in the blind-set format, and their role
COLUMNS = (  # key, header, as percent
    ("n", "n", False), ("hit@1", "hit@1", False), ("strict_hit@1", "strict@1", False), ("hit@3", "hit@3", False), ("mrr", "MRR", False),
    ("sibling@1", "sib1st", True), ("same_tool_sibling@1", "stsib1st", True), ("unknown_hit@3", "unk@3", False),
    ("names_fix", "fix", False), ("missing@3", "miss@3", False),
    ("turn_any@10", "turn@10", False), ("session_r@10", "sessR@10", False),
)


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.eval", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sets", default=",".join(SETS), help=f"comma-separated subset of {','.join(SETS)}")
    p.add_argument("--independent", default=str(independent.PATHS["independent"]), help="the independent set's families.json")
    p.add_argument("--blind2", default=str(independent.PATHS["blind2"]), help="the second blind set's families.json (dev)")
    p.add_argument("--blind3", default=str(independent.PATHS["blind3"]), help="the third blind set's families.json (dev)")
    p.add_argument("--blind4", default=str(independent.PATHS["blind4"]), help="the fourth blind set's families.json (dev)")
    p.add_argument("--locomo", default=os.environ.get("HINDSIGHT_LOCOMO"),
                   help="locomo10.json (default: $HINDSIGHT_LOCOMO; skipped when unset)")
    p.add_argument("--url", help="an existing server instead of a fresh one")
    p.add_argument("--admin-key", help="the admin key of --url (a tenant is created per set)")
    p.add_argument("--top-k", type=int, default=5, help="top_k of the task-set recalls (LoCoMo always uses 10)")
    p.add_argument("--threads", type=int, default=8, help="client threads writing and recalling LoCoMo")
    p.add_argument("--review-timeout", type=float, default=900.0)
    p.add_argument("--reuse-tasks", default="dev,heldout",
                   help="experience_reuse task sets to recall: dev,heldout (default) or dev alone while developing")
    p.add_argument("--retail-roles", default="dev,heldout",
                   help="real-runs task roles to advise and recall: dev,heldout (default) or dev alone while developing")
    p.add_argument("--out", help="also write every figure as JSON here")
    p.add_argument("--keep-data", metavar="DIR",
                   help="keep the fresh server's data (lessons, index) and the run's ids in DIR, for "
                        "`python -m bench.eval.replay` to score recall variants on the same lessons")
    args = p.parse_args(argv)
    args.sets = [s.strip() for s in args.sets.split(",") if s.strip()]
    bad = set(args.sets) - set(SETS)
    if bad:
        p.error(f"unknown sets {sorted(bad)}")
    args.reuse_tasks = tuple(s.strip() for s in args.reuse_tasks.split(",") if s.strip())
    if not args.reuse_tasks or set(args.reuse_tasks) - {"dev", "heldout"}:
        p.error("--reuse-tasks takes dev, heldout or both")
    args.retail_roles = tuple(s.strip() for s in args.retail_roles.split(",") if s.strip())
    if not args.retail_roles or set(args.retail_roles) - {"dev", "heldout"}:
        p.error("--retail-roles takes dev, heldout or both")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    nonce = secrets.token_hex(3)
    started = time.monotonic()
    res: dict[str, Any] = {"nonce": nonce, "server": "none started", "sets": {}, "skipped": {}, "timings": {}}
    for name in BLIND_SETS:
        if name in args.sets and not Path(getattr(args, name)).exists():
            res["skipped"][name] = f"{getattr(args, name)} not found"
    if "locomo" in args.sets and not args.locomo:
        res["skipped"]["locomo"] = "HINDSIGHT_LOCOMO not set"
    elif "locomo" in args.sets and not Path(args.locomo).exists():
        res["skipped"]["locomo"] = f"{args.locomo} not found"
    if "retail" in args.sets and (why := realrun_sets.unavailable("retail")):
        res["skipped"]["retail"] = why

    server = None
    if not set(args.sets) - set(res["skipped"]):
        print_table(res)
        return 0
    if args.url:
        if not args.admin_key:
            raise SystemExit("--url needs --admin-key")
        if args.keep_data:
            raise SystemExit("--keep-data keeps a fresh server's data: not with --url")
        url, admin = args.url, args.admin_key
        res["server"] = f"existing {url}"
    else:
        log(f"starting a fresh server (embedded backend, {os.environ.get('HINDSIGHT_EMBEDDER') or 'minilm'} embedder)...")
        # Per-tenant rate limits would only measure the client's back-off on LoCoMo's bulk writes.
        with server_env(HINDSIGHT_RATE_LIMIT_PER_SECOND=os.environ.get("HINDSIGHT_RATE_LIMIT_PER_SECOND", "0")):
            server = LocalServer().start()
        url, admin = server.url, server.admin_key
        res["server"] = "fresh embedded server, " + ", ".join(
            f"{k}={v}" for k, v in sorted(server.passed_env.items()) if k not in ("HINDSIGHT_DATA_DIR", "HINDSIGHT_LOCOMO"))
    embed = offline.minilm()
    try:
        if "reuse" in args.sets:
            t0 = time.monotonic()
            api = Api(url, create_tenant(url, admin, f"eval-reuse-{nonce}"))
            try:
                res["sets"]["reuse"] = reuse.run(api, nonce, embed, args.top_k, args.review_timeout, log, args.reuse_tasks)
            finally:
                api.close()
            res["timings"]["reuse_s"] = time.monotonic() - t0
        for name in BLIND_SETS:
            if name not in args.sets or name in res["skipped"]:
                continue
            t0 = time.monotonic()
            fams = independent.load(getattr(args, name))
            api = Api(url, create_tenant(url, admin, f"eval-{name}-{nonce}"))
            try:
                res["sets"][name] = independent.run(api, fams, nonce, embed, args.top_k, args.review_timeout, log)
            finally:
                api.close()
            res["sets"][name]["path"] = getattr(args, name)
            res["timings"][f"{name}_s"] = time.monotonic() - t0
        if "corrections" in args.sets:
            t0 = time.monotonic()
            api = Api(url, create_tenant(url, admin, f"eval-corrections-{nonce}"))
            try:
                doc = corrections.read()
                res["sets"]["corrections"] = corrections.run(api, doc["cases"], nonce, args.top_k, log,
                                                             lookalikes=doc.get("lookalikes", []))
            finally:
                api.close()
            res["timings"]["corrections_s"] = time.monotonic() - t0
        if "locomo" in args.sets and "locomo" not in res["skipped"]:
            t0 = time.monotonic()
            turns, questions = locomo.load(args.locomo)
            key = create_tenant(url, admin, f"eval-locomo-{nonce}")
            http = locomo.through_http(url, key, turns, questions, args.threads, log)
            base = locomo.offline_baselines(turns, questions, embed, log)
            http.pop("hits")
            res["sets"]["locomo"] = {"turns": len(turns), "questions": len(questions), "hindsight": http, **base}
            res["timings"]["locomo_s"] = time.monotonic() - t0
        if "retail" in args.sets and "retail" not in res["skipped"]:
            t0 = time.monotonic()
            api = Api(url, create_tenant(url, admin, f"eval-retail-{nonce}"))
            try:
                res["sets"]["retail"] = realrun_sets.run("retail", api, nonce, args.review_timeout, log, args.retail_roles)
            finally:
                api.close()
            res["timings"]["retail_s"] = time.monotonic() - t0
    finally:
        if server is not None:
            if args.keep_data:
                replay.keep(server, args.keep_data, nonce, args.locomo if "locomo" in res["sets"] else None)
            server.stop()
    res["timings"]["total_s"] = time.monotonic() - started
    print_table(res)
    if args.out:
        Path(args.out).write_text(json.dumps(res, indent=2, default=str))
        print(f"results written to {args.out}")
    return 0


def rows(res: dict[str, Any]) -> list[tuple[str, str, str, dict[str, Any]]]:
    """(set, role, system, metrics) in a fixed order."""
    out = []
    sets = res["sets"]
    if "reuse" in sets:
        for which, role in (("dev", "dev"), ("heldout", "held-out")):
            if which not in sets["reuse"]:
                continue
            out.append((f"experience_reuse {role}", role, "hindsight", sets["reuse"][which]["hindsight"]))
            out.append((f"experience_reuse {role}", role, "raw trajectories, dense", sets["reuse"][which]["raw"]))
    for name, role in BLIND_SETS.items():
        if name in sets:
            out.append((name, role, "hindsight", sets[name]["hindsight"]))
            out.append((name, role, "raw trajectories, dense", sets[name]["raw"]))
    if "locomo" in sets:
        s = sets["locomo"]
        out.append(("LoCoMo", "dev", "hindsight (HTTP)", s["hindsight"]))
        for name, label in (("bm25", "BM25"), ("dense", "dense MiniLM"), ("rrf", "RRF(BM25, dense)")):
            out.append(("LoCoMo", "dev", label, s[name]))
    return out


def cell(value: Any, pct: bool) -> str:
    if value is None:
        return "-"
    if isinstance(value, int):
        return str(value)
    return f"{100 * value:.1f}%" if pct else f"{value:.3f}"


def print_table(res: dict[str, Any]) -> None:
    p = print
    p()
    p(f"hindsight evaluation ({res['server']}); every baseline measured in this run")
    header = f"{'set':26} {'role':8} {'system':24} " + " ".join(f"{h:>8}" for _, h, _ in COLUMNS)
    p(header)
    p("-" * len(header))
    for name, role, system, m in rows(res):
        p(f"{name:26} {role:8} {system:24} " + " ".join(f"{cell(m.get(k), pct):>8}" for k, _, pct in COLUMNS))
    for name, why in res["skipped"].items():
        p(f"{LABELS.get(name, name):26} skipped ({why})")
    if "corrections" in res["sets"]:
        c = res["sets"]["corrections"]
        p(f"{'corrections':26} {'dev':8} amendment served above the original: hindsight {cell(c['hindsight']['amendment_first'], True)}"
          f", BM25 {cell(c['bm25']['amendment_first'], True)} ({c['cases']} cases); flagged as a correction when written:"
          f" {cell(c['hindsight']['flagged'], True)}; explained: {cell(c['hindsight']['explained'], True)}")
        h = c["hindsight"]
        p(f"{'':26} {'':8} not corrections, flagged: look-alike pairs {h['lookalikes_flagged']}/{h['lookalikes']}"
          f" ({', '.join(c['lookalikes_flagged']) or 'none'}), another case's lesson {h['stray_flags']}")
    p()
    p("role: dev = changes are decided on it; held-out = report only (run rarely, never tuned on).")
    p("hit@k/MRR: a lesson (or raw trajectory) of the task's own family ranked 1st / in the top 3;")
    p("strict@1: hit@1 where the first item was learned from the task's own family only (not a lesson merged from")
    p("the runs of both siblings); sib1st: the sibling family's ranked first (tests of families with a sibling);")
    p("stsib1st: the same where the siblings share a tool;")
    p("unk@3: hit@3 with tools and task type not given (raw baselines ignore them anyway); fix: the advice block names")
    p("the fix (independent: one of its fix terms in it; raw: in the top 3 trajectories' text; experience_reuse raw: n/a);")
    p("miss@3: tests whose own family is not in the top 3. LoCoMo: turn@10 = an evidence turn among the 10 hits,")
    p("sessR@10 = share of evidence sessions among the hits' sessions (rank order, deduplicated); failed recall = 0.")
    if "locomo" in res["sets"]:
        s = res["sets"]["locomo"]
        h = s["hindsight"]
        p(f"LoCoMo: {s['turns']} turns, {s['questions']} questions (categories 1-4 with evidence); HTTP writes "
          f"{h['write_s']:.0f}s ({h['turns_per_s']:.0f} turns/s), recalls {h['recall_s']:.0f}s, errors {h['errors'] or 'none'}; "
          f"offline baselines {s['seconds']:.0f}s")
        cats = "  ".join(f"cat{c} n={h[f'cat{c}']['n']} {h[f'cat{c}']['turn_any@10']:.3f}/{h[f'cat{c}']['session_r@10']:.3f}"
                         for c in locomo.CATEGORIES if f"cat{c}" in h)
        p(f"LoCoMo hindsight by category (turn@10/sessR@10): {cats}")
    for name in (n for n in BLIND_SETS if n in res["sets"]):
        s = res["sets"][name]
        p(f"{name}: {s['families']} families ({s['same_tool_sibling_families']} with a same-tool sibling), "
          f"{s['tests']} tests, {s['trajectories']} trajectories, {s['experiences']} lessons learned, "
          f"{s['review_failed']} reviews failed")
        if line := compare.spreads(s):
            p(f"  hindsight, 95% over families resampled: {line}")
    if any(n in res["sets"] for n in BLIND_SETS):
        p("Two runs compared test by test, with the interval of their difference: python -m bench.eval.compare BEFORE.json AFTER.json")
    if "retail" in res["sets"]:
        realruns.print_table(res["sets"]["retail"], p)
    t = res["timings"]
    p("timings: " + ", ".join(f"{k[:-2]} {v:.0f}s" for k, v in t.items()))
