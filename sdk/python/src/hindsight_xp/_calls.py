"""Every endpoint of HTTP API v1 as a pure function from arguments to a ``Call``.

Writes carry ids chosen here (trajectory_id, event_id, experience_id) when the caller gave none,
which makes them idempotent on the service: a retry after a lost answer cannot write twice.
"""
from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, Iterable, Literal, Mapping, Sequence
from urllib.parse import quote

from ._core import Call
from .models import (
    AdviseResult,
    DecayReport,
    EventsAccepted,
    Experience,
    ExperiencePage,
    ExperienceStatus,
    FailedReview,
    Health,
    KeyRotated,
    Outcome,
    RecallResult,
    ReindexReport,
    Signal,
    Stats,
    Tenant,
    TenantCreated,
    TenantPage,
    Trajectory,
    parse_failed_reviews,
    parse_redriven,
)

MAX_EVENTS_PER_CALL = 100


def new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex}"


def _seg(value: str) -> str:
    """An id as one path segment: ids may hold '/' (the service allows it), which must not split the path."""
    return quote(value, safe="")


def _drop_none(body: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in body.items() if v is not None}


def _time(value: datetime | str | int | None) -> str | int | None:
    return value.isoformat() if isinstance(value, datetime) else value


# --- misc and tenants (admin) ---------------------------------------------------------------


def health() -> Call[Health]:
    return Call("GET", "/v1/health", Health.from_json, auth="none")


def openapi() -> Call[dict[str, Any]]:
    return Call("GET", "/v1/openapi.json", dict, auth="none")


def create_tenant(name: str) -> Call[TenantCreated]:
    # Not idempotent: a retry after a lost answer would create a second tenant.
    return Call("POST", "/v1/tenants", TenantCreated.from_json, json={"name": name}, auth="admin", idempotent=False)


def list_tenants_page(limit: int = 100, cursor: str | None = None) -> Call[TenantPage]:
    """One page of tenants, oldest first (admin); the page's ``cursor`` names the next."""
    return Call("GET", "/v1/tenants", TenantPage.from_json, params={"limit": limit, "cursor": cursor}, auth="admin")


def rotate_key(tenant_id: str, *, revoke_old: bool = True) -> Call[KeyRotated]:
    return Call("POST", f"/v1/tenants/{_seg(tenant_id)}/keys", KeyRotated.from_json,
                json={"revoke_old": revoke_old}, auth="admin", idempotent=False)  # fmt: skip


def start_tenant_export(tenant_id: str) -> Call[dict[str, Any]]:
    """Start an export of everything the tenant owns (admin); the answer names its ``export_id``."""
    # Not idempotent: a retry after a lost answer would start a second export.
    return Call("POST", f"/v1/tenants/{_seg(tenant_id)}/exports", dict, auth="admin", idempotent=False)


def get_tenant_export(tenant_id: str, export_id: str) -> Call[dict[str, Any]]:
    """An export's progress (``state``: running, done, cancelled) and the parts written so far (admin)."""
    return Call("GET", f"/v1/tenants/{_seg(tenant_id)}/exports/{_seg(export_id)}", dict, auth="admin")


def _json_lines(text: str) -> list[dict[str, Any]]:
    import json

    return [json.loads(line) for line in text.splitlines() if line.strip()]


def get_tenant_export_part(tenant_id: str, export_id: str, part: int = 1) -> Call[list[dict[str, Any]]]:
    """One part of an export (from 1), its JSON Lines read as objects (``{"type", "data"}``) (admin)."""
    return Call("GET", f"/v1/tenants/{_seg(tenant_id)}/exports/{_seg(export_id)}/data", _json_lines,
                params={"part": part}, auth="admin", text=True)


def delete_tenant(tenant_id: str) -> Call[dict[str, Any]]:
    """Delete a tenant (admin): its keys are revoked at once, then everything it owns is purged.
    Sending it again answers the same deletion."""
    return Call("DELETE", f"/v1/tenants/{_seg(tenant_id)}", dict, auth="admin")


def get_tenant_deletion(tenant_id: str) -> Call[dict[str, Any]]:
    """A tenant deletion's progress (admin)."""
    return Call("GET", f"/v1/tenants/{_seg(tenant_id)}/deletion", dict, auth="admin")

def set_retention(tenant_id: str, event_retention_days: int | None) -> Call[Tenant]:
    """The days the events of the trajectories the tenant starts from now on are kept (admin; 0:
    for good; None: the deployment's default). Lessons never expire."""
    return Call("POST", f"/v1/tenants/{_seg(tenant_id)}/retention", Tenant.from_json,
                json={"event_retention_days": event_retention_days}, auth="admin")  # fmt: skip


def decay(
    as_of: datetime | str | int | None = None, tenant_id: str | None = None, dry_run: bool = False
) -> Call[DecayReport]:
    """Decay freshness and archive stale lessons (admin): every tenant's or ``tenant_id``'s;
    ``dry_run`` writes nothing and reports what would be archived."""
    body = _drop_none({"as_of": _time(as_of), "tenant_id": tenant_id}) | ({"dry_run": True} if dry_run else {})
    return Call("POST", "/v1/maintenance/decay", DecayReport.from_json, json=body, auth="admin", idempotent=dry_run)


def failed_reviews(tenant_id: str | None = None, limit: int = 100) -> Call[list[FailedReview]]:
    """Reviews the service gave up on, oldest first, with the reason (admin)."""
    return Call("GET", "/v1/maintenance/failed-reviews", parse_failed_reviews,
                params={"tenant_id": tenant_id, "limit": limit}, auth="admin")  # fmt: skip


def redrive(tenant_id: str | None = None, trajectory_ids: Sequence[str] | None = None) -> Call[int]:
    """Send failed reviews round again: all of them, a tenant's, or the listed trajectories'
    (admin). Returns how many were redriven; sending it twice redrives nothing more."""
    body = _drop_none({"tenant_id": tenant_id, "trajectory_ids": list(trajectory_ids) if trajectory_ids is not None else None})
    return Call("POST", "/v1/maintenance/redrive", parse_redriven, json=body, auth="admin")


def reindex(cursor: str | None = None, limit: int | None = None) -> Call[ReindexReport]:
    """One batch of a reindex (the server's default size, or ``limit`` lessons) after ``cursor``;
    the report's ``cursor`` names the next batch, None after the last."""
    return Call("POST", "/v1/maintenance/reindex", ReindexReport.from_json, json=_drop_none({"cursor": cursor, "limit": limit}))


def stats() -> Call[Stats]:
    return Call("GET", "/v1/stats", Stats.from_json)


# --- trajectories --------------------------------------------------------------------------


def start_trajectory(
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
) -> Call[Trajectory]:
    body = _drop_none({
        "trajectory_id": trajectory_id or new_id("traj"), "agent_id": agent_id, "goal": goal, "user_id": user_id,
        "task_type": task_type, "tools": list(tools), "intent": intent, "tags": list(tags), "metadata": metadata,
    })  # fmt: skip
    return Call("POST", "/v1/trajectories", Trajectory.from_json, json=body)


def with_event_ids(events: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    return [dict(e) if e.get("event_id") else {**e, "event_id": new_id("evt")} for e in events]


def append_events(trajectory_id: str, events: Sequence[Mapping[str, Any]]) -> Call[EventsAccepted]:
    """At most 100 events (the service's limit); events without an event_id get one."""
    if not events:
        raise ValueError("append_events needs at least one event")
    if len(events) > MAX_EVENTS_PER_CALL:
        raise ValueError(f"at most {MAX_EVENTS_PER_CALL} events per call, got {len(events)}; send them in batches")
    return Call("POST", f"/v1/trajectories/{_seg(trajectory_id)}/events", EventsAccepted.from_json,
                json={"events": with_event_ids(events)})  # fmt: skip


def finalize(trajectory_id: str, outcome: Outcome, feedback: str | None = None) -> Call[Trajectory]:
    # A repeat with the same outcome is a no-op on the service, so this is safe to retry.
    return Call("POST", f"/v1/trajectories/{_seg(trajectory_id)}/finalize", Trajectory.from_json,
                json=_drop_none({"outcome": outcome, "feedback": feedback}))  # fmt: skip


def get_trajectory(trajectory_id: str) -> Call[Trajectory]:
    return Call("GET", f"/v1/trajectories/{_seg(trajectory_id)}", Trajectory.from_json)


# --- experiences ---------------------------------------------------------------------------


def write_experience(
    situation: str,
    *,
    lesson: str = "",
    advice: str = "",
    action: str = "",
    result: str = "",
    experience_id: str | None = None,
    tags: Sequence[str] = (),
    task_type: str | None = None,
    tools: Sequence[str] = (),
    agent_id: str | None = None,
    user_id: str | None = None,
    source: str = "human",
    sources: Sequence[str] = (),
    confidence: float | None = None,
    supersedes: Sequence[str] | Literal["auto"] | None = None,
) -> Call[Experience]:
    """Give a lesson, advice (second person, ready for a prompt) or both. A repeat of an id is a no-op.

    ``supersedes``: the lessons this one corrects (ids in the same agent_id and user_id), archived
    and chained to it in the same write; ``"auto"`` replaces the probable corrections the service
    finds (the ones it would name in ``correction_of``). An id of another scope, or unknown, raises
    NotFound; a forgotten one, or one another lesson replaced already, Conflict."""
    if isinstance(supersedes, str) and supersedes != "auto":
        raise ValueError(f'supersedes takes a list of experience ids or "auto", not the string {supersedes!r}')
    body = _drop_none({
        "experience_id": experience_id or new_id("exp"), "situation": situation, "lesson": lesson, "advice": advice,
        "action": action, "result": result, "tags": list(tags), "task_type": task_type, "tools": list(tools),
        "agent_id": agent_id, "user_id": user_id, "source": source, "sources": list(sources), "confidence": confidence,
        "supersedes": supersedes if supersedes is None or supersedes == "auto" else list(supersedes),
    })  # fmt: skip
    return Call("POST", "/v1/experiences", Experience.from_json, json=body)


def get_experience(experience_id: str) -> Call[Experience]:
    return Call("GET", f"/v1/experiences/{_seg(experience_id)}", Experience.from_json)


def list_experiences(
    *, agent_id: str | None = None, status: ExperienceStatus | None = None, limit: int = 50, cursor: str | None = None
) -> Call[ExperiencePage]:
    return Call("GET", "/v1/experiences", ExperiencePage.from_json,
                params={"agent_id": agent_id, "status": status, "limit": limit, "cursor": cursor})  # fmt: skip


def forget(experience_id: str, reason: str | None = None) -> Call[Experience]:
    return Call("DELETE", f"/v1/experiences/{_seg(experience_id)}", Experience.from_json,
                json=_drop_none({"reason": reason}))  # fmt: skip


def restore(experience_id: str) -> Call[Experience]:
    """Bring an archived lesson back into recall (a forgotten one answers 409). Safe to repeat."""
    return Call("POST", f"/v1/experiences/{_seg(experience_id)}/restore", Experience.from_json, json={})


def feedback(experience_id: str, signal: Signal) -> Call[Experience]:
    # Each signal moves utility and freshness once: a duplicate would count twice, so no retry
    # unless the service refused the call outright.
    return Call("POST", f"/v1/experiences/{_seg(experience_id)}/feedback", Experience.from_json,
                json={"signal": signal}, idempotent=False)  # fmt: skip


# --- recall --------------------------------------------------------------------------------


def recall(
    query: str,
    *,
    agent_id: str | None = None,
    user_id: str | None = None,
    task_type: str | None = None,
    tools: Sequence[str] = (),
    intent: str | None = None,
    tags: Sequence[str] = (),
    top_k: int = 5,
    min_score: float = 0.0,
) -> Call[RecallResult]:
    body = _drop_none({
        "query": query, "agent_id": agent_id, "user_id": user_id, "task_type": task_type, "tools": list(tools),
        "intent": intent, "tags": list(tags), "top_k": top_k, "min_score": min_score,
    })  # fmt: skip
    return Call("POST", "/v1/recall", RecallResult.from_json, json=body)


MAX_RECENT_EVENTS = 20


def advise(
    tool: str,
    params: Mapping[str, Any] | None = None,
    *,
    goal: str | None = None,
    agent_id: str | None = None,
    user_id: str | None = None,
    trajectory_id: str | None = None,
    recent_events: Sequence[Mapping[str, Any]] = (),
    top_k: int = 5,
    timeout: float | None = None,
) -> Call[AdviseResult]:
    """What past runs say about calling ``tool`` with ``params`` now. ``recent_events``: what the
    agent did just before (the last 20 are sent). ``timeout``: seconds for this call alone."""
    body = _drop_none({
        "tool": tool, "params": dict(params or {}), "goal": goal, "agent_id": agent_id, "user_id": user_id,
        "trajectory_id": trajectory_id, "recent_events": [dict(e) for e in list(recent_events)[-MAX_RECENT_EVENTS:]],
        "top_k": top_k,
    })  # fmt: skip
    return Call("POST", "/v1/advise", AdviseResult.from_json, json=body, timeout=timeout)
