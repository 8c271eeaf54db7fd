"""A tenant's export and its deletion: admin jobs that outlast one invocation.

Each job is a checkpoint (``ports.Checkpoints``) named after it, and the names of the jobs under
way are listed in one more checkpoint (``tenant-jobs``). A run (``run_pending``: the scheduled
function in the cloud, the worker's timer on the embedded server) takes the jobs in turn and does
bounded steps while the invocation's remaining time allows a step as slow as the slowest so far,
saving the job's state after each step: a run cut short repeats at most one step, which is
harmless (a part is written again under the same name; a purge deletes what is left).

* **Export**: JSON Lines parts (``ports.ExportStore``), one per step: the tenant's record (no key
  and no key hash), then every lesson (every status, with its version chain: ``supersedes``,
  ``superseded_by``, its sources), every trajectory (with its review record) followed by its events
  in order, then the review jobs given up on. Each line is an object with ``"type"``.
* **Deletion**: the tenant's keys are revoked when it is asked for (no request of the tenant is
  served after it, beyond the authorizer's cache: the purge starts once that has run out, so a
  write let through by it is purged too), then the index's entries of the tenant, its exports, and
  every item of it in every table are deleted, the tenant's record last (``TenantData.purge``),
  then the checkpoints kept of it beside the stores (the successful runs its failed runs are
  compared with, its decay and stats progress).
  Its name can be taken again once the deletion is done. What is kept: this job's record
  (the tenant id, when, and how many items went), for the operator.
"""
from __future__ import annotations

import dataclasses
import json
import time
import uuid
from datetime import datetime, timedelta
from enum import Enum
from typing import Any, Callable

from ..domain.errors import Conflict, InvalidInput, NotFound
from . import contrast, maintenance
from .deps import Deps

REGISTRY = "tenant-jobs"
DELETION, EXPORT = "deletion", "export"
PART_BYTES = 1_000_000  # a part ends after the step that takes it past this (a download stays under Lambda's 6 MB)
PAGE = 200  # lessons, trajectory ids or events a step reads
EXPORT_PHASES = ("tenant", "experiences", "trajectories", "reviews", "done")


def deletion_name(tenant_id: str) -> str:
    return f"tenant-delete:{tenant_id}"


def export_name(export_id: str) -> str:
    return f"tenant-export:{export_id}"


def _tenant_data(deps: Deps):
    if deps.tenant_data is None:
        raise InvalidInput("this deployment has no tenant export or deletion")
    return deps.tenant_data


def _register(deps: Deps, name: str) -> None:
    """List the job as under way. The list is one checkpoint written whole: a write that raced
    another may lose a name, so it is read back (and a job's status read lists it again, should a
    name still be lost: ``_still_listed``)."""
    assert deps.checkpoints is not None
    for _ in range(3):
        registry = deps.checkpoints.load(REGISTRY) or {"pending": []}
        if name in registry["pending"]:
            return
        registry["pending"].append(name)
        deps.checkpoints.save(REGISTRY, registry)


def _still_listed(deps: Deps, name: str, state: dict) -> dict:
    """A job under way whose name the list lost (two writes of it raced) is listed again."""
    if state.get("state") == "running":
        _register(deps, name)
    return state


def _unregister(deps: Deps, names: list[str]) -> None:
    assert deps.checkpoints is not None
    registry = deps.checkpoints.load(REGISTRY) or {"pending": []}
    kept = [n for n in registry["pending"] if n not in names]
    if kept != registry["pending"]:
        deps.checkpoints.save(REGISTRY, {"pending": kept})


def _checkpoints(deps: Deps):
    if deps.checkpoints is None:
        raise InvalidInput("this deployment keeps no job checkpoints")
    return deps.checkpoints


# --- deletion ------------------------------------------------------------------------------------


def start_deletion(deps: Deps, tenant_id: str, grace_seconds: float = 0.0) -> dict:
    """Revoke every key of the tenant now and queue the purge of everything it owns, to start
    ``grace_seconds`` from now (the authorizer's cache). Idempotent: asked again, the deletion
    under way (or done) is answered. NotFound for a tenant that never was."""
    checkpoints, data = _checkpoints(deps), _tenant_data(deps)
    name = deletion_name(tenant_id)
    state = checkpoints.load(name)
    if state is not None:
        deps.tenants.revoke_keys(tenant_id)  # a key added while it ran (a rotation racing it) goes too
        return state
    if data.tenant(tenant_id) is None:
        raise NotFound(f"tenant {tenant_id} not found")
    now = deps.clock.now()
    revoked = deps.tenants.revoke_keys(tenant_id)
    state = {"kind": DELETION, "job_id": tenant_id, "tenant_id": tenant_id, "state": "running",
             "requested_at": now.isoformat(), "not_before": (now + timedelta(seconds=grace_seconds)).isoformat(),
             "keys_revoked": revoked, "deleted": {"index_entries": 0, "export_parts": 0, "items": 0}, "runs": 0}
    checkpoints.save(name, state)
    _register(deps, name)
    return state


def being_deleted(deps: Deps, tenant_id: str) -> bool:
    """Whether a deletion of the tenant was asked for (under way or done)."""
    return deps.checkpoints is not None and deps.checkpoints.load(deletion_name(tenant_id)) is not None


def deletion_status(deps: Deps, tenant_id: str) -> dict:
    state = _checkpoints(deps).load(deletion_name(tenant_id))
    if state is None:
        raise NotFound(f"no deletion of tenant {tenant_id}")
    return _still_listed(deps, deletion_name(tenant_id), state)


def _deletion_step(deps: Deps, state: dict, page: int) -> bool:
    """One bounded step of the purge; True once nothing of the tenant is left."""
    tenant_id, deleted = state["tenant_id"], state["deleted"]
    if deps.clock.now() < datetime.fromisoformat(state["not_before"]):
        return False
    if not state.get("index_done"):
        n = deps.index.purge_tenant(tenant_id, page)
        deleted["index_entries"] += n
        state["index_done"] = n == 0
        return False
    if not state.get("exports_done"):
        if deps.exports is not None:
            deleted["export_parts"] += deps.exports.delete_prefix(f"{tenant_id}/")
        state["exports_done"] = True
        return False
    n = _tenant_data(deps).purge(tenant_id, page)
    deleted["items"] += n
    if n:
        return False
    # a review that was running when the purge began may have indexed a lesson since: look again
    late = deps.index.purge_tenant(tenant_id, page)
    deleted["index_entries"] += late
    if late:
        return False
    # last, what maintenance and the reviews kept of the tenant beside its stores: the successful
    # runs a failed one is compared with (their goals), its decay and stats progress
    names = [*contrast.tenant_checkpoints(deps, tenant_id), maintenance.TENANT_CHECKPOINT.format(tenant_id=tenant_id),
             maintenance.STATS_CHECKPOINT.format(tenant_id=tenant_id)]
    for name in names:
        _checkpoints(deps).delete(name)
    deleted["checkpoints"] = deleted.get("checkpoints", 0) + len(names)
    return True


# --- export --------------------------------------------------------------------------------------


def start_export(deps: Deps, tenant_id: str) -> dict:
    """Queue an export of everything the tenant owns; NotFound for an unknown tenant, Conflict for
    one being deleted."""
    checkpoints, data = _checkpoints(deps), _tenant_data(deps)
    if deps.exports is None:
        raise InvalidInput("this deployment has nowhere to write exports")
    if checkpoints.load(deletion_name(tenant_id)) is not None:
        raise Conflict(f"tenant {tenant_id} is being deleted (or was)")
    if data.tenant(tenant_id) is None:
        raise NotFound(f"tenant {tenant_id} not found")
    export_id = "x_" + uuid.uuid4().hex[:20]
    state: dict[str, Any] = {"kind": EXPORT, "job_id": export_id, "tenant_id": tenant_id, "state": "running",
             "requested_at": deps.clock.now().isoformat(), "phase": "tenant", "cursor": None, "pending": [],
             "after_seq": 0, "parts": [], "counts": {"tenant": 0, "experiences": 0, "trajectories": 0, "events": 0,
                                                     "failed_reviews": 0}, "runs": 0}
    checkpoints.save(export_name(export_id), state)
    _register(deps, export_name(export_id))
    return state


def export_status(deps: Deps, tenant_id: str, export_id: str) -> dict:
    state = _checkpoints(deps).load(export_name(export_id))
    if state is None or state.get("tenant_id") != tenant_id:
        raise NotFound(f"no export {export_id} of tenant {tenant_id}")
    return _still_listed(deps, export_name(export_id), state)


def part_key(tenant_id: str, export_id: str, number: int) -> str:
    return f"{tenant_id}/{export_id}/part-{number:05d}.jsonl"


def export_part(deps: Deps, tenant_id: str, export_id: str, number: int) -> bytes:
    """The JSON Lines of one part of a finished (or running) export; NotFound for a part not written."""
    state = export_status(deps, tenant_id, export_id)
    if not 1 <= number <= len(state["parts"]) or deps.exports is None:
        raise NotFound(f"export {export_id} has no part {number}")
    return deps.exports.read(part_key(tenant_id, export_id, number))


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return value


def _line(kind: str, obj: Any, **top: str) -> str:
    """One line: ``{"type": kind, ...top, "data": the record as stored}``."""
    from ..adapters.codec import rule_to_doc  # the stored form of a lesson's call rule
    from ..domain.call_rule import CallRule

    pairs = obj.items() if isinstance(obj, dict) else _plain_fields(obj)
    data = {key: rule_to_doc(value) if isinstance(value, CallRule) else _plain(value) for key, value in pairs}
    return json.dumps({"type": kind, **top, "data": data}, ensure_ascii=False, default=str, separators=(",", ":"))


def _plain_fields(obj: Any) -> list[tuple[str, Any]]:
    return [(f.name, getattr(obj, f.name)) for f in dataclasses.fields(obj)]


def _export_step(deps: Deps, state: dict, page: int) -> list[str]:
    """One bounded step: its lines. Moves ``state`` on; ``phase`` "done" once all is read."""
    tenant_id, counts = state["tenant_id"], state["counts"]
    phase = state["phase"]
    if phase == "tenant":
        tenant = _tenant_data(deps).tenant(tenant_id)
        state["phase"] = "experiences"
        if tenant is None:
            raise NotFound(f"tenant {tenant_id} not found")
        counts["tenant"] = 1
        return [_line("tenant", {"tenant_id": tenant.tenant_id, "name": tenant.name, "created_at": tenant.created_at.isoformat()})]
    if phase == "experiences":
        got = deps.experiences.list(tenant_id, limit=page, cursor=state["cursor"])
        counts["experiences"] += len(got.items)
        state["cursor"] = got.cursor
        if got.cursor is None:
            state["phase"] = "trajectories"
        return [_line("experience", e) for e in got.items]
    if phase == "trajectories":
        if state["pending"]:
            trajectory_id = state["pending"][0]
            events = deps.trajectories.events_page(tenant_id, trajectory_id, state["after_seq"], page)
            counts["events"] += len(events)
            if len(events) < page:
                state["pending"].pop(0)
                state["after_seq"] = 0
            else:
                state["after_seq"] = events[-1].seq
            return [_line("event", e, trajectory_id=trajectory_id) for e in events]
        ids = _tenant_data(deps).trajectory_ids(tenant_id, state["cursor"], page)
        if not ids:
            state["phase"], state["cursor"] = "reviews", None
            return []
        lines = []
        for trajectory_id in ids:
            try:
                traj = deps.trajectories.get(tenant_id, trajectory_id)
            except NotFound:
                continue
            lines.append(_line("trajectory", traj))
            state["pending"].append(trajectory_id)
        counts["trajectories"] += len(lines)
        state["cursor"] = ids[-1]
        return lines
    if phase == "reviews":
        dead = deps.queue.dead_jobs(tenant_id, limit=1000)
        counts["failed_reviews"] = len(dead)
        state["phase"] = "done"
        return [_line("failed_review", j) for j in dead]
    return []


def _export_run(deps: Deps, state: dict, page: int, room: Callable[[float], bool]) -> bool:
    """Steps into one part while ``room`` allows; the part is written, then the state saved by the
    caller. True once the export is complete."""
    assert deps.exports is not None
    lines: list[str] = []
    size = 0
    longest = 0.0
    while state["phase"] != "done" and size < PART_BYTES and room(longest):
        started = time.monotonic()
        got = _export_step(deps, state, page)
        lines += got
        size += sum(len(line.encode()) + 1 for line in got)
        longest = max(longest, time.monotonic() - started)
    if lines:
        number = len(state["parts"]) + 1
        key = part_key(state["tenant_id"], state["job_id"], number)
        data = ("\n".join(lines) + "\n").encode()
        deps.exports.write(key, data)
        state["parts"].append({"number": number, "lines": len(lines), "bytes": len(data), "location": deps.exports.location(key)})
    return state["phase"] == "done"


# --- running -------------------------------------------------------------------------------------


def run_job(deps: Deps, name: str, remaining_seconds: Callable[[], float], reserve_seconds: float = 5.0,
            page: int = PAGE) -> dict | None:
    """Go on with one job from its checkpoint while there is time; returns its state (None: no such job)."""
    checkpoints = _checkpoints(deps)
    state = checkpoints.load(name)
    if state is None or state["state"] in ("done", "cancelled"):
        return state
    if state["kind"] == EXPORT and checkpoints.load(deletion_name(state["tenant_id"])) is not None:
        state.update(state="cancelled", finished_at=deps.clock.now().isoformat())  # its parts go with the tenant
        checkpoints.save(name, state)
        return state
    longest = float(state.get("step_seconds", 0.0))

    def room(slowest: float) -> bool:
        return remaining_seconds() > reserve_seconds + max(longest, slowest)

    state["runs"] = state.get("runs", 0) + 1
    while room(0.0):
        started = time.monotonic()
        if state["kind"] == DELETION:
            finished = _deletion_step(deps, state, page)
            if not finished and deps.clock.now() < datetime.fromisoformat(state["not_before"]):
                break  # the authorizer's cache has not run out yet
        else:
            finished = _export_run(deps, state, page, room)
        longest = max(longest, time.monotonic() - started)
        state["step_seconds"] = round(longest, 3)
        if finished:
            state.update(state="done", finished_at=deps.clock.now().isoformat())
        checkpoints.save(name, state)
        if finished:
            break
    return state


def run_pending(deps: Deps, remaining_seconds: Callable[[], float], reserve_seconds: float = 5.0,
                page: int = PAGE) -> dict[str, int]:
    """One run over the jobs under way (deletions first: they free a name and stop a cost), each
    from its checkpoint, while time is left. Returns how many were worked on and finished."""
    if deps.checkpoints is None or deps.tenant_data is None:
        return {"worked": 0, "finished": 0}
    pending = (deps.checkpoints.load(REGISTRY) or {"pending": []})["pending"]
    order = sorted(pending, key=lambda n: not n.startswith("tenant-delete:"))
    worked, done = 0, []
    for name in order:
        if remaining_seconds() <= reserve_seconds:
            break
        state = run_job(deps, name, remaining_seconds, reserve_seconds, page)
        worked += 1
        if state is None or state["state"] in ("done", "cancelled"):
            done.append(name)
    if done:
        _unregister(deps, done)
    return {"worked": worked, "finished": len(done)}
