"""Traces in: each trace of an OTLP export becomes a trajectory (``domain.otlp``), recorded through
the same ingest as the trajectory routes, so that a trace sent twice, or in several batches, is
assembled once: the start is idempotent on the trajectory id, events on their span-derived ids,
and finalize on its outcome."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from ..domain.errors import Conflict
from ..domain.models import TrajectoryStatus
from ..domain.otlp import TraceDraft
from . import ingest
from .deps import Deps


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
        traj, created = ingest.start_trajectory(
            deps, tenant_id, draft.agent_id, draft.goal, trajectory_id=draft.trajectory_id, user_id=draft.user_id,
            task_type=draft.task_type, tools=draft.tools, metadata={"source": "otlp", "trace_id": draft.trace_id},
        )
        out.trajectories += created
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
