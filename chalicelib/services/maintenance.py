"""Forgetting over time: decay freshness, archive what no longer earns its place; reindex."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from ..domain.models import ExperienceStatus, TrajectoryStatus
from ..domain.scoring import current_freshness, decay
from .deps import Deps
from .indexing import index_experiences


@dataclass(frozen=True)
class DecayReport:
    decayed: int
    archived: int


def run_decay(deps: Deps, as_of: datetime | None = None, page_size: int = 500) -> DecayReport:
    """Safe to run twice: the result depends only on the stored state and ``as_of``."""
    now = as_of or deps.clock.now()
    decayed = archived = 0
    cursor = None
    while True:
        page = deps.experiences.scan_active(limit=page_size, cursor=cursor)
        for exp in page.items:
            updated = decay(exp, now, deps.decay)
            if updated == exp:
                continue
            deps.experiences.put(updated)
            decayed += 1
            if updated.status is ExperienceStatus.ARCHIVED:
                deps.index.delete(exp.tenant_id, [exp.experience_id])
                archived += 1
        if page.cursor is None:
            if deps.recalls is not None:
                deps.recalls.purge_expired(deps.clock.now())  # not as_of: a decay "as of" later must not drop live ids
            return DecayReport(decayed, archived)
        cursor = page.cursor


def reindex_tenant(deps: Deps, tenant_id: str, page_size: int = 500) -> int:
    """Rebuild a tenant's vector entries from the store, so a lost index loses nothing."""
    count, cursor = 0, None
    while True:
        page = deps.experiences.list(tenant_id, status=ExperienceStatus.ACTIVE, limit=page_size, cursor=cursor)
        index_experiences(deps, tenant_id, page.items)
        count += len(page.items)
        if page.cursor is None:
            return count
        cursor = page.cursor


HISTOGRAM_BUCKETS = 10


def tenant_stats(deps: Deps, tenant_id: str, page_size: int = 500) -> dict:
    """Counts by status and a histogram of the freshness of active lessons, as a read shows it."""
    now = deps.clock.now()
    histogram = [0] * HISTOGRAM_BUCKETS
    cursor = None
    while True:
        page = deps.experiences.list(tenant_id, status=ExperienceStatus.ACTIVE, limit=page_size, cursor=cursor)
        for exp in page.items:
            f = current_freshness(exp, now, deps.decay.half_life_days)
            histogram[min(HISTOGRAM_BUCKETS - 1, int(f * HISTOGRAM_BUCKETS))] += 1
        if page.cursor is None:
            break
        cursor = page.cursor
    return {
        "experiences": {s.value: 0 for s in ExperienceStatus} | deps.experiences.count_by_status(tenant_id),
        "trajectories": {s.value: 0 for s in TrajectoryStatus} | deps.trajectories.count_by_status(tenant_id),
        "freshness_histogram": [
            {"bucket": f"{i / HISTOGRAM_BUCKETS:.1f}-{(i + 1) / HISTOGRAM_BUCKETS:.1f}", "count": n}
            for i, n in enumerate(histogram)
        ],
        "decay": {"half_life_days": deps.decay.half_life_days, "archive_below": deps.decay.archive_below,
                  "min_age_days": deps.decay.min_age_days},
    }
