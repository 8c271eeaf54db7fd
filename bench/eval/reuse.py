"""bench/experience_reuse's dev and held-out tasks on one training run: the trajectories are
recorded and reviewed once, then each task set is recalled (tools known and unknown) beside the
raw-trajectory baseline of that benchmark."""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from bench.experience_reuse import metrics as xr_metrics
from bench.experience_reuse import run as xr
from bench.experience_reuse.dataset import select
from bench.experience_reuse.schema import validate

from .independent import strict_first


def same_tool_sibling_rate(fams, recs) -> float | None:
    by = {f.id: f for f in fams}
    rs = [r for r in recs if set(by[r.family].tools) & set(by[r.sibling].tools)]
    if not rs:
        return None
    return sum(1 for r in rs if r.ranked and r.family not in r.top1() and r.sibling in r.top1()) / len(rs)


def _row(fams, recs, unknown) -> dict[str, Any]:
    m = xr_metrics.retrieval(recs)
    return {
        "n": m["n"], "hit@1": m["hit@1"],
        "strict_hit@1": sum(1.0 for r in recs if strict_first(r.family, r.ranked)) / len(recs) if recs else None,
        "hit@3": m["hit@3"], "mrr": m["mrr"], "sibling@1": m["sibling@1"],
        "same_tool_sibling@1": same_tool_sibling_rate(fams, recs), "names_fix": m["names_fix"],
        "unknown_hit@3": xr_metrics.retrieval(unknown)["hit@3"],
        "missing@3": sum(1 for r in recs if (k := r.rank_of_target()) is None or k >= 3),
    }


def run(api, nonce: str, embed: Callable[[list[str]], np.ndarray], top_k: int, review_timeout: float, log,
        task_sets: tuple[str, ...] = ("dev", "heldout")) -> dict[str, Any]:
    """``task_sets``: which of dev and heldout to recall; a development loop names dev alone, so that
    the held-out figures are neither computed nor shown."""
    fams = select(None)
    agent_id = f"xr-agent-{nonce}"
    log(f"experience_reuse: recording the training trajectories of {len(fams)} families...")
    ids, raw_docs = xr.record_training(api, fams, nonce, agent_id)
    reviewed = api.wait_reviewed(ids, review_timeout)
    raw = [{"id": d["id"], "families": [d["family"]], "text": d["text"]} for d in raw_docs]
    out: dict[str, Any] = {
        "trajectories": len(ids),
        "review_failed": sum(1 for t in reviewed.values() if t["status"] == "review_failed"),
    }
    for which in task_sets:
        tasks = xr.with_tasks(fams, which)
        validate(tasks)
        log(f"experience_reuse: recalling the {which} tasks...")
        known = xr.recall_condition(api, tasks, nonce, agent_id, top_k, known=True)
        unknown = xr.recall_condition(api, tasks, nonce, agent_id, top_k, known=False)
        base = xr.cosine_condition(tasks, raw, embed, top_k, with_advice=False)
        xr.simulate(known, {f.id: f for f in tasks}, seed=7)
        out[which] = {"hindsight": _row(fams, known, unknown), "raw": _row(fams, base, base)}
    return out
