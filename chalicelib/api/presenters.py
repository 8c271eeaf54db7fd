"""Domain objects as the response models of the API."""
from __future__ import annotations

from dataclasses import asdict, fields
from typing import TYPE_CHECKING, Any

from . import schemas as s

if TYPE_CHECKING:  # the domain types only annotate: importing the app loads no domain module
    from datetime import datetime

    from ..domain.attribution import Attribution
    from ..domain.call_rule import Argument, CallRule
    from ..domain.models import Event, Experience, Hit, Tenant, Trajectory
    from ..ports import DeadJob


def _fields(obj: Any) -> dict[str, Any]:
    """A dataclass's fields, not copied: ``asdict`` deep-copies every list and dict (about a
    millisecond per experience), and the response model copies what it keeps anyway."""
    return {f.name: getattr(obj, f.name) for f in fields(obj)}


def experience_out(exp: Experience) -> s.ExperienceOut:
    from ..domain.credit import rates

    # Only the fields the answer has: asdict would deep-copy the examples, literals and anchors of
    # every lesson first, most of the cost of a page of 200. The credit rates are derived.
    kept = {name: getattr(exp, name) for name in s.ExperienceOut.model_fields if hasattr(exp, name)}
    return s.ExperienceOut.model_validate(
        {**kept, **_fields(rates(exp)), "source": exp.source.value, "status": exp.status.value, "rule": rule_out(exp.rule)}
    )


def _argument_out(arg: Argument) -> dict[str, Any]:
    return {**_fields(arg), "kind": arg.kind.value, "keys": list(arg.keys)}


def rule_out(rule: CallRule | None) -> dict[str, Any] | None:
    if rule is None:
        return None
    return {
        "kind": rule.kind.value, "tool": rule.tool, "other_tool": rule.other_tool,
        "arguments": [_argument_out(a) for a in rule.arguments],
        "first_arguments": [_argument_out(a) for a in rule.first_arguments],
        "alternatives": list(rule.alternatives), "error": rule.error,
    }


def experience_written(exp: Experience, correction_of: list[str]) -> s.ExperienceWritten:
    return s.ExperienceWritten.model_validate({**experience_out(exp).model_dump(), "correction_of": correction_of})


def trajectory_out(traj: Trajectory, now: datetime | None = None) -> s.TrajectoryOut:
    """``now``: when its events' expiry is judged (None: not expired)."""
    return s.TrajectoryOut.model_validate({**_fields(traj), "status": traj.status.value,
                                           "events_expired": now is not None and traj.events_expired(now)})


def hit_out(hit: Hit) -> s.HitOut:
    return s.HitOut(experience=experience_out(hit.experience), score=hit.score,
                    explanation=s.ExplanationOut.model_validate(_fields(hit.explanation)))


def failed_review_out(job: DeadJob) -> s.FailedReviewOut:
    return s.FailedReviewOut.model_validate(asdict(job))


def tenant_summary(tenant: Tenant) -> s.TenantSummary:
    return s.TenantSummary(tenant_id=tenant.tenant_id, name=tenant.name, created_at=tenant.created_at,
                           event_retention_days=tenant.event_retention_days)


def trajectory_events_out(
    trajectory_id: str, events: list[Event], attribution: Attribution, cursor: str | None = None, expired: bool = False
) -> s.TrajectoryEventsOut:
    return s.TrajectoryEventsOut.model_validate({
        "trajectory_id": trajectory_id,
        "events_expired": expired,
        "events": [
            {**asdict(e), "parent": attribution.parent.get(e.event_id), "label": attribution.labels.get(e.event_id),
             "contribution": round(attribution.contribution.get(e.event_id, 0.0), 4)}
            for e in events
        ],
        "contrasts": [
            {"failed": c.failed.event_id, "worked": c.worked.event_id, "kind": c.kind,
             "changed_params": list(c.changed_params), "prerequisite": c.prerequisite}
            for c in attribution.contrasts
        ],
        "cursor": cursor,
    })


def advise_out(answer: Any) -> s.AdviseOut:
    return s.AdviseOut(
        recall_id=answer.recall_id,
        warnings=[s.AdviseWarningOut(experience_id=w.experience_id, message=w.message, fix=w.fix) for w in answer.warnings],
        hits=[hit_out(h) for h in answer.hits],
        advice=answer.advice,
    )
