"""Fit the recall score's weights on the dev sets only, and print the fit.

    .venv/bin/python -m bench.eval.fit [--save cands.json | --load cands.json]

Procedure (documented in bench/README.md):
1. One fresh server with the hand-set weights. Record and review experience_reuse's training
   trajectories; recall its **dev** tasks with tools known and unknown; write LoCoMo (if
   ``HINDSIGHT_LOCOMO`` is set) as the eval does and recall its questions. Every recall asks for
   ``top_k`` 50, so each query keeps its candidates with their score parts (the explanation).
2. Re-rank each query's candidates offline under every weight vector of a grid (lexical and
   tag_match against semantic; freshness, utility and confidence keep their hand-set values, since
   they are constant on these sets). The score is the service's: the weighted mean of the parts,
   tag_match counting only where the query and the lesson have something to compare (read back from
   the returned score).
3. Objective, each set counting half: experience_reuse dev = mean(hit@1, hit@3, tools-unknown
   hit@3) - sibling first; LoCoMo = mean(turn any@10, session R@10). The best grid point is the fit;
   the held-out sets are never read here (``make eval`` with the fitted weights reports them).
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import secrets
import sys
from pathlib import Path
from statistics import mean
from typing import Any, Sequence

from bench.experience_reuse import run as xr
from bench.experience_reuse.dataset import select
from bench.experience_reuse.service import Api, LocalServer, create_tenant

from . import locomo
from .run import server_env

PARTS = ("semantic", "lexical", "tag_match", "freshness", "utility", "confidence")
HAND = {"semantic": 0.55, "lexical": 0.15, "tag_match": 0.15, "freshness": 0.06, "utility": 0.05, "confidence": 0.04}
GRID = {"lexical": (0.05, 0.1, 0.15, 0.2, 0.3, 0.45, 0.6, 0.8), "tag_match": (0.05, 0.1, 0.15, 0.25, 0.4, 0.6)}
DEPTH = 50


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def weighted(parts: dict[str, float], w: dict[str, float], with_tag: bool) -> float:
    keys = [k for k in PARTS if k != "tag_match" or with_tag]
    return sum(w[k] * parts[k] for k in keys) / sum(w[k] for k in keys)


def tag_counts(hit: dict[str, Any], w: dict[str, float]) -> bool:
    """Whether the service counted tag_match in this hit's score: the explanation reports 0.0 both
    for "nothing to compare" and for "no match", so the returned score (4 decimals) tells."""
    e = hit["explanation"]
    return abs(weighted(e, w, True) - hit["score"]) <= abs(weighted(e, w, False) - hit["score"])


def collect(args) -> dict[str, Any]:
    nonce = secrets.token_hex(3)
    # candidates are collected under the hand-set weights, without rate limits
    # one lexical weight for every lesson, the formula ``weighted`` replays (the service's own
    # default weighs lessons naming no tool apart: HINDSIGHT_WEIGHT_LEXICAL_UNTOOLED)
    with server_env(HINDSIGHT_RATE_LIMIT_PER_SECOND="0", **{f"HINDSIGHT_WEIGHT_{k.upper()}": None for k in HAND},
                    HINDSIGHT_WEIGHT_LEXICAL_UNTOOLED=str(HAND["lexical"])):
        server = LocalServer().start()
    out: dict[str, Any] = {"hand": HAND}
    try:
        api = Api(server.url, create_tenant(server.url, server.admin_key, f"fit-{nonce}"))
        fams = select(None)
        agent_id = f"xr-agent-{nonce}"
        log("fit: recording experience_reuse training trajectories...")
        ids, _ = xr.record_training(api, fams, nonce, agent_id)
        api.wait_reviewed(ids, 900)
        tasks = []
        for known in (True, False):
            for f in fams:  # dev tasks only
                for t in f.tests:
                    body: dict[str, Any] = {"query": t.query, "agent_id": agent_id, "top_k": DEPTH}
                    if known:
                        body |= {"tools": list(f.tools), "task_type": f.task_type}
                    hits = api.recall(**body).get("hits", [])
                    tasks.append({"family": f.id, "sibling": f.sibling, "known": known,
                                  "hits": [{"families": xr.families_of(h["experience"].get("sources", []), nonce),
                                            "score": h["score"], "explanation": h["explanation"]} for h in hits]})
        api.close()
        out["reuse_dev"] = tasks
        if args.locomo:
            turns, questions = locomo.load(args.locomo)
            key = create_tenant(server.url, server.admin_key, f"fit-locomo-{nonce}")
            res = locomo.through_http(server.url, key, turns, questions, 8, log, top_k=DEPTH)
            out["locomo"] = [{"evidence": list(q.evidence), "hits": h} for q, h in zip(questions, res["hits"])]
    finally:
        server.stop()
    return out


def rerank(hits: list[dict[str, Any]], w: dict[str, float]) -> list[dict[str, Any]]:
    scored = [(-weighted(h["explanation"], w, h["with_tag"]), i) for i, h in enumerate(hits)]
    return [hits[i] for _, i in sorted(scored)]


def evaluate(data: dict[str, Any], w: dict[str, float]) -> dict[str, Any]:
    res: dict[str, Any] = {}
    known = [t for t in data["reuse_dev"] if t["known"]]
    unknown = [t for t in data["reuse_dev"] if not t["known"]]

    def rank(t: dict[str, Any]) -> int | None:
        return next((i for i, h in enumerate(rerank(t["hits"], w)) if t["family"] in h["families"]), None)

    def sib(t: dict[str, Any]) -> bool:
        top = rerank(t["hits"], w)[:1]
        return bool(top) and t["family"] not in top[0]["families"] and t["sibling"] in top[0]["families"]

    rk = [rank(t) for t in known]
    res["reuse_dev"] = {
        "hit@1": mean(1.0 if k == 0 else 0.0 for k in rk),
        "hit@3": mean(1.0 if k is not None and k < 3 else 0.0 for k in rk),
        "unknown_hit@3": mean(1.0 if (k := rank(t)) is not None and k < 3 else 0.0 for t in unknown),
        "sibling@1": mean(1.0 if sib(t) else 0.0 for t in known),
    }
    r = res["reuse_dev"]
    objective = [mean((r["hit@1"], r["hit@3"], r["unknown_hit@3"])) - r["sibling@1"]]
    if data.get("locomo"):
        per_q = [locomo.score(locomo.Question(0, "", 0, tuple(q["evidence"])), [h["dias"] for h in rerank(q["hits"], w)])
                 for q in data["locomo"]]
        res["locomo"] = {"turn_any@10": mean(a for a, _ in per_q), "session_r@10": mean(s for _, s in per_q)}
        objective.append(mean(res["locomo"].values()))
    res["objective"] = mean(objective)
    return res


def grid() -> list[dict[str, float]]:
    return [{**HAND, "lexical": lx, "tag_match": tg} for lx, tg in itertools.product(GRID["lexical"], GRID["tag_match"])]


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.eval.fit", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--locomo", default=os.environ.get("HINDSIGHT_LOCOMO"))
    p.add_argument("--save", help="write the collected candidates here")
    p.add_argument("--load", help="fit on candidates collected before (no server)")
    args = p.parse_args(argv)
    data = json.loads(Path(args.load).read_text()) if args.load else collect(args)
    if args.save:
        Path(args.save).write_text(json.dumps(data))
    hand = data["hand"]
    for t in [*data["reuse_dev"], *data.get("locomo", [])]:
        for h in t["hits"]:
            h["with_tag"] = tag_counts(h, hand)
    results = [(w, evaluate(data, w)) for w in grid()]
    results.sort(key=lambda x: -x[1]["objective"])
    base = evaluate(data, hand)
    print(f"Recall weight fit on the dev sets (experience_reuse dev {len(data['reuse_dev']) // 2} tasks x tools known/unknown"
          + (f", LoCoMo {len(data['locomo'])} questions" if data.get("locomo") else ", LoCoMo skipped (HINDSIGHT_LOCOMO not set)")
          + f"; candidates: top {DEPTH} per query under the hand-set weights)")
    print(f"{'weights (sem/lex/tag/fresh/util/conf)':40} {'objective':>9} {'xr hit@1':>8} {'xr hit@3':>8} {'xr unk@3':>8} "
          f"{'xr sib1st':>9} {'turn@10':>8} {'sessR@10':>8}")

    def line(label: str, r: dict[str, Any]) -> None:
        x, lo = r["reuse_dev"], r.get("locomo", {})
        print(f"{label:40} {r['objective']:9.4f} {x['hit@1']:8.3f} {x['hit@3']:8.3f} {x['unknown_hit@3']:8.3f} "
              f"{100 * x['sibling@1']:8.1f}% {lo.get('turn_any@10', float('nan')):8.3f} {lo.get('session_r@10', float('nan')):8.3f}")

    def label(w: dict[str, float]) -> str:
        return "/".join(f"{w[k]:g}" for k in PARTS)

    line(f"hand-set {label(hand)}", base)
    for w, r in results[:8]:
        line(label(w), r)
    best = results[0][0]
    print("fit: " + " ".join(f"HINDSIGHT_WEIGHT_{k.upper()}={best[k]:g}" for k in PARTS))
    return 0


if __name__ == "__main__":
    sys.exit(main())
