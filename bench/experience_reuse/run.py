"""The experience-reuse benchmark: record training trajectories, recall on new tasks, simulate an agent.

    .venv/bin/python -m bench.experience_reuse [--families N] [--tasks dev|heldout|all] [--out results.json]
        [--url URL --api-key KEY | --url URL --admin-key KEY] [--keep-server] [--no-round2] [-v]
        [--llm-stub | --llm local]
"""
from __future__ import annotations

import argparse
import atexit
import dataclasses
import os
import json
import secrets
import sys
import time
from collections import Counter
from collections import defaultdict
from pathlib import Path
from statistics import mean
from typing import Any, Sequence

from . import agent as sim
from . import metrics
from .dataset import select
from .heldout import HELDOUT
from .metrics import TARGETS, TaskRecord
from .schema import Family, validate
from .service import Api, LocalServer, create_tenant

CONDITIONS = {
    "known": "hindsight recall, tools known",
    "unknown": "hindsight recall, tools unknown",
    "raw": "baseline a: raw trajectories, cosine",
    "exp": "baseline b: experiences, cosine only",
    "round2": "hindsight, tools known, after round 2 *",
}


TASK_SETS = ("dev", "heldout", "all")


def with_tasks(fams: Sequence[Family], which: str) -> tuple[Family, ...]:
    """The families with their test tasks replaced by the chosen set: dev (``Family.tests``, the tasks
    the engine was tuned on), heldout (``heldout.HELDOUT``), or all (dev then heldout)."""
    if which == "dev":
        return tuple(fams)
    if which == "heldout":
        return tuple(dataclasses.replace(f, tests=HELDOUT[f.id]) for f in fams)
    if which == "all":
        return tuple(dataclasses.replace(f, tests=(*f.tests, *HELDOUT[f.id])) for f in fams)
    raise ValueError(f"unknown task set {which!r}")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.experience_reuse", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--families", type=int, default=None, help="only the first N families (rounded up to whole sibling pairs)")
    p.add_argument("--tasks", choices=TASK_SETS, default="dev",
                   help="test tasks to recall and simulate: dev (dataset.py, tuned on), heldout (heldout.json), all (both)")
    p.add_argument("--url", help="an existing server instead of starting one")
    p.add_argument("--api-key", help="a tenant key on --url (the run uses its own agent_id, so other data is not seen)")
    p.add_argument("--admin-key", help="admin key on --url: a new tenant is created for the run")
    p.add_argument("--keep-server", action="store_true", help="leave the started server running (prints URL and keys)")
    p.add_argument("--out", help="write the full results as JSON here")
    p.add_argument("--seed", type=int, default=7, help="seed of the simulated agent's exploration")
    p.add_argument("--top-k", type=int, default=5, help="top_k of each recall (the agent's default is 5)")
    p.add_argument("--no-round2", action="store_true", help="skip recording the simulated runs back")
    p.add_argument("--review-timeout", type=float, default=600.0, help="seconds to wait for all reviews")
    p.add_argument("-v", "--verbose", action="store_true", help="print every failing task with its top hit")
    llm = p.add_mutually_exclusive_group()
    llm.add_argument("--llm-stub", action="store_true",
                     help="review with the LLM reviewer, pointed at the local OpenAI-compatible stub (devtools.openai_stub)")
    llm.add_argument("--llm", choices=("local",),
                     help="local: review with the LLM reviewer and a real small model (SmolLM2-135M through "
                          "devtools.local_llm, one thread, lessons-only answers)")
    return p.parse_args(argv)


# The local model's reviewer settings: lessons-only answers, capped, and a timeout after which the
# rules' lessons stand alone (the same as tests/llm).
LOCAL_LLM_ENV = {"HINDSIGHT_LLM_ANSWER": "lessons", "HINDSIGHT_LLM_MAX_TOKENS": "320", "HINDSIGHT_LLM_TIMEOUT_SECONDS": "60",
                 "HINDSIGHT_LLM_TIMEOUT_FALLBACK": "true", "HINDSIGHT_LLM_MAX_RETRIES": "0"}


def _percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0


def llm_figures(reviewed: dict[str, dict[str, Any]]) -> dict[str, Any] | None:
    """What the LLM did across the reviews (full and local) of these trajectories, from their review
    summaries: answers dropped by outcome, lessons accepted and rejected by reason, the quality
    gate's rejections, and the latency of the model calls. None when no review asked a model."""
    summaries = []
    for t in reviewed.values():
        review = t.get("review") or {}
        summaries += [review, *review.get("local", [])]
    asked = [s for s in summaries if isinstance(s.get("llm_lessons"), dict)]
    if not asked:
        return None
    lat = [s["llm_lessons"]["latency_ms"] for s in asked]
    return {
        "reviews": len(asked),
        "outcomes": dict(Counter(s["llm_lessons"]["outcome"] for s in asked)),
        "proposed": sum(s["llm_lessons"]["proposed"] for s in asked),
        "accepted": sum(s["llm_lessons"]["accepted"] for s in asked),
        "rejected": dict(Counter(r["reason"] for s in asked for r in s["llm_lessons"]["rejected"])),
        "gate_rejected": dict(Counter(r["reason"] for s in summaries for r in s.get("rejected", []))),
        "latency_ms": {"p50": _percentile(lat, 0.5), "p95": _percentile(lat, 0.95), "max": max(lat)},
    }


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# --- ids ---------------------------------------------------------------------------------------------


def tid(nonce: str, fam: Family, tag: str) -> str:
    return f"xr.{nonce}.{fam.id}.{tag}"


def families_of(sources: Sequence[str], nonce: str) -> list[str]:
    out = []
    for s in sources or []:
        parts = str(s).split(".")
        if len(parts) >= 4 and parts[0] == "xr" and parts[1] == nonce and parts[2] not in out:
            out.append(parts[2])
    return out


# --- phases ------------------------------------------------------------------------------------------


def record_training(api: Api, fams: Sequence[Family], nonce: str, agent_id: str) -> tuple[list[str], list[dict[str, Any]]]:
    """Every training trajectory, as an agent records it. Returns the ids and their plain-text renderings."""
    ids, texts = [], []
    for fam in fams:
        runs: list[tuple[str, str, list, str | None, str]] = [
            (tid(nonce, fam, f"t{i}"), r.goal, sim.training_calls(fam, r), None, "success") for i, r in enumerate(fam.train)
        ]
        if fam.fail:
            runs.append((tid(nonce, fam, "f0"), fam.fail.goal, sim.failing_calls(fam, fam.fail),
                         fam.fail.feedback if fam.fail.mode == "feedback" else None, "failure"))
        for traj_id, goal, calls, feedback, outcome in runs:
            events = sim.trajectory_events(goal, calls, feedback)
            api.record({"trajectory_id": traj_id, "agent_id": agent_id, "goal": goal, "task_type": fam.task_type,
                        "tools": list(fam.tools)}, events, outcome)
            ids.append(traj_id)
            texts.append({"id": traj_id, "family": fam.id,
                          "text": sim.render_trajectory(goal, fam.task_type, fam.tools, events, outcome)})
    return ids, texts


def recall_condition(api: Api, fams: Sequence[Family], nonce: str, agent_id: str, top_k: int, known: bool) -> list[TaskRecord]:
    out = []
    for fam in fams:
        for i, task in enumerate(fam.tests):
            body: dict[str, Any] = {"query": task.query, "agent_id": agent_id, "top_k": top_k}
            if known:
                body |= {"tools": list(fam.tools), "task_type": fam.task_type}
            resp = api.recall(**body)
            hits = resp.get("hits", [])
            items = sim.advice_items(resp.get("advice", ""))
            out.append(TaskRecord(
                family=fam.id, sibling=fam.sibling, kind=fam.kind, task_index=i, query=task.query,
                ranked=[families_of(h["experience"].get("sources", []), nonce) for h in hits],
                items=items,
                item_ids=_items_to_hits(items, hits),
                top=[{"experience_id": h["experience"]["experience_id"], "families": families_of(h["experience"].get("sources", []), nonce),
                      "score": h.get("score"), "advice": h["experience"].get("advice", "")} for h in hits],
            ))
    return out


def _items_to_hits(items: list[str], hits: list[dict[str, Any]]) -> list[str | None]:
    """Which experience each advice item renders (by its advice text; position as a fallback)."""
    ids: list[str | None] = []
    for n, item in enumerate(items):
        match = None
        for h in hits:
            adv = " ".join(str(h["experience"].get("advice", "")).split())
            if adv and adv in " ".join(item.split()):
                match = h["experience"]["experience_id"]
                break
        if match is None and n < len(hits) and len(items) == len(hits):
            match = hits[n]["experience"]["experience_id"]
        ids.append(match)
    return ids


def cosine_condition(fams: Sequence[Family], docs: list[dict[str, Any]], embed, top_k: int, with_advice: bool) -> list[TaskRecord]:
    """Rank documents by cosine against each test query; ``docs``: {families, text, advice?, id}."""
    import numpy as np

    doc_vecs = embed([d["text"] for d in docs]) if docs else np.zeros((0, 384), dtype=np.float32)
    tasks = [(fam, i, t) for fam in fams for i, t in enumerate(fam.tests)]
    q_vecs = embed([t.query for _, _, t in tasks])
    out = []
    for (fam, i, task), q in zip(tasks, q_vecs):
        sims = doc_vecs @ q if len(docs) else np.zeros(0)
        order = list(np.argsort(-sims, kind="stable")[:top_k])
        ranked = [docs[j]["families"] for j in order]
        items = [" ".join(docs[j]["advice"].split()) for j in order] if with_advice else None
        out.append(TaskRecord(
            family=fam.id, sibling=fam.sibling, kind=fam.kind, task_index=i, query=task.query, ranked=ranked, items=items,
            item_ids=[docs[j]["id"] for j in order] if with_advice else [],
            top=[{"id": docs[j]["id"], "families": docs[j]["families"], "score": round(float(sims[j]), 4),
                  **({"advice": docs[j]["advice"]} if with_advice else {})} for j in order],
        ))
    return out


def simulate(records: list[TaskRecord], by_id: dict[str, Family], seed: int) -> None:
    for r in records:
        if r.items is None:
            continue
        fam = by_id[r.family]
        r.fix_item = next((n for n, item in enumerate(r.items) if fam.fix.named_in(item)), None)
        r.sim = sim.run_with_memory(fam, fam.tests[r.task_index].v, str(r.task_index), seed, r.items)


def round_two(api: Api, records: list[TaskRecord], by_id: dict[str, Family], nonce: str, agent_id: str) -> dict[str, Any]:
    """The agent's runs with memory are recorded back; the lessons it followed get feedback."""
    ids, signals = [], defaultdict(int)
    for r in records:
        fam, task = by_id[r.family], by_id[r.family].tests[r.task_index]
        assert r.sim is not None
        calls = sim.simulated_calls(fam, task.v, r.sim.plan)
        traj_id = tid(nonce, fam, f"s{r.task_index}")
        api.record({"trajectory_id": traj_id, "agent_id": agent_id, "goal": task.query, "task_type": fam.task_type,
                    "tools": list(fam.tools)}, sim.trajectory_events(task.query, calls), "success")
        ids.append(traj_id)
        for key, item_idx in r.sim.advised:
            exp_id = r.item_ids[item_idx] if item_idx < len(r.item_ids) else None
            if exp_id:
                signal = "succeeded" if key == "fix" else "failed"
                api.feedback(exp_id, signal)
                signals[signal] += 1
    return {"trajectories": ids, "feedback": dict(signals)}


# --- reporting ---------------------------------------------------------------------------------------


def fmt(x: float | None, pct: bool = False, width: int = 6) -> str:
    if x is None:
        return "n/a".rjust(width)
    return (f"{100 * x:.1f}%" if pct else f"{x:.3f}").rjust(width)


def family_learning(fams: Sequence[Family], exps: list[dict[str, Any]], nonce: str,
                    archived: list[dict[str, Any]] = ()) -> dict[str, dict[str, Any]]:
    owner = {e["experience_id"]: families_of(e.get("sources", []), nonce) for e in [*exps, *archived]}
    out = {}
    for fam in fams:
        mine = [e for e in exps if fam.id in families_of(e.get("sources", []), nonce)]
        gone = [e for e in archived if fam.id in families_of(e.get("sources", []), nonce)]
        out[fam.id] = {
            "archived": [{"experience_id": e["experience_id"], "reason": e.get("status_reason"), "advice": e.get("advice", ""),
                          "support": e.get("support"), "replaced_by_family": _replaced_by(e, owner)} for e in gone],
            "experiences": len(mine),
            "names_fix": sum(1 for e in mine if fam.fix.named_in(e.get("advice", ""))),
            "max_support": max((e.get("support", 1) for e in mine), default=0),
            "advice": [e.get("advice", "") for e in sorted(mine, key=lambda e: -e.get("support", 1))],
        }
    return out


def _replaced_by(exp: dict[str, Any], owner: dict[str, list[str]]) -> list[str]:
    reason = str(exp.get("status_reason") or "")
    other = reason.split("superseded by ", 1)[1].strip() if "superseded by " in reason else exp.get("superseded_by")
    return owner.get(str(other), []) if other else []


def cross_matches(fams: Sequence[Family], exps: list[dict[str, Any]], nonce: str) -> list[dict[str, str]]:
    """Lessons of one family whose advice matches another family's fix pattern (a check on the dataset:
    such matches would let a wrong lesson count as naming the fix)."""
    out = []
    for e in exps:
        own = families_of(e.get("sources", []), nonce)
        for fam in fams:
            if fam.id not in own and fam.fix.named_in(e.get("advice", "")):
                out.append({"experience_id": e["experience_id"], "from": ",".join(own), "matches_fix_of": fam.id})
    return out


def print_report(res: dict[str, Any], fams: Sequence[Family], records: dict[str, list[TaskRecord]], verbose: bool) -> None:
    p = print
    m = res["metrics"]
    n_tasks = sum(len(f.tests) for f in fams)
    p()
    p(f"hindsight experience reuse: {len(fams)} families in {len(fams) // 2} sibling pairs, "
      f"{res['counts']['training_trajectories']} training trajectories, {n_tasks} test tasks ({res['config']['tasks']} set)")
    if res["server"].startswith("fresh"):
        p(f"server: {res['server']}; embedder: all-MiniLM-L6-v2 (ONNX int8) in the server and in the baselines")
    else:
        p(f"server: {res['server']} (its own embedder); baselines: all-MiniLM-L6-v2 (ONNX int8)")
    p(f"reviewed {res['counts']['reviewed']}/{res['counts']['training_trajectories']} "
      f"(review_failed: {res['counts']['review_failed']}) in {res['timings']['review_wait_s']:.1f}s; "
      f"{res['counts']['experiences']} active experiences learned ({res['counts']['archived']} archived); "
      f"reviewers: {res['counts']['reviewers']}")
    llm = res["counts"].get("llm")
    if llm:
        lat = llm["latency_ms"]
        p(f"LLM: {llm['reviews']} reviews asked the model, answers {llm['outcomes']}; lessons proposed {llm['proposed']}, "
          f"accepted {llm['accepted']}, rejected {llm['rejected']}; quality gate rejected {llm['gate_rejected']}; "
          f"latency ms p50 {lat['p50']:.0f} p95 {lat['p95']:.0f} max {lat['max']:.0f}")
    p()
    p("Retrieval (top_k=%d; a hit = an experience learned from a training trajectory of the task's family)" % res["config"]["top_k"])
    header = f"{'':42} {'hit@1':>6} {'hit@3':>6} {'MRR':>6} {'sib@1':>6} {'oth@1':>6} {'nohit':>6} {'fix':>6} {'fix#1':>6}"
    p(header)
    p("-" * len(header))
    for key in ("known", "unknown", "raw", "exp", "round2"):
        if key not in m:
            continue
        r = m[key]["retrieval"]
        p(f"{CONDITIONS[key]:42} {fmt(r['hit@1'])} {fmt(r['hit@3'])} {fmt(r['mrr'])} {fmt(r['sibling@1'], True)} "
          f"{fmt(r['other@1'], True)} {fmt(r['no_hit'], True)} {fmt(r['names_fix'])} {fmt(r['fix_in_item1'])}")
    p(f"{'target (tools known)':42} {'':>6} {'>=0.95':>6} {'':>6} {'<=2%':>6}")
    p("  sib@1 = the sibling family's lesson ranked first; oth@1 = another family's; fix = the advice block names the fix")
    p("  (an item matches the family's fix pattern); fix#1 = its first item does. * round 2 re-uses the test tasks: not held out.")
    p()
    p("Simulated agent (steps = tool calls until the task succeeds; without memory: naive attempt, 1-3 wrong tries, fix)")
    header = f"{'':42} {'no mem':>7} {'memory':>7} {'ratio':>6} {'fix 1st':>7} {'misled':>7} {'worse':>6}"
    p(header)
    p("-" * len(header))
    for key in ("known", "unknown", "exp", "round2"):
        a = m.get(key, {}).get("agent")
        if a:
            p(f"{CONDITIONS[key]:42} {a['steps_without_memory']:7.2f} {a['steps_with_memory']:7.2f} {a['ratio']:6.2f} "
              f"{fmt(a['fix_first'], True, 7)} {fmt(a['misled'], True, 7)} {fmt(a['worse_than_without'], True)}")
    p(f"{'target':42} {'':>7} {'':>7} {'>=2.00':>6}")
    p("  misled = the advice sent the agent to a wrong alternative first; worse = more steps than without memory")
    p()
    kinds = defaultdict(list)
    for r in records["known"]:
        kinds[r.kind].append(r)
    p("By rule kind (tools known):  " + "   ".join(
        f"{k}: hit@3 {metrics.retrieval(v)['hit@3']:.2f} fix {metrics.retrieval(v)['names_fix']:.2f}" for k, v in sorted(kinds.items())))
    p()
    per = sorted({len(f.tests) for f in fams})
    p(f"Per family ({'/'.join(map(str, per))} test tasks each)     known: hit@1 hit@3 sib@1  fix | unknown hit@3 | raw hit@3 | exp hit@3 | steps no/mem | learned (names fix)")
    learn = res["learning"]["before"]
    for fam in fams:
        def sub(key: str) -> dict[str, Any]:
            return metrics.retrieval([r for r in records[key] if r.family == fam.id]) if key in records else {}
        k, u, raw, ex = sub("known"), sub("unknown"), sub("raw"), sub("exp")
        ag = m["known"]["per_family_agent"][fam.id]
        lf = learn[fam.id]
        flag = " " if k["hit@3"] >= 0.95 and k["names_fix"] >= 0.95 and k["sibling@1"] == 0 else "!"
        p(f"{flag} {fam.id:24} {fam.kind[:5]:5}  {k['hit@1']:5.1f} {k['hit@3']:5.1f} {k['sibling@1']:5.1f} {k['names_fix']:4.1f} |"
          f" {u['hit@3']:13.1f} | {raw['hit@3']:9.1f} | {ex['hit@3']:9.1f} | {ag['without']:5.1f}/{ag['with']:4.1f}  |"
          f" {lf['experiences']} ({lf['names_fix']})")
    p()
    p("Families flagged '!' (tools known: hit@3 < 0.95, or the advice does not always name the fix, or a sibling ranked first):")
    any_flag = False
    for fam in fams:
        for line in diagnose(fam, records, learn[fam.id]):
            any_flag = True
            p("  " + line)
    if not any_flag:
        p("  none")
    if res.get("cross_matches"):
        p(f"\nDataset check: {len(res['cross_matches'])} learned lessons match another family's fix pattern "
          f"(see cross_matches in the JSON); names-fix may be overstated by that much.")
    if verbose:
        p("\nFailing tasks (tools known): query -> top-1 hit")
        for r in records["known"]:
            if r.rank_of_target() != 0 or r.fix_item is None:
                top = r.top[0] if r.top else None
                p(f"  [{r.family}] {r.query!r}")
                p(f"     rank of own lesson: {r.rank_of_target()}; fix named in item: {r.fix_item}; agent plan: {r.sim.plan if r.sim else None}")
                if top:
                    p(f"     top-1 from {top['families']}: {top['advice'][:160]}")
    p()
    t = res["timings"]
    p(f"timings: start {t['server_start_s']:.1f}s, record {t['record_s']:.1f}s, review wait {t['review_wait_s']:.1f}s, "
      f"recall {t['recall_s']:.1f}s, baselines {t['baselines_s']:.1f}s, round 2 {t.get('round2_s', 0):.1f}s, total {t['total_s']:.1f}s")


def diagnose(fam: Family, records: dict[str, list[TaskRecord]], learned: dict[str, Any]) -> list[str]:
    mine = [r for r in records["known"] if r.family == fam.id]
    k = metrics.retrieval(mine)
    if k["hit@3"] >= 0.95 and k["names_fix"] >= 0.95 and k["sibling@1"] == 0:
        return []
    reasons = []
    for a in learned.get("archived", []):
        by = ",".join(a["replaced_by_family"]) or "?"
        reasons.append(f"its lesson {a['advice'][:90]!r} (support {a['support']}) was archived: {a['reason']} (a lesson of {by})")
    if learned["experiences"] == 0:
        reasons.append("nothing was learned from its training trajectories")
    elif learned["names_fix"] == 0:
        first = learned["advice"][0] if learned["advice"] else ""
        reasons.append(f"no learned lesson names the fix ({fam.rule}); e.g. learned: {first[:150]!r}")
    missed = [r for r in mine if (r.rank_of_target() is None or r.rank_of_target() >= 3)]
    if missed:
        tops = defaultdict(int)
        for r in missed:
            tops[",".join(r.top1()) or "nothing"] += 1
        reasons.append(f"own lesson not in top 3 for {len(missed)}/{len(mine)}; top-1 came from " + ", ".join(f"{f} x{n}" for f, n in tops.items()))
    sib = [r for r in mine if r.ranked and fam.id not in r.top1() and fam.sibling in r.top1()]
    if sib:
        reasons.append(f"sibling {fam.sibling} ranked first for {len(sib)}/{len(mine)}")
    unnamed = [r for r in mine if r.fix_item is None and r.rank_of_target() is not None]
    if unnamed and learned["names_fix"]:
        reasons.append(f"own lesson retrieved but no advice item names the fix for {len(unnamed)}/{len(mine)}")
    return [f"{fam.id}: " + "; ".join(reasons)] if reasons else [f"{fam.id}: (see per-task details with -v)"]


# --- main --------------------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    fams = with_tasks(select(args.families), args.tasks)
    validate(fams)
    by_id = {f.id: f for f in fams}
    nonce = secrets.token_hex(3)
    agent_id = f"xr-agent-{nonce}"
    timings: dict[str, float] = {}
    t_all = time.monotonic()

    server = local_llm = None
    if args.url:
        url = args.url
        if args.api_key:
            key = args.api_key
        elif args.admin_key:
            key = create_tenant(url, args.admin_key, f"experience-reuse-{nonce}")
        else:
            raise SystemExit("--url needs --api-key (a tenant key) or --admin-key")
        server_desc = f"existing {url}"
    else:
        t0 = time.monotonic()
        if args.llm_stub:  # the real OpenAI client in the server, talking to a local stub
            from devtools.openai_stub import OpenAIStub

            stub = OpenAIStub().__enter__()
            os.environ["HINDSIGHT_OPENAI_BASE_URL"] = stub.base_url
            log(f"LLM reviewer on the stub at {stub.base_url}")
        if args.llm == "local":  # the real OpenAI client in the server, talking to a real small model
            from devtools.local_llm import LocalLLM

            local_llm = LocalLLM().start()
            if not args.keep_server:  # whatever happens next, the model's process ends with this one
                atexit.register(local_llm.stop)
            os.environ |= LOCAL_LLM_ENV | {"HINDSIGHT_OPENAI_BASE_URL": local_llm.base_url,
                                           "HINDSIGHT_REVIEW_MODEL_FULL": local_llm.model}
            log(f"LLM reviewer on the local model at {local_llm.base_url} (loaded in {local_llm.load_seconds:.1f}s)")
        log("starting a fresh server (real MiniLM embedder)...")
        server = LocalServer(keep=args.keep_server).start()
        timings["server_start_s"] = time.monotonic() - t0
        url = server.url
        key = create_tenant(url, server.admin_key, f"experience-reuse-{nonce}")
        extra = {k: v for k, v in server.passed_env.items() if k not in ("HINDSIGHT_DATA_DIR", "HINDSIGHT_EMBEDDER")}
        server_desc = f"fresh process on {url}" + (f" with {extra}" if extra else "")
    timings.setdefault("server_start_s", 0.0)
    api = Api(url, key)
    try:
        res = run(api, fams, by_id, nonce, agent_id, args, timings, t_all, server_desc)
    finally:
        api.close()
        if server is not None:
            if args.keep_server:
                log(f"server kept running: {server.url} (pid {server.proc.pid}), data {server.data_dir}, "
                    f"admin key in {server.data_dir / 'admin_key'}, tenant key {key}, agent_id {agent_id}")
            server.stop()
            if local_llm is not None and args.keep_server:
                log(f"local model kept running: {local_llm.base_url} (pid {local_llm.proc.pid})")
    return 0


def run(api: Api, fams, by_id, nonce, agent_id, args, timings, t_all, server_desc) -> dict[str, Any]:
    t0 = time.monotonic()
    log(f"recording training trajectories (agent_id {agent_id})...")
    train_ids, raw_docs = record_training(api, fams, nonce, agent_id)
    timings["record_s"] = time.monotonic() - t0

    t0 = time.monotonic()
    reviewed = api.wait_reviewed(train_ids, args.review_timeout)
    timings["review_wait_s"] = time.monotonic() - t0
    exps = [e for e in api.experiences(agent_id) if families_of(e.get("sources", []), nonce)]
    archived = [e for e in api.experiences(agent_id, "archived") if families_of(e.get("sources", []), nonce)]
    log(f"{len(exps)} experiences learned; recalling {sum(len(f.tests) for f in fams)} test tasks x 2 conditions...")

    t0 = time.monotonic()
    records: dict[str, list[TaskRecord]] = {
        "known": recall_condition(api, fams, nonce, agent_id, args.top_k, known=True),
        "unknown": recall_condition(api, fams, nonce, agent_id, args.top_k, known=False),
    }
    timings["recall_s"] = time.monotonic() - t0

    t0 = time.monotonic()
    log("baselines (in-process MiniLM)...")
    from chalicelib.adapters.embedders.onnx import OnnxMiniLMEmbedder

    embedder = OnnxMiniLMEmbedder()
    raw = [{"id": d["id"], "families": [d["family"]], "text": d["text"]} for d in raw_docs]
    records["raw"] = cosine_condition(fams, raw, embedder.embed, args.top_k, with_advice=False)
    exp_docs = [{"id": e["experience_id"], "families": families_of(e.get("sources", []), nonce),
                 "text": f"{e.get('situation', '')} {e.get('lesson', '')}".strip(), "advice": e.get("advice", "")} for e in exps]
    records["exp"] = cosine_condition(fams, exp_docs, embedder.embed, args.top_k, with_advice=True)
    timings["baselines_s"] = time.monotonic() - t0

    no_memory = {(f.id, i): sim.run_without_memory(f, t.v, str(i), args.seed) for f in fams for i, t in enumerate(f.tests)}
    for key in ("known", "unknown", "exp"):
        simulate(records[key], by_id, args.seed)

    learning = {"before": family_learning(fams, exps, nonce, archived)}
    round2: dict[str, Any] = {}
    if not args.no_round2:
        t0 = time.monotonic()
        log("round 2: recording the agent's runs with memory and its feedback...")
        round2 = round_two(api, records["known"], by_id, nonce, agent_id)
        api.wait_reviewed(round2["trajectories"], args.review_timeout)
        exps2 = [e for e in api.experiences(agent_id) if families_of(e.get("sources", []), nonce)]
        archived2 = [e for e in api.experiences(agent_id, "archived") if families_of(e.get("sources", []), nonce)]
        records["round2"] = recall_condition(api, fams, nonce, agent_id, args.top_k, known=True)
        simulate(records["round2"], by_id, args.seed)
        learning["after_round2"] = family_learning(fams, exps2, nonce, archived2)
        round2["experiences_after"] = len(exps2)
        round2["support"] = {
            "before": _support_stats(exps), "after": _support_stats(exps2),
        }
        timings["round2_s"] = time.monotonic() - t0
    timings["total_s"] = time.monotonic() - t_all

    m: dict[str, Any] = {}
    for key, recs in records.items():
        m[key] = {"retrieval": metrics.retrieval(recs), "agent": metrics.agent(recs, no_memory)}
    m["known"]["per_family_agent"] = {
        f.id: {"without": mean(no_memory[(f.id, i)].steps for i in range(len(f.tests))),
               "with": mean(r.sim.steps for r in records["known"] if r.family == f.id)}
        for f in fams
    }
    res: dict[str, Any] = {
        "config": {"families": [f.id for f in fams], "tasks": args.tasks, "top_k": args.top_k, "seed": args.seed, "agent_id": agent_id, "nonce": nonce},
        "server": server_desc,
        "targets": TARGETS,
        "counts": {
            "training_trajectories": len(train_ids),
            "reviewed": sum(1 for t in reviewed.values() if t["status"] == "reviewed"),
            "review_failed": sum(1 for t in reviewed.values() if t["status"] == "review_failed"),
            "reviewers": dict(Counter(str((t.get("review") or {}).get("reviewer", "-")) for t in reviewed.values())),
            "llm": llm_figures(reviewed),
            "experiences": len(exps),
            "archived": len(archived),
        },
        "timings": timings,
        "metrics": m,
        "learning": learning,
        "round2": {k: v for k, v in round2.items() if k != "trajectories"},
        "cross_matches": cross_matches(fams, exps, nonce),
        "experiences": [{"experience_id": e["experience_id"], "families": families_of(e.get("sources", []), nonce),
                         "support": e.get("support"), "confidence": e.get("confidence"), "task_type": e.get("task_type"),
                         "tools": e.get("tools"), "situation": e.get("situation"), "lesson": e.get("lesson"),
                         "advice": e.get("advice")} for e in exps],
        "tasks": {key: [_task_json(r) for r in recs] for key, recs in records.items()},
        "no_memory_plans": {f"{f}#{i}": s.plan for (f, i), s in no_memory.items()},
    }
    print_report(res, fams, records, args.verbose)
    if round2:
        s = round2["support"]
        print(f"round 2: {len(round2['trajectories'])} simulated runs recorded, feedback sent {round2['feedback']}; "
              f"experiences {len(exps)} -> {round2['experiences_after']}; lessons with support >= 2: "
              f"{s['before']['support>=2']} -> {s['after']['support>=2']}; mean support {s['before']['mean']:.2f} -> {s['after']['mean']:.2f}")
    if args.out:
        Path(args.out).write_text(json.dumps(res, indent=2, default=str))
        print(f"results written to {args.out}")
    return res


def _support_stats(exps: list[dict[str, Any]]) -> dict[str, Any]:
    sup = [e.get("support", 1) or 1 for e in exps]
    return {"n": len(sup), "mean": mean(sup) if sup else 0.0, "support>=2": sum(1 for s in sup if s >= 2),
            "max": max(sup, default=0)}


def _task_json(r: TaskRecord) -> dict[str, Any]:
    return {
        "family": r.family, "task": r.task_index, "query": r.query, "rank_of_own_lesson": r.rank_of_target(),
        "fix_named_in_item": r.fix_item, "top": r.top,
        **({"agent_plan": r.sim.plan, "agent_steps": r.sim.steps, "advised": r.sim.advised} if r.sim else {}),
    }
