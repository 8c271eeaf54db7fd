"""Credit from outcomes, when a trajectory is reviewed: each lesson its recall events served is
judged adopted or ignored and the outcome moves it (``domain.credit``), once per (trajectory,
lesson) whatever the redeliveries.

Bound to its recall: a recall id credits only a trajectory of the scope it served (its agent and
user), only the first such trajectory to attach it (``RecallLedger.attach``; an advise made for a
trajectory, that one), and only the lessons that trajectory may see.

Exactly once: a credited lesson carries the trajectory's id (``Experience.credited``) in the same
write that credits it, and a marker in the ledger follows. A review that runs again finds the
marker; one that crashed between the two writes finds the id on the lesson, and only marks it.
"""
from __future__ import annotations

from datetime import timedelta
from typing import Any, Sequence

from ..domain.credit import adopted, credited, recall_events, serves_run, servings
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
    # a recall credits one run of the scope it served: the first to attach it (or the advise's own)
    owned = {rid: s for rid, s in served.items()
             if serves_run(s.agent_id, s.user_id, s.trajectory_id, traj)
             and deps.recalls.attach(tenant_id, rid, traj.trajectory_id)}
    plan = servings(events, {rid: s.experience_ids for rid, s in owned.items()})
    stored = deps.experiences.get_many(tenant_id, [s.experience_id for s in plan])
    summary: dict[str, Any] = {"recalls": len(ids), "unknown_recalls": len(set(ids) - set(served)),
                               "adopted": [], "ignored": [], "already_credited": []}
    if len(owned) < len(served):
        summary["other_runs_recalls"] = len(served) - len(owned)  # another scope's, or bound to another run
    expires = now + timedelta(days=MARKER_DAYS)
    for serving in plan:
        exp = stored.get(serving.experience_id)
        if exp is None or exp.status is ExperienceStatus.FORGOTTEN:
            continue
        if not exp.scope.visible_to(traj.agent_id, traj.user_id):  # a lesson this run may not see
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
