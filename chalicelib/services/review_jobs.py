"""The review job lifecycle: claim due jobs, run them, acknowledge; retry with back-off; dead-letter
after the last attempt; list and redrive what was given up on; requeue what a crash lost.

Job kinds are ``domain.models.ReviewKind``: ``full`` on finalize, ``local:<event_id>`` for an
anomaly during ingest (the events around it are reviewed while the trajectory is still open).
"""
from __future__ import annotations

import logging
import time
from concurrent.futures import Executor
from datetime import datetime, timedelta
from typing import Callable, Sequence, TypeVar

from ..domain import usage
from ..domain.errors import NotFound
from ..domain.models import FULL_REVIEW, LOCAL_SCOPE, ReviewKind, ReviewSummary, Trajectory, TrajectoryStatus
from ..domain.otlp import IDLE_JOB  # not a review: an OpenTelemetry trace's idle timeout
from ..ports import DeadJob, ReviewJob
from .deps import Deps
from .indexing import Embedded, VectorCache, embed_texts
from .learning import DraftedReview, prepare_review

log = logging.getLogger(__name__)
T = TypeVar("T")
LEASE_SHARE = 0.5  # of the lease, past which a batch starts no more of its jobs


def process_review_jobs(
    deps: Deps, limit: int = 1, vectors: VectorCache | None = None, pool: Executor | None = None, workers: int = 1
) -> int:
    """Claim up to ``limit`` due jobs (tenants in turns) and run them; failures back off and, after
    the last attempt, are dead-lettered and the trajectory shows ``review_failed`` with the reason.
    Returns how many jobs were claimed.

    Jobs claimed together are reviewed first, then the texts of all their new lessons are embedded
    in one call (one request to a remote embedder instead of one per review), then each is stored
    in claim order, so that a tenant whose job is claimed next waits one batch. A second job of a
    trajectory already in the batch runs after the first is stored, as it would alone: it must see
    what the first one wrote. ``vectors``: a worker's cache of embedded texts, kept across calls
    (trimmed to its size after each). With a ``pool``, the batch is split by tenant into up to
    ``workers`` parts run at once: one tenant's jobs always run one after the other, in one part,
    so each one's merges see what the previous one stored.

    The batch shares one lease. A job not started when most of it is gone (slow reviews: an LLM)
    is left leased, to be claimed again when the lease runs out, rather than run while another
    worker may have claimed it."""
    now = deps.clock.now()
    jobs = deps.queue.claim(now, deps.review_lease_seconds, limit)
    jobs = _run_trace_timeouts(deps, jobs)
    known: dict = vectors if vectors is not None else Embedded()
    until = now + timedelta(seconds=deps.review_lease_seconds * LEASE_SHARE)
    parts = _by_tenant(jobs, workers if pool is not None else 1)
    if len(parts) > 1:
        for future in [pool.submit(_run_batch, deps, part, known, until) for part in parts]:  # type: ignore[union-attr]
            future.result()
    elif jobs:
        _run_batch(deps, jobs, known, until)
    if vectors is not None:
        vectors.trim()
    return len(jobs)


def _by_tenant(jobs: list[ReviewJob], parts: int) -> list[list[ReviewJob]]:
    """At most ``parts`` lists of jobs, each tenant's in one of them, claim order kept."""
    slot: dict[str, int] = {}
    out: list[list[ReviewJob]] = [[] for _ in range(max(1, parts))]
    for job in jobs:
        out[slot.setdefault(job.tenant_id, len(slot) % len(out))].append(job)
    return [p for p in out if p]


def _run_trace_timeouts(deps: Deps, jobs: list[ReviewJob]) -> list[ReviewJob]:
    """Runs the batch's ``otlp_idle`` jobs (``services.otlp.finalize_idle``: an OpenTelemetry
    trace idle past its timeout is finalized) and returns the review jobs. Such a job failing is
    retried later like a review."""
    if not any(job.kind == IDLE_JOB for job in jobs):
        return jobs
    from .otlp import finalize_idle

    reviews = []
    for job in jobs:
        if job.kind != IDLE_JOB:
            reviews.append(job)
            continue
        try:
            finalize_idle(deps, job)
        except Exception as exc:  # a store's failure: the job comes round again
            log.warning("idle timeout of trace %s (tenant %s): %s", job.trajectory_id, job.tenant_id, f"{type(exc).__name__}: {exc}"[:300])
            deps.queue.retry_later(job, f"{type(exc).__name__}", deps.clock.now(), 60.0)
    return reviews


def _run_batch(deps: Deps, jobs: list[ReviewJob], known: dict, until: datetime) -> None:
    drafted: list[tuple[ReviewJob, DraftedReview, float]] = []
    later: list[ReviewJob] = []
    seen: set[tuple[str, str]] = set()

    def lease_left(job: ReviewJob) -> bool:
        if deps.clock.now() <= until:
            return True
        log.info("review %s of %s (tenant %s): its batch's lease is running out; left for the next claim",
                 job.kind, job.trajectory_id, job.tenant_id)  # fmt: skip
        return False

    for job in jobs:
        if not lease_left(job):
            continue
        key = (job.tenant_id, job.trajectory_id)
        if key in seen:
            later.append(job)
            continue
        seen.add(key)
        started = time.perf_counter()
        step = _attempt(deps, job, lambda kind: prepare_review(deps, job.tenant_id, job.trajectory_id, kind, job.triggers, known))
        if isinstance(step, DraftedReview):
            drafted.append((job, step, started))
        elif step is not None:
            _done(deps, job, step, started)
    texts = [t for _, d, _ in drafted for t in d.texts]
    if len(drafted) > 1 and texts:
        try:
            embed_texts(deps, texts, known)
        except Exception as exc:  # each review then embeds its own texts, and fails or retries alone
            log.warning("embedding the lessons of %d reviews together failed: %s", len(drafted), f"{type(exc).__name__}: {exc}"[:300])
    for job, d, started in drafted:
        traj = _attempt(deps, job, lambda kind: d.finish(deps, known))
        if traj is not None:
            _done(deps, job, traj, started)
    for job in later:
        if lease_left(job):
            _run(deps, job, known)


def _kind(job: ReviewJob | DeadJob) -> ReviewKind | None:
    try:
        return ReviewKind.parse(job.kind)
    except ValueError:
        return None


def outcome_line(job: ReviewJob, kind: ReviewKind, traj: Trajectory, ms: float) -> str:
    """The one INFO line of a finished review: what it concluded, never the trajectory's content."""
    where = f"review {job.kind} of {job.trajectory_id} (tenant {job.tenant_id})"
    review = traj.review or {}
    if kind.is_full and review.get("skipped"):
        return f"{where}: skipped, {review['skipped']} ({ms:.0f} ms)"
    summary = review if kind.is_full else ((review.get(LOCAL_SCOPE) or [{}])[-1])
    count = len(summary.get("experience_ids") or ())
    return f"{where}: {traj.status.value}, {count} {'lesson' if count == 1 else 'lessons'} kept ({ms:.0f} ms)"


def _run(deps: Deps, job: ReviewJob, vectors: dict) -> None:
    started = time.perf_counter()

    def review(kind: ReviewKind) -> Trajectory:
        step = prepare_review(deps, job.tenant_id, job.trajectory_id, kind, job.triggers, vectors)
        return step if isinstance(step, Trajectory) else step.finish(deps, vectors)

    traj = _attempt(deps, job, review)
    if traj is not None:
        _done(deps, job, traj, started)


def _done(deps: Deps, job: ReviewJob, traj: Trajectory, started: float) -> None:
    deps.queue.complete(job)
    log.info(outcome_line(job, ReviewKind.parse(job.kind), traj, (time.perf_counter() - started) * 1000))


def _attempt(deps: Deps, job: ReviewJob, step: Callable[[ReviewKind], T]) -> T | None:
    """One step of a job's review; on failure the job is retried later or, after its last attempt,
    dead-lettered, and None is returned."""
    kind = _kind(job)
    if kind is None:  # no attempt can run it
        log.error("review %s of %s (tenant %s): unknown review kind; dropped", job.kind, job.trajectory_id, job.tenant_id)
        _dead(deps, job, f"unknown review kind {job.kind!r}")
        return None
    try:
        return step(kind)
    except NotFound:
        log.warning("review %s of %s (tenant %s): the trajectory is gone; dropped", job.kind, job.trajectory_id, job.tenant_id)
        _dead(deps, job, "trajectory not found")
        return None
    except Exception as exc:  # any failure of a dependency: retry, never lose the job
        # the operator's dead-job list (admin only) gets the text; the tenant only the class: an
        # exception's text can hold paths, hosts, queries or another system's data
        reason = f"{type(exc).__name__}: {exc}"[:500]
        if job.attempts >= deps.review_max_attempts:
            log.error("review %s of %s (tenant %s) failed on its last attempt (%d), given up: %s",
                      job.kind, job.trajectory_id, job.tenant_id, job.attempts, reason)  # fmt: skip
            now = deps.clock.now()
            _dead(deps, job, reason, now)
            if kind.is_full:  # a failed local review leaves the full one to come
                _mark_failed(deps, job, f"review failed: {type(exc).__name__}", now)
        else:
            log.warning("review %s of %s (tenant %s) failed (attempt %d), will retry: %s",
                        job.kind, job.trajectory_id, job.tenant_id, job.attempts, reason)  # fmt: skip
            deps.queue.retry_later(job, reason, deps.clock.now(), delay_seconds=min(300.0, 2.0**job.attempts))
        return None


def _dead(deps: Deps, job: ReviewJob, reason: str, now: datetime | None = None) -> None:
    """Give the job up (the dead-job list an operator redrives from), and count it: the stack's
    alarm watches the count (``domain.usage.REVIEW_JOBS_DEAD``)."""
    deps.queue.dead(job, reason, now)
    if deps.meter is not None:
        deps.meter.record(job.tenant_id, {usage.REVIEW_JOBS_DEAD: 1})


def _mark_failed(deps: Deps, job: ReviewJob, reason: str, now: datetime) -> None:
    """``review_failed`` with the reason, for the tenant and the operator to see; the lessons of
    local reviews and their summaries stay."""
    traj = deps.trajectories.get(job.tenant_id, job.trajectory_id)
    summary = ReviewSummary(
        kind=job.kind, error=reason, attempts=job.attempts, failed_at=now, local=ReviewSummary.local_reviews(traj)
    )
    deps.trajectories.save_review(
        job.tenant_id, job.trajectory_id, TrajectoryStatus.REVIEW_FAILED.value, traj.experience_ids, summary.as_dict(), now
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
        kind = _kind(job)
        if kind is not None and kind.is_full:
            _reopen_failed(deps, job, now)
    return deps.queue.redrive(jobs, now)


def _reopen_failed(deps: Deps, job: DeadJob, now: datetime) -> None:
    try:
        traj = deps.trajectories.get(job.tenant_id, job.trajectory_id)
    except NotFound:  # dead because the trajectory is gone: the redriven job dies again at once
        return
    if traj.status is not TrajectoryStatus.REVIEW_FAILED:
        return
    summary = ReviewSummary.redriven(traj, now)
    deps.trajectories.save_review(
        job.tenant_id, job.trajectory_id, TrajectoryStatus.FINALIZED.value, traj.experience_ids, summary.as_dict(), now
    )


def requeue_unreviewed(deps: Deps) -> int:
    """Finalized trajectories whose job was lost (a crash between finalize and enqueue) get one;
    jobs an earlier version queued where claims no longer look are moved where they do (returns
    how many trajectories were requeued)."""
    adopted = deps.queue.adopt_earlier_jobs()
    if adopted:
        log.info("%d review jobs of an earlier queue layout moved where claims read them", adopted)
    pending = deps.trajectories.finalized_unreviewed()
    now = deps.clock.now()
    for tenant_id, trajectory_id in pending:
        deps.queue.enqueue(tenant_id, trajectory_id, str(FULL_REVIEW), now)
    return len(pending)
