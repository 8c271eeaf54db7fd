"""Recording what happened: trajectories, their events, and finalize (which queues a review)."""
from __future__ import annotations

from dataclasses import replace
from typing import Sequence

from ..domain.errors import Conflict
from ..domain.models import Event, Trajectory, TrajectoryStatus
from ..ports import AppendResult
from .deps import Deps


def start_trajectory(deps: Deps, traj: Trajectory) -> tuple[Trajectory, bool]:
    """Idempotent on the client-chosen id: a repeat returns the stored trajectory and False."""
    now = deps.clock.now()
    return deps.trajectories.create(replace(traj, created_at=now, updated_at=now))


def append_events(deps: Deps, tenant_id: str, trajectory_id: str, events: Sequence[Event]) -> AppendResult:
    """Never waits on a review: ingest only writes the events."""
    return deps.trajectories.append_events(tenant_id, trajectory_id, events, deps.clock.now())


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
