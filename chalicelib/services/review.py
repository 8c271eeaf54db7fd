"""Reviewing trajectories into experiences, from a queue, exactly once in effect.

Order of writes: experiences (the source of truth), then the vector index, then the trajectory's
status. Experience ids are derived from (trajectory, lesson), so a review that crashes half way and
runs again rewrites the same experiences instead of adding new ones.

Job kinds: ``full`` (on finalize) and ``local:<event_id>`` (an anomaly during ingest; the events
around it are reviewed while the trajectory is still open).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from typing import Any, Collection, Sequence

from ..domain.anomaly import WINDOW, qualifies_for_full_review
from ..domain.distill import (
    draft_to_experience, literals_to_keep, merge_into, passes_quality_gate, should_supersede, specialized_experience,
    supersede,
)
from ..domain.errors import NotFound
from ..domain.models import Experience, ExperienceStatus, Trajectory, TrajectoryStatus
from ..domain.review import Review, task_example
from ..ports import DeadJob, IndexEntry, IndexFilter, ReviewJob
from .deps import Deps

log = logging.getLogger(__name__)


def embed_texts(deps: Deps, texts: list[str], known: dict[str, Any]) -> dict[str, Any]:
    """Vectors of ``texts`` by text; ``known`` ones are reused and the cache is filled in place
    (embedding is the costly step of a review)."""
    missing = [t for t in dict.fromkeys(texts) if t not in known]
    if missing:
        known.update(zip(missing, deps.embedder.embed(missing)))
    return known


def experience_vector(exp: Experience, vectors: dict[str, Any]) -> Any:
    """The lesson's vector: the normalised sum of its texts' vectors (the lesson in its situation,
    and each task it was learned from), so it sits among the tasks it helps with."""
    total = sum(vectors[t] for t in exp.embedding_texts())
    norm = float((total @ total) ** 0.5)
    return total / norm if norm else total


def index_experiences(deps: Deps, tenant_id: str, experiences: list[Experience], known: dict[str, Any] | None = None) -> None:
    """Upsert the experiences' index entries. ``known``: vectors already computed, by text; only
    the other texts are embedded."""
    if not experiences:
        return
    vectors = embed_texts(deps, [t for e in experiences for t in e.embedding_texts()], dict(known or {}))
    deps.index.upsert(
        tenant_id,
        [
            IndexEntry(e.experience_id, experience_vector(e, vectors), e.agent_id, e.user_id, tuple(e.tools), e.task_type,
                       tuple(e.tags), e.search_text(), e.intent)
            for e in experiences
        ],
    )


@dataclass
class Distilled:
    stored: dict[str, Experience] = field(default_factory=dict)  # what to put, by id
    kept: list[str] = field(default_factory=list)  # experience ids this review stands behind
    rejected: list[dict[str, Any]] = field(default_factory=list)
    merged: int = 0
    superseded: list[str] = field(default_factory=list)
    vectors: dict[str, Any] = field(default_factory=dict)  # text -> vector, each embedded once per review


def _near_duplicate(deps: Deps, exp: Experience, vector) -> Experience | None:
    """An active lesson in exactly the same scope whose text is nearly the same (cosine threshold)."""
    hits = deps.index.search(exp.tenant_id, vector, IndexFilter(exp.agent_id, exp.user_id, tuple(exp.tools)), 5)
    close = [i for i, score in hits if score >= deps.merge_threshold and i != exp.experience_id]
    for candidate in deps.experiences.get_many(exp.tenant_id, close).values():
        if (
            candidate.status is ExperienceStatus.ACTIVE
            and (candidate.agent_id, candidate.user_id) == (exp.agent_id, exp.user_id)
            and set(candidate.tools) == set(exp.tools)
        ):
            return candidate
    return None


FIX_KINDS = ("recovery", "llm")  # lessons that name a fix; "don't retry" and feedback never replace one


def _same_situation(deps: Deps, old: Experience, new: Experience) -> bool:
    """The same tool failing the same way in two different tasks is not a contradiction: the
    situations themselves must be alike for a new fix to replace an old one."""
    a, b = deps.embedder.embed([old.situation, new.situation])
    return float(a @ b) >= deps.supersede_threshold


def _first_example_kept(deps: Deps, exp: Experience, keep: Collection[str]) -> Experience:
    """A lesson from one task could not tell its constants from its literals: once a second task
    shows which literals recur, its one task example is written again keeping them."""
    try:
        first = deps.trajectories.get(exp.tenant_id, exp.sources[0])
        events = deps.trajectories.events(exp.tenant_id, first.trajectory_id)
    except (NotFound, IndexError):
        return exp
    return replace(exp, examples=[task_example(first, events, keep)])


def distill(deps: Deps, traj: Trajectory, review: Review) -> Distilled:
    """Quality gate, then merge into a known lesson (same fingerprint, or nearly the same text),
    or store as new; a lesson with another fix for the same situation may supersede the old one."""
    now = deps.clock.now()
    out = Distilled()
    drafts = []
    for draft in review.lessons:
        ok, why = passes_quality_gate(draft)
        if ok:
            drafts.append(draft)
        else:
            out.rejected.append({"lesson": draft.lesson, "reason": why})
    if not drafts:
        return out
    fresh = [draft_to_experience(d, traj, now) for d in drafts]
    # The id derives from (tenant, trajectory, lesson): one this trajectory's earlier (local) review
    # already stored. If it has since been forgotten or archived, learning it again would put it
    # back in recall: it stays as it is.
    stored = deps.experiences.get_many(traj.tenant_id, [e.experience_id for e in fresh])
    retired = {i: e.status for i, e in stored.items() if e.status is not ExperienceStatus.ACTIVE}
    for exp in fresh:
        if exp.experience_id in retired:
            out.rejected.append({"lesson": exp.lesson, "reason": f"already learned from this trajectory, now {retired[exp.experience_id].value}"})
    drafts = [d for d, e in zip(drafts, fresh) if e.experience_id not in retired]
    fresh = [e for e in fresh if e.experience_id not in retired]
    if not fresh:
        return out
    out.vectors = embed_texts(deps, [t for e in fresh for t in e.embedding_texts()], {})
    for draft, exp in zip(drafts, fresh):
        vector = experience_vector(exp, out.vectors)
        existing = deps.experiences.find_active_by_fingerprint(traj.tenant_id, exp.fingerprint or "", exp.agent_id, exp.user_id)
        if existing is None:
            existing = _near_duplicate(deps, exp, vector)
        if existing is not None:
            keep = literals_to_keep(existing, draft, traj.trajectory_id)
            special = specialized_experience(draft, keep, traj, now)
            if special is not None and existing.support == 1:
                existing = _first_example_kept(deps, existing, keep)
            exp = merge_into(existing, special or exp, now, specialized=special is not None)
            out.merged += 1
        if exp.situation_key and draft.kind in FIX_KINDS:
            for old in deps.experiences.find_active_by_situation(traj.tenant_id, exp.situation_key, exp.agent_id, exp.user_id):
                if old.experience_id in out.stored or not should_supersede(old, exp) or not _same_situation(deps, old, exp):
                    continue
                demoted, exp = supersede(old, exp, now)
                out.stored[demoted.experience_id] = demoted
                out.superseded.append(demoted.experience_id)
        out.stored[exp.experience_id] = exp
        if exp.experience_id not in out.kept:
            out.kept.append(exp.experience_id)
    return out


def _persist(deps: Deps, tenant_id: str, result: Distilled) -> None:
    for exp in result.stored.values():
        deps.experiences.put(exp)
    active = [e for e in result.stored.values() if e.status is ExperienceStatus.ACTIVE]
    index_experiences(deps, tenant_id, active, known=result.vectors)
    gone = [e.experience_id for e in result.stored.values() if e.status is not ExperienceStatus.ACTIVE]
    deps.index.delete(tenant_id, gone)


def _summary(review: Review, result: Distilled) -> dict[str, Any]:
    return review.summary() | {
        "rejected": result.rejected,
        "merged": result.merged,
        "superseded": result.superseded,
        "experience_ids": result.kept,
    }


def review_trajectory(deps: Deps, tenant_id: str, trajectory_id: str, kind: str = "full") -> Trajectory:
    traj = deps.trajectories.get(tenant_id, trajectory_id)
    events = deps.trajectories.events(tenant_id, trajectory_id)
    if kind.startswith("local:"):
        return _local_review(deps, traj, events, kind.split(":", 1)[1])
    if traj.status is TrajectoryStatus.REVIEWED:
        return traj
    local = (traj.review or {}).get("local", [])
    qualifies, why = qualifies_for_full_review(events, traj.outcome, deps.review_min_events)
    if not qualifies:
        summary = {"kind": "full", "skipped": why, "local": local}
        return deps.trajectories.save_review(
            tenant_id, trajectory_id, TrajectoryStatus.REVIEWED.value, traj.experience_ids, summary, deps.clock.now()
        )
    review = deps.reviewer.review(traj, events, "full")
    result = distill(deps, traj, review)
    _persist(deps, tenant_id, result)
    ids = list(dict.fromkeys([*result.kept, *traj.experience_ids]))
    summary = _summary(review, result) | {"local": local}
    return deps.trajectories.save_review(
        tenant_id, trajectory_id, TrajectoryStatus.REVIEWED.value, ids, summary, deps.clock.now()
    )


def _local_review(deps: Deps, traj: Trajectory, events, trigger_id: str) -> Trajectory:
    trigger = next((e for e in events if e.event_id == trigger_id), None)
    if trigger is None:
        return traj
    window = [e for e in events if trigger.seq - WINDOW <= e.seq <= trigger.seq]
    review = deps.reviewer.review(traj, window, "local")
    result = distill(deps, traj, review)
    _persist(deps, traj.tenant_id, result)
    summary = _summary(review, result) | {"trigger": trigger_id}
    return deps.trajectories.add_local_review(traj.tenant_id, traj.trajectory_id, result.kept, summary, deps.clock.now())


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
        log.warning("review %s of %s failed (attempt %d): %s", job.kind, job.trajectory_id, job.attempts, reason)
        if job.attempts >= deps.review_max_attempts:
            now = deps.clock.now()
            deps.queue.dead(job, reason, now)
            if job.kind == "full":  # a failed local review leaves the full one to come
                _mark_failed(deps, job, reason, now)
        else:
            deps.queue.retry_later(job, reason, deps.clock.now(), delay_seconds=min(300.0, 2.0**job.attempts))
        return
    deps.queue.complete(job)


def _mark_failed(deps: Deps, job: ReviewJob, reason: str, now) -> None:
    """``review_failed`` with the reason, for the tenant and the operator to see; the lessons of
    local reviews and their summaries stay."""
    traj = deps.trajectories.get(job.tenant_id, job.trajectory_id)
    review = {"error": reason, "attempts": job.attempts, "failed_at": now.isoformat(), "kind": job.kind,
              "local": (traj.review or {}).get("local", [])}
    deps.trajectories.save_review(
        job.tenant_id, job.trajectory_id, TrajectoryStatus.REVIEW_FAILED.value, traj.experience_ids, review, now
    )


def failed_reviews(deps: Deps, tenant_id: str | None = None, limit: int = 100) -> list[DeadJob]:
    """Review jobs given up on, oldest first: what an operator looks at before a redrive."""
    return deps.queue.dead_jobs(tenant_id, limit)


def redrive_failed(
    deps: Deps, tenant_id: str | None = None, trajectory_ids: Sequence[str] | None = None, limit: int = 1000
) -> int:
    """Send failed reviews round again with a fresh set of attempts (all of them, one tenant's, or
    the listed trajectories'); returns how many jobs were redriven.

    A trajectory of a failed full review goes back to ``finalized`` before its job is redriven: a
    crash in between leaves a finalized trajectory with a dead job, which the outbox sweep
    (``requeue_unreviewed``) enqueues again. The review then runs as any other, so its lessons
    are written once (deterministic ids; a source already counted changes nothing).
    """
    wanted = set(trajectory_ids) if trajectory_ids is not None else None
    jobs = [j for j in deps.queue.dead_jobs(tenant_id, limit) if wanted is None or j.trajectory_id in wanted]
    now = deps.clock.now()
    for job in jobs:
        if job.kind == "full":
            _reopen_failed(deps, job, now)
    return deps.queue.redrive(jobs, now)


def _reopen_failed(deps: Deps, job: DeadJob, now) -> None:
    try:
        traj = deps.trajectories.get(job.tenant_id, job.trajectory_id)
    except NotFound:  # dead because the trajectory is gone: the redriven job dies again at once
        return
    if traj.status is not TrajectoryStatus.REVIEW_FAILED:
        return
    previous = {k: v for k, v in (traj.review or {}).items() if k != "local"}
    review = {"local": (traj.review or {}).get("local", []), "redriven": {"at": now.isoformat(), "previous": previous}}
    deps.trajectories.save_review(
        job.tenant_id, job.trajectory_id, TrajectoryStatus.FINALIZED.value, traj.experience_ids, review, now
    )


def requeue_unreviewed(deps: Deps) -> int:
    """Finalized trajectories whose job was lost (a crash between finalize and enqueue) get one."""
    pending = deps.trajectories.finalized_unreviewed()
    now = deps.clock.now()
    for tenant_id, trajectory_id in pending:
        deps.queue.enqueue(tenant_id, trajectory_id, "full", now)
    return len(pending)
