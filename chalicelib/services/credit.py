"""Credit from outcomes, when a trajectory is reviewed: each lesson its recall events served is
judged adopted or ignored and the outcome moves it (``domain.credit``), once per (trajectory,
lesson) whatever the redeliveries.

Exactly once: a credited lesson carries the trajectory's id (``Experience.credited``) in the same
write that credits it, and a marker in the ledger follows. A review that runs again finds the
marker; one that crashed between the two writes finds the id on the lesson, and only marks it.
"""
from __future__ import annotations

from datetime import timedelta
from typing import Any, Sequence

from ..domain.credit import adopted, credited, recall_events, servings
from ..domain.models import Event, Experience, ExperienceStatus, Trajectory
from .deps import Deps
from .revisions import change

MARKER_DAYS = 365  # far past any redelivery: the queue gives up on a job within hours


def credit_trajectory(deps: Deps, traj: Trajectory, events: Sequence[Event]) -> dict[str, Any]:
    """Credit the lessons served in ``traj``; a summary for the trajectory's review."""
    ids = [rid for _, rid in recall_events(events)]
    if not ids or deps.recalls is None:
        return {}
    tenant_id, now = traj.tenant_id, deps.clock.now()
    served = deps.recalls.served(tenant_id, ids, now)
    plan = servings(events, {rid: s.experience_ids for rid, s in served.items()})
    stored = deps.experiences.get_many(tenant_id, [s.experience_id for s in plan])
    summary: dict[str, Any] = {"recalls": len(ids), "unknown_recalls": len(set(ids) - set(served)),
                               "adopted": [], "ignored": [], "already_credited": []}
    expires = now + timedelta(days=MARKER_DAYS)
    for serving in plan:
        exp = stored.get(serving.experience_id)
        if exp is None or exp.status is ExperienceStatus.FORGOTTEN:
            continue
        if deps.recalls.is_credited(tenant_id, traj.trajectory_id, exp.experience_id):
            summary["already_credited"].append(exp.experience_id)
            continue
        was_adopted = adopted(exp, events, serving)

        def credit(current: Experience) -> Experience:
            if current.status is ExperienceStatus.FORGOTTEN:  # forgotten since it was read: left alone
                return current
            return credited(current, was_adopted, traj.outcome, traj.trajectory_id, now, deps.decay)

        done = change(deps, tenant_id, exp.experience_id, credit, read=exp)
        if done.written and done.experience.status is not ExperienceStatus.ACTIVE:
            deps.index.delete(tenant_id, [exp.experience_id])
        deps.recalls.mark_credited(tenant_id, traj.trajectory_id, exp.experience_id, expires)
        summary["adopted" if was_adopted else "ignored"].append(exp.experience_id)
    return summary
