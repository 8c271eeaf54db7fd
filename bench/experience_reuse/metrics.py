"""Retrieval and agent metrics over test tasks. Pure functions of the per-task records."""
from __future__ import annotations

from dataclasses import dataclass, field
from statistics import mean
from typing import Any, Sequence

from .agent import SimRun

TARGETS = {"hit@3": 0.95, "sibling@1": 0.02, "steps_ratio": 2.0}


@dataclass
class TaskRecord:
    family: str
    sibling: str
    kind: str
    task_index: int
    query: str
    ranked: list[list[str]]  # families of each ranked item (an item may be learned from several)
    items: list[str] | None = None  # advice items the agent reads (None: this condition gives no advice)
    item_ids: list[str | None] = field(default_factory=list)  # experience behind each item, when known
    top: list[dict[str, Any]] = field(default_factory=list)  # what was ranked, for the JSON report
    fix_item: int | None = None  # index of the first advice item naming the fix
    sim: SimRun | None = None

    def rank_of_target(self) -> int | None:
        return next((i for i, fams in enumerate(self.ranked) if self.family in fams), None)

    def top1(self) -> list[str]:
        return self.ranked[0] if self.ranked else []


def retrieval(records: Sequence[TaskRecord]) -> dict[str, float | None]:
    if not records:
        return {}
    ranks = [r.rank_of_target() for r in records]
    wrong1 = [r for r in records if r.ranked and r.family not in r.top1()]
    out: dict[str, float | None] = {
        "n": len(records),
        "hit@1": mean(1.0 if k == 0 else 0.0 for k in ranks),
        "hit@3": mean(1.0 if k is not None and k < 3 else 0.0 for k in ranks),
        "mrr": mean(1.0 / (k + 1) if k is not None else 0.0 for k in ranks),
        "sibling@1": sum(1 for r in wrong1 if r.sibling in r.top1()) / len(records),
        "other@1": sum(1 for r in wrong1 if r.sibling not in r.top1()) / len(records),
        "no_hit": sum(1 for r in records if not r.ranked) / len(records),
        "names_fix": None,
        "fix_in_item1": None,
    }
    if all(r.items is not None for r in records):
        out["names_fix"] = mean(1.0 if r.fix_item is not None else 0.0 for r in records)
        out["fix_in_item1"] = mean(1.0 if r.fix_item == 0 else 0.0 for r in records)
    return out


def agent(records: Sequence[TaskRecord], no_memory: dict[tuple[str, int], SimRun]) -> dict[str, float] | None:
    sims = [(no_memory[(r.family, r.task_index)], r.sim) for r in records if r.sim is not None]
    if not sims:
        return None
    without = mean(a.steps for a, _ in sims)
    with_mem = mean(b.steps for _, b in sims)
    return {
        "steps_without_memory": without,
        "steps_with_memory": with_mem,
        "ratio": without / with_mem if with_mem else float("inf"),
        "fix_first": mean(1.0 if b.fix_first else 0.0 for _, b in sims),
        "misled": mean(1.0 if any(k != "fix" for k, _ in b.advised) else 0.0 for _, b in sims),
        "worse_than_without": mean(1.0 if b.steps > a.steps else 0.0 for a, b in sims),
    }
