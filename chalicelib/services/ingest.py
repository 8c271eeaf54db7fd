"""Recording what happened: trajectories, their events, and finalize (which queues a review)."""
from __future__ import annotations

from dataclasses import replace
from typing import Sequence

from ..domain.anomaly import detect
from ..domain.errors import Conflict
from ..domain.models import Event, Trajectory, TrajectoryStatus
from ..ports import AppendResult
from .deps import Deps


def start_trajectory(deps: Deps, traj: Trajectory) -> tuple[Trajectory, bool]:
    """Idempotent on the client-chosen id: a repeat returns the stored trajectory and False."""
    now = deps.clock.now()
    return deps.trajectories.create(replace(traj, created_at=now, updated_at=now))


def append_events(deps: Deps, tenant_id: str, trajectory_id: str, events: Sequence[Event]) -> AppendResult:
    """Never waits on a review: ingest writes the events and, if they complete an anomaly (two failed
    calls in a row, negative feedback, a call repeated three times), queues a local review."""
    now = deps.clock.now()
    result = deps.trajectories.append_events(tenant_id, trajectory_id, events, now)
    if deps.local_reviews and result.accepted_ids and any(_may_complete_anomaly(e) for e in events):
        anomalies = detect(deps.trajectories.events(tenant_id, trajectory_id), set(result.accepted_ids))
        for anomaly in anomalies:
            deps.queue.enqueue(tenant_id, trajectory_id, anomaly.review_kind, now)
        if anomalies:
            deps.notify_review()
    return result


def _may_complete_anomaly(event: Event) -> bool:
    # Cheap check first: only these events can complete an anomaly, so the others skip the read.
    return event.type == "tool_call" or (event.type == "feedback" and event.content.get("sentiment") == "negative")


def finalize(deps: Deps, tenant_id: str, trajectory_id: str, outcome: str, feedback: str | None) -> Trajectory:
    """Close the trajectory and queue its full review. A repeat with the same outcome is a no-op."""
    now = deps.clock.now()
    try:
        traj = deps.trajectories.finalize(tenant_id, trajectory_id, outcome, feedback, now)
    except Conflict:
        traj = deps.trajectories.get(tenant_id, trajectory_id)
        if traj.status is TrajectoryStatus.OPEN or traj.outcome != outcome:
            raise
        return traj
    deps.queue.enqueue(tenant_id, trajectory_id, "full", now)
    deps.notify_review()
    return traj


def get_trajectory(deps: Deps, tenant_id: str, trajectory_id: str) -> Trajectory:
    return deps.trajectories.get(tenant_id, trajectory_id)
