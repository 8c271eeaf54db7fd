"""Recording what happened: trajectories, their events, and finalize (which queues a review)."""
from __future__ import annotations

import base64
import re
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Mapping, Sequence

from ..domain.anomaly import CONTEXT, detect, may_complete_anomaly
from ..domain.attribution import Attribution, attribute
from ..domain.errors import Conflict, InvalidInput, NotFound, TrajectoryFull
from ..domain.models import FULL_REVIEW, Event, Trajectory, TrajectoryStatus, events_expire_at
from ..ports import AppendResult
from .deps import Deps


def start_trajectory(
    deps: Deps,
    tenant_id: str,
    agent_id: str,
    goal: str,
    *,
    trajectory_id: str | None = None,
    user_id: str | None = None,
    task_type: str | None = None,
    tools: Sequence[str] = (),
    intent: str | None = None,
    tags: Sequence[str] = (),
    metadata: Mapping[str, Any] | None = None,
) -> tuple[Trajectory, bool]:
    """Idempotent on the client-chosen id: a repeat returns the stored trajectory and False. Its
    events expire after the tenant's retention (``retention_days``), fixed now."""
    now = deps.clock.now()
    traj = Trajectory(
        tenant_id=tenant_id,
        trajectory_id=trajectory_id or "traj_" + uuid.uuid4().hex,
        agent_id=agent_id,
        user_id=user_id,
        goal=goal,
        task_type=task_type,
        tools=list(tools),
        intent=intent,
        tags=list(tags),
        metadata=dict(metadata or {}),
        created_at=now,
        updated_at=now,
        events_expire_at=events_expire_at(now, retention_days(deps, tenant_id)),
    )
    return deps.trajectories.create(traj)


def retention_days(deps: Deps, tenant_id: str) -> int:
    """The days a trajectory the tenant starts now keeps its events: the tenant's own retention,
    else the deployment's (0: kept for good)."""
    try:
        own = deps.tenants.get_tenant(tenant_id).event_retention_days
    except NotFound:  # a tenant the store does not list (tests, imports): the default
        own = None
    return deps.event_retention_days if own is None else own


def append_events(
    deps: Deps, tenant_id: str, trajectory_id: str, events: Sequence[Mapping[str, Any]]
) -> AppendResult:
    """Never waits on a review: ingest writes the events and, if they complete an anomaly (two failed
    calls in a row, negative feedback, a call repeated three times), queues a local review, or
    adds them to the one queued (at most ``max_local_reviews`` per trajectory). It reads back only
    the batch and the ``CONTEXT`` events before it. Raises TrajectoryFull past
    ``max_events_per_trajectory``, and Conflict for new events once the trajectory is finalized (a
    batch it already holds is counted as duplicates then too).

    ``events`` hold the fields of ``Event`` but ``seq``; without an ``event_id`` or a ``timestamp``
    an event gets a new id and the time of arrival."""
    now = deps.clock.now()
    built = [_event(e, now) for e in events]
    try:
        result = deps.trajectories.append_events(tenant_id, trajectory_id, built, now, deps.max_events_per_trajectory)
    except TrajectoryFull:
        raise
    except Conflict:
        # no longer open: a retried append (every event already stored) is a duplicate, as it would be
        # while open, so that a client that sends again after finalizing sees no error; new events 409
        ids = [e.event_id for e in built]
        stored = {e.event_id for e in deps.trajectories.events_around(tenant_id, trajectory_id, ids, 0)}
        if ids and stored.issuperset(ids):
            return AppendResult(accepted=0, duplicates=len(ids))
        raise
    if deps.local_reviews and deps.max_local_reviews and result.accepted_ids and any(may_complete_anomaly(e) for e in built):
        recent = deps.trajectories.events_around(tenant_id, trajectory_id, result.accepted_ids, CONTEXT)
        triggers = [a.trigger.event_id for a in detect(recent, set(result.accepted_ids))]
        if triggers and deps.queue.enqueue_local(tenant_id, trajectory_id, triggers, now, deps.max_local_reviews):
            _notify(deps)
    return result


def _event(fields: Mapping[str, Any], now: datetime) -> Event:
    return Event(
        event_id=fields["event_id"],  # required by the API: a retry must find its events by id
        type=fields["type"],
        timestamp=fields.get("timestamp") or now,
        content=dict(fields.get("content") or {}),
        node_id=fields.get("node_id"),
        parent_id=fields.get("parent_id"),
        context=dict(fields.get("context") or {}),
    )


def _notify(deps: Deps) -> None:
    if deps.review_notifier is not None:
        deps.review_notifier.notify()


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
    deps.queue.enqueue(tenant_id, trajectory_id, str(FULL_REVIEW), now)
    _notify(deps)
    return traj


def get_trajectory(deps: Deps, tenant_id: str, trajectory_id: str) -> Trajectory:
    return deps.trajectories.get(tenant_id, trajectory_id)


# events of one page of GET .../events: a read costs what it returns, not the whole trajectory
EVENTS_PAGE = 500
EVENTS_PAGE_MAX = 1000
_CURSOR = re.compile(r"seq:(0|[1-9][0-9]{0,12})")  # past any trajectory's length: a longer one was not issued here


def _events_cursor(seq: int) -> str:
    return base64.urlsafe_b64encode(f"seq:{seq}".encode()).decode().rstrip("=")


def _after(cursor: str) -> int:
    """The seq an events cursor names; InvalidInput (422) for any cursor not issued here."""
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode("ascii")
    except (ValueError, UnicodeError) as exc:
        raise InvalidInput("invalid cursor") from exc
    match = _CURSOR.fullmatch(text)
    if match is None:
        raise InvalidInput("invalid cursor")
    return int(match.group(1))


@dataclass(frozen=True)
class EventsPage:
    events: list[Event]
    attribution: Attribution
    cursor: str | None  # the next page's; None after the last
    expired: bool = False  # the trajectory's events expired: none are read


def trajectory_graph(
    deps: Deps, tenant_id: str, trajectory_id: str, limit: int = EVENTS_PAGE, cursor: str | None = None
) -> EventsPage:
    """A page of its events in arrival order, the ``limit`` after ``cursor`` (from the first
    without one), their attribution (the same the deterministic reviewer computes, over the page's
    events: recomputed from them, so it needs nothing stored beside them), and the cursor of the
    next page (None after the last). Reads that page only. A trajectory whose events expired
    (``Trajectory.events_expired``) has none, whatever a store still holds."""
    traj = deps.trajectories.get(tenant_id, trajectory_id)  # NotFound for an unknown or another tenant's id
    after = 0 if cursor is None else _after(cursor)
    if traj.events_expired(deps.clock.now()):
        return EventsPage([], attribute([]), None, expired=True)
    limit = max(1, min(limit, EVENTS_PAGE_MAX))
    events = deps.trajectories.events_page(tenant_id, trajectory_id, after, limit + 1)  # one more: is there a next page?
    more = len(events) > limit
    events = events[:limit]
    return EventsPage(events, attribute(events), _events_cursor(events[-1].seq) if more else None)
