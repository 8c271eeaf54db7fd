"""Reviewing finalized trajectories into experiences, from a queue, exactly once in effect.

Order of writes: experiences (the source of truth), then the vector index, then the trajectory's
status. Experience ids are derived from (trajectory, lesson), so a review that crashes half way and
runs again rewrites the same experiences instead of adding new ones.
"""
from __future__ import annotations

import logging
from typing import Any

from ..domain.distill import draft_to_experience, merge_into, passes_quality_gate
from ..domain.errors import NotFound
from ..domain.models import Experience, Trajectory, TrajectoryStatus
from ..ports import IndexEntry, ReviewJob
from .deps import Deps

log = logging.getLogger(__name__)


def index_experiences(deps: Deps, tenant_id: str, experiences: list[Experience]) -> None:
    if not experiences:
        return
    vectors = deps.embedder.embed([e.embedding_text() for e in experiences])
    deps.index.upsert(
        tenant_id,
        [
            IndexEntry(e.experience_id, v, e.agent_id, e.user_id, tuple(e.tools), e.task_type, tuple(e.tags))
            for e, v in zip(experiences, vectors)
        ],
    )


def review_trajectory(deps: Deps, tenant_id: str, trajectory_id: str, kind: str = "full") -> Trajectory:
    traj = deps.trajectories.get(tenant_id, trajectory_id)
    if traj.status is TrajectoryStatus.REVIEWED:
        return traj
    now = deps.clock.now()
    events = deps.trajectories.events(tenant_id, trajectory_id)
    review = deps.reviewer.review(traj, events, kind)
    kept: dict[str, Experience] = {}
    rejected: list[dict[str, Any]] = []
    for draft in review.lessons:
        ok, why = passes_quality_gate(draft)
        if not ok:
            rejected.append({"lesson": draft.lesson, "reason": why})
            continue
        exp = draft_to_experience(draft, traj, now)
        existing = deps.experiences.find_active_by_fingerprint(tenant_id, draft.fingerprint, traj.agent_id, traj.user_id)
        if existing is not None:
            exp = merge_into(existing, exp, now)
        kept[exp.experience_id] = exp
    for exp in kept.values():
        deps.experiences.put(exp)
    index_experiences(deps, tenant_id, list(kept.values()))
    summary = review.summary() | {"rejected": rejected, "merged": sum(1 for e in kept.values() if e.support > 1)}
    return deps.trajectories.save_review(
        tenant_id, trajectory_id, TrajectoryStatus.REVIEWED.value, list(kept), summary, now
    )


def process_review_jobs(deps: Deps, limit: int = 10) -> int:
    """Claim due jobs and run them; failures back off and, after the last attempt, are dead-lettered
    and the trajectory shows ``review_failed`` with the reason. Returns how many jobs ran."""
    now = deps.clock.now()
    jobs = deps.queue.claim(now, deps.review_lease_seconds, limit)
    for job in jobs:
        _run(deps, job)
    return len(jobs)


def _run(deps: Deps, job: ReviewJob) -> None:
    try:
        review_trajectory(deps, job.tenant_id, job.trajectory_id, job.kind)
    except NotFound:
        deps.queue.dead(job, "trajectory not found")
        return
    except Exception as exc:  # any failure of a dependency: retry, never lose the job
        reason = f"{type(exc).__name__}: {exc}"[:500]
        log.warning("review of %s failed (attempt %d): %s", job.trajectory_id, job.attempts, reason)
        if job.attempts >= deps.review_max_attempts:
            deps.queue.dead(job, reason)
            deps.trajectories.save_review(
                job.tenant_id, job.trajectory_id, TrajectoryStatus.REVIEW_FAILED.value, [], {"error": reason},
                deps.clock.now(),
            )
        else:
            deps.queue.retry_later(job, reason, deps.clock.now(), delay_seconds=min(300.0, 2.0**job.attempts))
        return
    deps.queue.complete(job)


def requeue_unreviewed(deps: Deps) -> int:
    """Finalized trajectories whose job was lost (a crash between finalize and enqueue) get one."""
    pending = deps.trajectories.finalized_unreviewed()
    now = deps.clock.now()
    for tenant_id, trajectory_id in pending:
        deps.queue.enqueue(tenant_id, trajectory_id, "full", now)
    return len(pending)
