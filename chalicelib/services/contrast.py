"""Contrast across runs (``domain.divergence``), over the ports: the successful runs of a scope are
remembered as their calls, and a failed run without any tool error is compared with those of
similar tasks.

Each scope (tenant, agent, user) keeps the calls of its last ``REMEMBERED`` successful runs (the
tools, and each argument's kind: never a value) under one named checkpoint
(``ports.Checkpoints``): a review reads one small document, whatever the number of runs stored,
and the name holds the tenant, so no other tenant's runs are ever read. Similar tasks: a goal whose
embedding is at least ``SIMILAR_GOAL`` (rebased cosine) from the failed run's, the
``MAX_COMPARED`` closest. Two reviews of one scope that save at once can lose one run from the
list (the last write wins): a run fewer to compare, never a wrong one.
"""
from __future__ import annotations

import hashlib
from typing import Any, Sequence

from ..domain.divergence import RunCalls, contrast_across_runs, contrast_lesson, run_calls, worth_contrasting
from ..domain.lesson import LessonDraft
from ..domain.models import Event, Trajectory
from ..domain.vectors import rebased
from .deps import Deps
from .indexing import Embedded, embed_texts

REMEMBERED = 64  # successful runs kept per scope
SIMILAR_GOAL = 0.5  # rebased cosine of two goals for their tasks to be alike (MiniLM: the same task 1.0, one of its kind 0.5-0.9)
MAX_COMPARED = 12  # successful runs a failed run is compared with


def register_name(traj: Trajectory) -> str:
    scope = hashlib.sha256(f"{traj.agent_id or ''}|{traj.user_id or ''}".encode()).hexdigest()[:24]
    return f"successful-runs/{traj.tenant_id}/{scope}"


def scopes_name(tenant_id: str) -> str:
    """The checkpoint that lists the names of a tenant's registers (``register_name``), for its deletion."""
    return f"successful-runs/{tenant_id}"


def tenant_checkpoints(deps: Deps, tenant_id: str) -> list[str]:
    """The names of the tenant's registers of successful runs, and of the list of them."""
    if deps.checkpoints is None:
        return []
    listed = (deps.checkpoints.load(scopes_name(tenant_id)) or {}).get("names")
    return [*(n for n in listed or [] if isinstance(n, str)), scopes_name(tenant_id)]


def _remembered(deps: Deps, traj: Trajectory) -> list[dict[str, Any]]:
    if deps.checkpoints is None:
        return []
    state = deps.checkpoints.load(register_name(traj)) or {}
    runs = state.get("runs")
    return [r for r in runs if isinstance(r, dict)] if isinstance(runs, list) else []


def remember_success(deps: Deps, traj: Trajectory, events: Sequence[Event]) -> bool:
    """Keep a successful run's calls for the failed runs of its scope to be compared with."""
    if deps.checkpoints is None or traj.outcome != "success":
        return False
    run = run_calls(traj.trajectory_id, traj.goal, events)
    if not run.steps:
        return False
    remembered = _remembered(deps, traj)
    if not remembered:  # the scope's first: listed, so that the tenant's deletion finds its register
        listed = deps.checkpoints.load(scopes_name(traj.tenant_id)) or {"names": []}
        if register_name(traj) not in listed["names"]:
            deps.checkpoints.save(scopes_name(traj.tenant_id), {"names": [*listed["names"], register_name(traj)]})
    runs = [r for r in remembered if r.get("id") != traj.trajectory_id] + [run.as_record()]
    deps.checkpoints.save(register_name(traj), {"runs": runs[-REMEMBERED:]})
    return True


def similar_successes(deps: Deps, traj: Trajectory, runs: Sequence[RunCalls],
                      vectors: dict[str, Any] | None = None) -> list[RunCalls]:
    """The remembered runs whose task is like the failed run's, closest first."""
    runs = [r for r in runs if r.run_id != traj.trajectory_id and r.goal]
    if not runs or not traj.goal:
        return []
    vectors = embed_texts(deps, [traj.goal, *(r.goal for r in runs)], Embedded() if vectors is None else vectors)
    mine = vectors[traj.goal]
    scored = [(rebased(float(mine @ vectors[r.goal]), deps.similarity_floor), r) for r in runs]
    close = sorted(((s, r) for s, r in scored if s >= SIMILAR_GOAL), key=lambda x: -x[0])
    return [r for _, r in close[:MAX_COMPARED]]


def contrast_drafts(deps: Deps, traj: Trajectory, events: Sequence[Event],
                    vectors: dict[str, Any] | None = None) -> tuple[list[LessonDraft], dict[str, Any]]:
    """The lesson of a failed run without any tool error, from the successful runs of similar
    tasks in its scope, and what the comparison found (for the review's summary). ``vectors``:
    goals already embedded (a worker's cache: the remembered goals recur from one review to the
    next)."""
    if deps.checkpoints is None or not worth_contrasting(traj.outcome, events):
        return [], {}
    runs = [r for r in (RunCalls.from_record(x) for x in _remembered(deps, traj)) if r is not None]
    similar = similar_successes(deps, traj, runs, vectors)
    found = contrast_across_runs(run_calls(traj.trajectory_id, traj.goal, events), similar, known=runs)
    summary: dict[str, Any] = {"remembered": len(runs), "similar": len(similar)}
    if found is None:
        return [], summary
    summary |= {"divergence": found.divergence.kind, "tool": found.divergence.tool, "supporting": list(found.supporting)}
    return [contrast_lesson(traj, events, found)], summary
