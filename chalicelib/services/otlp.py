"""Traces in: each trace of an OTLP export becomes a trajectory (``domain.otlp``), recorded through
the same ingest as the trajectory routes, so that a trace sent twice, or in several batches, is
assembled once: the start is idempotent on the trajectory id, events on their span-derived ids,
and finalize on its outcome.

A trace whose root span never arrives (the agent crashed, or its exporter lost the last batch) is
finalized once it has been idle for ``Deps.otlp_idle_seconds``: the batch that starts its
trajectory queues an ``otlp_idle`` job due then, on the review queue that both backends already
run (the embedded worker; on aws the stream's worker and the review sweeper every minute). The job
(``finalize_idle``) finds the trajectory ended already, or still active (it is queued again for
its last batch's time plus the timeout), or idle: finalized with ``domain.otlp.idle_outcome``.
One job per trace, queued once: the batches after the first cost no queue write."""
from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import timedelta
from typing import Sequence

from ..domain.errors import Conflict, NotFound
from ..domain.models import TrajectoryStatus
from ..domain.otlp import IDLE_JOB, TraceDraft, idle_outcome
from ..ports import ReviewJob
from . import ingest
from .deps import Deps

log = logging.getLogger(__name__)


@dataclass
class Recorded:
    trajectories: int = 0
    events: int = 0
    duplicates: int = 0
    finalized: int = 0
    rejected_spans: int = 0
    message: str = ""


def record_traces(deps: Deps, tenant_id: str, drafts: Sequence[TraceDraft]) -> Recorded:
    """Start, append and (with the root span) finalize each trace's trajectory. A trace whose
    trajectory is closed already takes no more events: its spans are counted as rejected, with the
    reason, as OTLP's partial success reports them; the others are recorded."""
    out = Recorded()
    for draft in drafts:
        metadata = {"source": "otlp", "trace_id": draft.trace_id}
        if draft.stated_outcome:
            metadata["outcome"] = draft.stated_outcome
        try:  # a trace's later batches: a read, where a start would be a write that changes nothing
            traj, created = deps.trajectories.get(tenant_id, draft.trajectory_id), False
        except NotFound:
            traj, created = ingest.start_trajectory(
                deps, tenant_id, draft.agent_id, draft.goal, trajectory_id=draft.trajectory_id, user_id=draft.user_id,
                task_type=draft.task_type, tools=draft.tools, metadata=metadata,
            )
        out.trajectories += created
        if created and draft.outcome is None and deps.otlp_idle_seconds > 0:
            deps.queue.enqueue(tenant_id, traj.trajectory_id, IDLE_JOB, deps.clock.now() + timedelta(seconds=deps.otlp_idle_seconds))
        if traj.status is not TrajectoryStatus.OPEN and _all_stored(deps, tenant_id, traj.trajectory_id, draft):
            out.duplicates += len(draft.events)  # the trace again, after its end: nothing new
            continue
        try:
            if draft.events:
                result = ingest.append_events(deps, tenant_id, traj.trajectory_id, draft.events)
                out.events += result.accepted
                out.duplicates += result.duplicates
            if draft.outcome is not None:
                ingest.finalize(deps, tenant_id, traj.trajectory_id, draft.outcome, None)
                out.finalized += 1
        except Conflict as exc:
            out.rejected_spans += draft.spans
            out.message = f"trace {draft.trace_id}: {exc.message}"
    return out


def _all_stored(deps: Deps, tenant_id: str, trajectory_id: str, draft: TraceDraft) -> bool:
    ids = [e["event_id"] for e in draft.events]
    if not ids:
        return True
    found = {e.event_id for e in deps.trajectories.events_around(tenant_id, trajectory_id, ids, 0)}
    return set(ids) <= found


def finalize_idle(deps: Deps, job: ReviewJob) -> str:
    """Run an ``otlp_idle`` job: ``ended`` (the trace's root came, or the trajectory is gone),
    ``active`` (a batch came within the timeout: the job is queued again for its time plus the
    timeout) or ``finalized`` (idle: closed with ``idle_outcome``, its review queued)."""
    deps.queue.complete(job)
    try:
        traj = deps.trajectories.get(job.tenant_id, job.trajectory_id)
    except NotFound:
        return "ended"
    if traj.status is not TrajectoryStatus.OPEN or deps.otlp_idle_seconds <= 0:
        return "ended"
    due = traj.updated_at + timedelta(seconds=deps.otlp_idle_seconds)
    if deps.clock.now() < due:
        deps.queue.enqueue(job.tenant_id, job.trajectory_id, IDLE_JOB, due)
        return "active"
    outcome = idle_outcome(traj.metadata.get("outcome"))
    try:
        ingest.finalize(deps, job.tenant_id, job.trajectory_id, outcome, None)
    except Conflict:  # its root span closed it meanwhile
        return "ended"
    log.info("trace %s (tenant %s) idle for %.0f s: finalized as %s", job.trajectory_id, job.tenant_id,
             deps.otlp_idle_seconds, outcome)
    return "finalized"
