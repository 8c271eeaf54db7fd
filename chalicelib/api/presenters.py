"""Domain objects as the response models of the API."""
from __future__ import annotations

from dataclasses import asdict

from ..domain.models import Experience, Hit, Tenant, Trajectory
from ..ports import DeadJob
from . import schemas as s


def experience_out(exp: Experience) -> s.ExperienceOut:
    return s.ExperienceOut.model_validate({**asdict(exp), "source": exp.source.value, "status": exp.status.value})


def trajectory_out(traj: Trajectory) -> s.TrajectoryOut:
    return s.TrajectoryOut.model_validate({**asdict(traj), "status": traj.status.value})


def hit_out(hit: Hit) -> s.HitOut:
    return s.HitOut(experience=experience_out(hit.experience), score=hit.score,
                    explanation=s.ExplanationOut.model_validate(asdict(hit.explanation)))


def failed_review_out(job: DeadJob) -> s.FailedReviewOut:
    return s.FailedReviewOut.model_validate(asdict(job))


def tenant_summary(tenant: Tenant) -> s.TenantSummary:
    return s.TenantSummary(tenant_id=tenant.tenant_id, name=tenant.name, created_at=tenant.created_at)
