"""Forgetting over time: decay freshness, archive what no longer earns its place; reindex."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from ..domain.errors import InvalidInput
from ..domain.models import Experience, ExperienceStatus, TrajectoryStatus
from ..domain.scoring import current_freshness, decay
from .deps import Deps
from .indexing import index_still_active
from .revisions import change


@dataclass(frozen=True)
class DecayReport:
    decayed: int
    archived: int
    archived_ids: tuple[str, ...] = ()  # the first MAX_LISTED of them
    dry_run: bool = False


MAX_LISTED = 1000
# How far ``as_of`` may be from the clock: decay at a date years ahead archived every tenant's
# lessons in one call. A day back covers a rerun of a missed run; a year ahead, a rehearsal.
AS_OF_PAST = timedelta(days=1)
AS_OF_FUTURE = timedelta(days=366)


def run_decay(
    deps: Deps,
    as_of: datetime | None = None,
    page_size: int = 500,
    *,
    tenant_id: str | None = None,
    dry_run: bool = False,
) -> DecayReport:
    """Decay every tenant's active lessons (or one tenant's) as of ``as_of`` (default: now, at most
    a day back or 366 days ahead, else InvalidInput). ``dry_run``: nothing is written; the report
    says what would be archived. Safe to run twice: the result depends only on the stored state
    and ``as_of``."""
    clock = deps.clock.now()
    if as_of is not None and not clock - AS_OF_PAST <= as_of <= clock + AS_OF_FUTURE:
        raise InvalidInput(
            f"as_of must be between {(clock - AS_OF_PAST).isoformat()} and {(clock + AS_OF_FUTURE).isoformat()}"
        )
    now = as_of or clock
    decayed = archived = 0
    listed: list[str] = []
    cursor = None
    while True:
        if tenant_id is None:
            page = deps.experiences.scan_active(limit=page_size, cursor=cursor)
        else:
            page = deps.experiences.list(tenant_id, status=ExperienceStatus.ACTIVE, limit=page_size, cursor=cursor)
        for exp in page.items:
            if dry_run:
                updated = decay(exp, now, deps.decay)
                if updated == exp:
                    continue
            else:
                written = decay_lesson(deps, exp, now)
                if written is None:
                    continue
                updated = written
            decayed += 1
            gone = updated.status is ExperienceStatus.ARCHIVED
            if gone:
                archived += 1
                if len(listed) < MAX_LISTED:
                    listed.append(exp.experience_id)
        if page.cursor is None:
            if deps.recalls is not None and not dry_run:
                deps.recalls.purge_expired(deps.clock.now())  # not as_of: a decay "as of" later must not drop live ids
            return DecayReport(decayed, archived, tuple(listed), dry_run)
        cursor = page.cursor


def decay_lesson(deps: Deps, exp: Experience, now: datetime) -> Experience | None:
    """Decay one lesson as of ``now``, written conditionally on the revision ``exp`` (a copy read
    by a scan) was read with: on a conflict it is read again and decayed again, and a lesson no
    longer active (forgotten, archived or restored meanwhile... anything but active) is left as
    it is. Returns the lesson as written, None when nothing was; one it archives leaves the
    index. What a decay job calls for each lesson of the page it read."""

    def decayed(current: Experience) -> Experience:
        if current.status is not ExperienceStatus.ACTIVE:
            return current
        updated = decay(current, now, deps.decay)
        return current if updated == current else updated

    done = change(deps, exp.tenant_id, exp.experience_id, decayed, read=exp)
    if not done.written:
        return None
    if done.experience.status is not ExperienceStatus.ACTIVE:
        deps.index.delete(exp.tenant_id, [exp.experience_id])
    return done.experience


def reindex_batch(deps: Deps, tenant_id: str, limit: int, cursor: str | None = None) -> tuple[int, str | None]:
    """One batch of a reindex: the ``limit`` active lessons after ``cursor`` (from the first
    without one) embedded and indexed again; returns their count and the next batch's cursor
    (None after the last). A request costs what its batch does, whatever the tenant's size."""
    page = deps.experiences.list(tenant_id, status=ExperienceStatus.ACTIVE, limit=limit, cursor=cursor)
    index_still_active(deps, tenant_id, page.items)  # one forgotten while the batch was read leaves again
    return len(page.items), page.cursor


def reindex_tenant(deps: Deps, tenant_id: str, page_size: int = 500) -> int:
    """Rebuild a tenant's vector entries from the store, so a lost index loses nothing."""
    count, cursor = 0, None
    while True:
        page = deps.experiences.list(tenant_id, status=ExperienceStatus.ACTIVE, limit=page_size, cursor=cursor)
        index_still_active(deps, tenant_id, page.items)  # one forgotten while the page was read leaves again
        count += len(page.items)
        if page.cursor is None:
            return count
        cursor = page.cursor


HISTOGRAM_BUCKETS = 10


def agents(deps: Deps, tenant_id: str, page_size: int = 500) -> tuple[dict[str, int], int]:
    """The agents the tenant's active lessons belong to, with how many each has (most first, then
    by name), and how many active lessons are shared with every agent: who a recall can name."""
    by_agent: dict[str, int] = {}
    shared = 0
    cursor = None
    while True:
        page = deps.experiences.list(tenant_id, status=ExperienceStatus.ACTIVE, limit=page_size, cursor=cursor)
        for exp in page.items:
            if exp.agent_id is None:
                shared += 1
            else:
                by_agent[exp.agent_id] = by_agent.get(exp.agent_id, 0) + 1
        if page.cursor is None:
            break
        cursor = page.cursor
    return dict(sorted(by_agent.items(), key=lambda kv: (-kv[1], kv[0]))), shared


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
