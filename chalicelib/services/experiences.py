"""What was learned: manual writes, reads, forgetting and feedback."""
from __future__ import annotations

import uuid
from dataclasses import replace

from ..domain.errors import Conflict
from ..domain.models import Experience, ExperienceStatus, Signal
from ..domain.scoring import apply_feedback
from ..ports import Page
from .deps import Deps
from .review import index_experiences


def write_experience(deps: Deps, exp: Experience) -> tuple[Experience, bool]:
    """Store a manual lesson. A client-chosen id makes it idempotent: a repeat returns the stored one."""
    now = deps.clock.now()
    if exp.experience_id:
        existing = deps.experiences.get_many(exp.tenant_id, [exp.experience_id]).get(exp.experience_id)
        if existing is not None:
            return existing, False
    exp = replace(
        exp,
        experience_id=exp.experience_id or "exp_" + uuid.uuid4().hex[:24],
        created_at=now,
        updated_at=now,
        renewed_at=now,
        freshness=1.0,
    )
    deps.experiences.put(exp)
    index_experiences(deps, exp.tenant_id, [exp])
    return exp, True


def get_experience(deps: Deps, tenant_id: str, experience_id: str) -> Experience:
    return deps.experiences.get(tenant_id, experience_id)


def list_experiences(
    deps: Deps, tenant_id: str, agent_id: str | None, status: ExperienceStatus | None, limit: int, cursor: str | None
) -> Page:
    return deps.experiences.list(tenant_id, agent_id=agent_id, status=status, limit=limit, cursor=cursor)


def forget(deps: Deps, tenant_id: str, experience_id: str, reason: str | None) -> Experience:
    """Out of recall for good; kept as a tombstone with its reason for audit."""
    exp = deps.experiences.get(tenant_id, experience_id)
    if exp.status is not ExperienceStatus.FORGOTTEN:
        exp = replace(
            exp, status=ExperienceStatus.FORGOTTEN, status_reason=reason or "forgotten", updated_at=deps.clock.now()
        )
        deps.experiences.put(exp)
    deps.index.delete(tenant_id, [experience_id])
    return exp


def feedback(deps: Deps, tenant_id: str, experience_id: str, signal: Signal) -> Experience:
    exp = deps.experiences.get(tenant_id, experience_id)
    if exp.status is ExperienceStatus.FORGOTTEN:
        raise Conflict(f"experience {experience_id} is forgotten")
    updated = apply_feedback(exp, signal, deps.clock.now(), deps.decay)
    deps.experiences.put(updated)
    if updated.status is not ExperienceStatus.ACTIVE:
        deps.index.delete(tenant_id, [experience_id])
    return updated
