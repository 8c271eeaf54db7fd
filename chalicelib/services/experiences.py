"""What was learned: manual writes, reads, forgetting and feedback."""
from __future__ import annotations

import uuid
from dataclasses import replace
from typing import Sequence

from ..domain.errors import Conflict
from ..domain.models import Experience, ExperienceStatus, Signal, Source
from ..domain.restore import restored
from ..domain.rule_reading import read_rule
from ..domain.scoring import apply_feedback, as_seen_at
from ..ports import Page
from .deps import Deps
from .indexing import index_experiences


def write_experience(
    deps: Deps,
    tenant_id: str,
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
    source: str = Source.HUMAN.value,
    sources: Sequence[str] = (),
    confidence: float | None = None,
) -> tuple[Experience, bool]:
    """Store a manual lesson (the lesson and the advice stand for each other when one is missing;
    the confidence defaults to the source's; its call rule is read from its words). A
    client-chosen id makes it idempotent: a repeat returns the stored one, indexed again if
    active: the first attempt may have stored it and failed before indexing it (a lock timeout,
    the index down), and the retry is what makes it recallable."""
    now = deps.clock.now()
    if experience_id:
        existing = deps.experiences.get_many(tenant_id, [experience_id]).get(experience_id)
        if existing is not None:
            if existing.status is ExperienceStatus.ACTIVE:
                index_experiences(deps, tenant_id, [existing])
            return existing, False
    origin = Source(source)
    lesson, advice = lesson or advice, advice or lesson
    exp = Experience(
        tenant_id=tenant_id,
        experience_id=experience_id or "exp_" + uuid.uuid4().hex[:24],
        situation=situation,
        action=action,
        result=result,
        lesson=lesson,
        advice=advice,
        created_at=now,
        updated_at=now,
        renewed_at=now,
        tags=list(tags),
        task_type=task_type,
        tools=list(tools),
        agent_id=agent_id,
        user_id=user_id,
        source=origin,
        sources=list(sources),
        confidence=confidence if confidence is not None else origin.default_confidence,
        freshness=1.0,
        rule=read_rule(advice, lesson, situation, tools),  # a person's words: read once, here
    )
    deps.experiences.put(exp)
    index_experiences(deps, exp.tenant_id, [exp])
    return exp, True


def _shown(deps: Deps, exp: Experience) -> Experience:
    # the freshness recall scores and stats counts (domain.scoring.current_freshness)
    return as_seen_at(exp, deps.clock.now(), deps.decay.half_life_days)


def get_experience(deps: Deps, tenant_id: str, experience_id: str) -> Experience:
    return _shown(deps, deps.experiences.get(tenant_id, experience_id))


def list_experiences(
    deps: Deps, tenant_id: str, agent_id: str | None, status: str | None, limit: int, cursor: str | None
) -> Page:
    wanted = ExperienceStatus(status) if status else None
    page = deps.experiences.list(tenant_id, agent_id=agent_id, status=wanted, limit=limit, cursor=cursor)
    return replace(page, items=[_shown(deps, e) for e in page.items])


def forget(deps: Deps, tenant_id: str, experience_id: str, reason: str | None) -> Experience:
    """Out of recall for good; kept as a tombstone with its reason for audit.

    Forgetting again is 200 and changes nothing, unless it gives a reason the tombstone does not
    hold yet: that reason is added after the first (``"<first>; also: <second>"``), so the answer
    shows it was recorded and the first reason is never lost.
    """
    exp = deps.experiences.get(tenant_id, experience_id)
    if exp.status is not ExperienceStatus.FORGOTTEN:
        exp = replace(
            exp, status=ExperienceStatus.FORGOTTEN, status_reason=reason or "forgotten", updated_at=deps.clock.now()
        )
        deps.experiences.put(exp)
    elif reason and reason not in _reasons(exp.status_reason):
        exp = replace(exp, status_reason=f"{exp.status_reason}{ALSO}{reason}", updated_at=deps.clock.now())
        deps.experiences.put(exp)
    deps.index.delete(tenant_id, [experience_id])
    return _shown(deps, exp)


ALSO = "; also: "


def _reasons(status_reason: str | None) -> list[str]:
    return (status_reason or "").split(ALSO)


def feedback(deps: Deps, tenant_id: str, experience_id: str, signal: str) -> Experience:
    exp = deps.experiences.get(tenant_id, experience_id)
    if exp.status is ExperienceStatus.FORGOTTEN:
        raise Conflict(f"experience {experience_id} is forgotten")
    updated = apply_feedback(exp, Signal(signal), deps.clock.now(), deps.decay)
    deps.experiences.put(updated)
    if updated.status is not ExperienceStatus.ACTIVE:
        deps.index.delete(tenant_id, [experience_id])
    return _shown(deps, updated)


def restore(deps: Deps, tenant_id: str, experience_id: str) -> Experience:
    """Archived -> active, in recall again; its history kept. A forgotten one: Conflict."""
    exp = deps.experiences.get(tenant_id, experience_id)
    updated = restored(exp, deps.clock.now())
    if updated is not exp:
        deps.experiences.put(updated)
    index_experiences(deps, tenant_id, [updated])  # also mends an active one the index lost
    return _shown(deps, updated)
