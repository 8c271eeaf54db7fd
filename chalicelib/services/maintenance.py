"""Forgetting over time: archive what no longer earns its place (freshness is derived on read); reindex."""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Callable

from ..domain.errors import InvalidInput, NotFound
from ..domain.models import Experience, ExperienceStatus, TrajectoryStatus
from ..domain.scoring import current_freshness, decay
from .deps import Deps
from .indexing import index_still_active


@dataclass(frozen=True)
class DecayReport:
    decayed: int  # active lessons whose freshness fell since it was last written (derived, not written)
    archived: int
    archived_ids: tuple[str, ...] = ()  # the first MAX_LISTED of them
    dry_run: bool = False
    examined: int = 0  # active lessons read
    written: int = 0  # lessons written: one conditional write per archive, nothing else
    conflicts: int = 0  # archives not made: the lesson changed since it was read (left to the next pass)
    complete: bool = True  # False: the time budget ran out; the checkpoint says where to go on
    events_purged: int = 0  # events past their retention deleted (stores whose database expires them: 0)


MAX_LISTED = 1000
# How far ``as_of`` may be from the clock: decay at a date years ahead archived every tenant's
# lessons in one call. A day back covers a rerun of a missed run; a year ahead, a rehearsal.
AS_OF_PAST = timedelta(days=1)
AS_OF_FUTURE = timedelta(days=366)

DECAY_CHECKPOINT = "decay"


@dataclass
class _Tally:
    decayed: int = 0
    archived: int = 0
    examined: int = 0
    written: int = 0
    conflicts: int = 0
    listed: list[str] = field(default_factory=list)

    def report(self, dry_run: bool = False, complete: bool = True, purged: int = 0) -> DecayReport:
        return DecayReport(self.decayed, self.archived, tuple(self.listed), dry_run, self.examined, self.written,
                           self.conflicts, complete, purged)


PURGE_BATCH = 500  # events one purge call deletes at most (one SQLite write transaction)
PURGE_MAX_BATCHES = 200  # batches one decay run purges at most (100,000 events); the next run goes on


def purge_expired_events(deps: Deps, now: datetime, remaining_seconds: Callable[[], float] | None = None,
                         reserve_seconds: float = 0.0, max_batches: int = PURGE_MAX_BATCHES) -> int:
    """Delete the events past their retention, ``PURGE_BATCH`` at a time, until none is left, or
    ``max_batches`` were deleted, or ``remaining_seconds`` falls to ``reserve_seconds``. A store
    whose database expires them itself (DynamoDB's TTL) answers 0 at once. Returns how many."""
    total = 0
    for _ in range(max_batches):
        if remaining_seconds is not None and remaining_seconds() <= reserve_seconds:
            break
        done = deps.trajectories.purge_expired_events(now, PURGE_BATCH)
        total += done
        if done < PURGE_BATCH:
            break
    return total


def _archive(deps: Deps, read: Experience, now: datetime) -> bool:
    """Archive ``read`` by a conditional write; a lesson changed since it was read is read again
    and decided again once (feedback may have renewed it). Returns whether it was archived."""
    for _ in range(2):
        updated = decay(read, now, deps.decay)
        if updated.status is not ExperienceStatus.ARCHIVED:
            return False
        if deps.experiences.archive_if_unchanged(read, updated):
            return True
        try:
            read = deps.experiences.get(read.tenant_id, read.experience_id)
        except NotFound:
            return False
        if read.status is not ExperienceStatus.ACTIVE:
            return False
    return False


def _decay_page(deps: Deps, items: list[Experience], now: datetime, tally: _Tally, dry_run: bool) -> None:
    """Freshness stays derived on read (``scoring.current_freshness``): only an archive is written."""
    gone: dict[str, list[str]] = {}
    for exp in items:
        tally.examined += 1
        updated = decay(exp, now, deps.decay)
        if updated.freshness < exp.freshness:
            tally.decayed += 1
        if updated.status is not ExperienceStatus.ARCHIVED:
            continue
        if not dry_run:
            if not _archive(deps, exp, now):
                tally.conflicts += 1
                continue
            tally.written += 1
            gone.setdefault(exp.tenant_id, []).append(exp.experience_id)
        tally.archived += 1
        if len(tally.listed) < MAX_LISTED:
            tally.listed.append(exp.experience_id)
    for tenant_id, ids in gone.items():
        deps.index.delete(tenant_id, ids)


def _check_as_of(deps: Deps, as_of: datetime | None) -> datetime:
    clock = deps.clock.now()
    if as_of is not None and not clock - AS_OF_PAST <= as_of <= clock + AS_OF_FUTURE:
        raise InvalidInput(
            f"as_of must be between {(clock - AS_OF_PAST).isoformat()} and {(clock + AS_OF_FUTURE).isoformat()}"
        )
    return as_of or clock


def run_decay(
    deps: Deps,
    as_of: datetime | None = None,
    page_size: int = 500,
    *,
    tenant_id: str | None = None,
    dry_run: bool = False,
) -> DecayReport:
    """Decay every tenant's active lessons (or one tenant's) as of ``as_of`` (default: now, at most
    a day back or 366 days ahead, else InvalidInput), in one go: archive those that no longer earn
    their place, each by a conditional write. Freshness is not written: every read derives it.
    ``dry_run``: nothing is written; the report says what would be archived. Safe to run twice:
    the result depends only on the stored state and ``as_of``."""
    now = _check_as_of(deps, as_of)
    tally, cursor = _Tally(), None
    while True:
        if tenant_id is None:
            page = deps.experiences.scan_active(limit=page_size, cursor=cursor)
        else:
            page = deps.experiences.list(tenant_id, status=ExperienceStatus.ACTIVE, limit=page_size, cursor=cursor)
        _decay_page(deps, page.items, now, tally, dry_run)
        if page.cursor is None:
            purged = 0
            if not dry_run:
                if deps.recalls is not None:
                    deps.recalls.purge_expired(deps.clock.now())  # not as_of: a decay "as of" later must not drop live ids
                purged = purge_expired_events(deps, deps.clock.now())  # nor events
            return tally.report(dry_run, purged=purged)
        cursor = page.cursor


def run_decay_pass(
    deps: Deps,
    remaining_seconds: Callable[[], float],
    *,
    interval: timedelta = timedelta(hours=1),
    reserve_seconds: float = 20.0,
    page_size: int = 200,
) -> DecayReport:
    """The scheduled decay: one pass over every tenant's active lessons (in tenant, then id order)
    every ``interval``, spread over as many runs as it takes. A run goes on from the checkpoint
    the last one saved, page after page, while a page as slow as the slowest so far would still
    end with ``reserve_seconds`` left (``remaining_seconds``: the invocation's remaining time),
    then saves where it stopped. A run
    that finds the last pass finished less than ``interval`` after it started does nothing.

    The checkpoint is written once per run, whatever it did (and on failure, what was done before
    it): a run cut short repeats at most the page it was in, which is harmless (the archives are
    conditional and decay depends only on the stored state and the time)."""
    if deps.checkpoints is None:
        return run_decay(deps, page_size=page_size)
    state = deps.checkpoints.load(DECAY_CHECKPOINT) or {}
    now = deps.clock.now()
    if state.get("done", True):  # no pass under way: start one if the last began long enough ago
        started = state.get("started_at")
        if started is not None and now - datetime.fromisoformat(started) < interval:
            return DecayReport(0, 0)
        state = {"started_at": now.isoformat(), "cursor": None, "done": False, "runs": 0, "examined": 0, "archived": 0,
                 "page_seconds": state.get("page_seconds", 0.0)}
    # the slowest page of the last run stands in for this run's until it has timed one
    tally, cursor, complete, longest = _Tally(), state.get("cursor"), False, float(state.get("page_seconds", 0.0))
    timed = 0.0
    try:
        # the next page starts only if it would end before the reserve, were it as slow as the slowest yet
        while remaining_seconds() > reserve_seconds + longest:
            started = time.monotonic()
            page = deps.experiences.scan_active(limit=page_size, cursor=cursor)
            _decay_page(deps, page.items, deps.clock.now(), tally, dry_run=False)
            timed = max(timed, time.monotonic() - started)
            longest = max(longest, timed)
            cursor = page.cursor
            if cursor is None:
                complete = True
                break
    finally:
        state.update(cursor=cursor, runs=state.get("runs", 0) + 1, examined=state.get("examined", 0) + tally.examined,
                     archived=state.get("archived", 0) + tally.archived, page_seconds=round(timed or longest, 3))
        if complete:
            state.update(done=True, finished_at=deps.clock.now().isoformat())
        deps.checkpoints.save(DECAY_CHECKPOINT, state)
    if complete and deps.recalls is not None:
        deps.recalls.purge_expired(deps.clock.now())
    purged = purge_expired_events(deps, deps.clock.now(), remaining_seconds, reserve_seconds)
    return tally.report(complete=complete, purged=purged)


# --- the fanned-out pass: one message per tenant, each tenant's work with its own checkpoint ------

# a tenant's checkpoint (its pass, the step the next message must carry, its cursor)
TENANT_CHECKPOINT = "decay/{tenant_id}"
# a tenant's next message is delayed by this much: the checkpoint naming its step is saved by then,
# and the tenants queued behind it go first
CONTINUE_DELAY_SECONDS = 10
FAN_OUT_BATCH = 100  # tenants the decay schedule sends between two saves of the pass's checkpoint


@dataclass(frozen=True)
class FanOutReport:
    enqueued: int  # tenants whose pass message this run sent
    complete: bool  # every tenant of the pass is enqueued (False: the next run goes on)
    pass_id: str | None = None  # the pass under way (its start), None when none is


def fan_out_decay_pass(
    deps: Deps,
    remaining_seconds: Callable[[], float],
    *,
    interval: timedelta = timedelta(hours=1),
    reserve_seconds: float = 20.0,
    batch: int | None = None,
) -> FanOutReport:
    """The decay schedule with a queue: a pass starts ``interval`` after the last began and sends
    each tenant one message ``{"tenant_id", "pass", "step": 0}`` (``decay_tenant`` does the work,
    in the decay worker). Tenants are read a page of ``batch`` at a time from the listing's cursor
    kept in the checkpoint (no run reads the whole listing) while ``remaining_seconds`` is above
    ``reserve_seconds``; the checkpoint is saved after every page, so a run cut short sends at most
    one page twice (a tenant's second step-0 message is dropped by its checkpoint). The recall ids
    that expired are purged once a pass is all enqueued."""
    assert deps.checkpoints is not None and deps.decay_queue is not None
    state = deps.checkpoints.load(DECAY_CHECKPOINT) or {}
    now = deps.clock.now()
    if state.get("done", True):
        started = state.get("started_at")
        if started is not None and now - datetime.fromisoformat(started) < interval:
            return FanOutReport(0, True)
        state = {"started_at": now.isoformat(), "cursor": None, "done": False, "runs": 0, "enqueued": 0}
    pass_id = state["started_at"]
    sent, complete, pages = 0, False, 0
    state["runs"] = state.get("runs", 0) + 1
    while remaining_seconds() > reserve_seconds:  # a page of the tenants' listing, then its messages
        pages += 1
        page = deps.tenants.list_tenants_page(batch or FAN_OUT_BATCH, state.get("cursor"))
        chunk = [t.tenant_id for t in page.items]
        if chunk:
            deps.decay_queue.send([{"tenant_id": t, "pass": pass_id, "step": 0} for t in chunk])
        sent += len(chunk)
        complete = page.cursor is None
        state.update(cursor=page.cursor, enqueued=state.get("enqueued", 0) + len(chunk))
        if complete:
            state.update(done=True, finished_at=deps.clock.now().isoformat())
        deps.checkpoints.save(DECAY_CHECKPOINT, state)
        if complete:
            break
    if not pages:  # no time for a page: the run is counted all the same
        deps.checkpoints.save(DECAY_CHECKPOINT, state)
    if complete and deps.recalls is not None:
        deps.recalls.purge_expired(deps.clock.now())
    return FanOutReport(sent, complete, pass_id)


@dataclass(frozen=True)
class TenantDecay:
    report: DecayReport
    skipped: bool = False  # the message was stale or a duplicate: its step was done, or its pass is over
    next_step: int | None = None  # the step of the message sent to go on (None: done, or skipped)


def decay_tenant(
    deps: Deps,
    message: dict,
    remaining_seconds: Callable[[], float],
    *,
    reserve_seconds: float = 20.0,
    page_size: int = 200,
    invocation_seconds: Callable[[], float] | None = None,
) -> TenantDecay:
    """One tenant's share of a fanned-out pass (a queue message ``{"tenant_id", "pass", "step"}``):
    its active lessons from its own checkpoint on, page after page while a page as slow as its
    slowest would end with ``reserve_seconds`` left, archived as ``run_decay_pass`` does. The first
    page is taken whenever ``invocation_seconds`` (the invocation's own remaining time, when the
    tenant's share is less) allows it: a page slower than the tenant's share still makes progress.

    Each message is done once: the tenant's checkpoint names its pass and the step the next message
    must carry; a message of an older pass, or of a step not the next, is dropped (a duplicate
    delivery, a scheduler run repeated). A tenant not finished sends its next step to the queue
    (``CONTINUE_DELAY_SECONDS`` later, behind the tenants waiting), then saves its checkpoint; a
    failure saves the cursor reached under the same step, and raises (the message is delivered
    again and goes on from there)."""
    assert deps.checkpoints is not None and deps.decay_queue is not None
    tenant_id, pass_id, step = str(message["tenant_id"]), str(message["pass"]), int(message["step"])
    name = TENANT_CHECKPOINT.format(tenant_id=tenant_id)
    state = deps.checkpoints.load(name) or {}
    if state.get("pass") != pass_id:
        if step != 0 or (state.get("pass") is not None and str(state["pass"]) > pass_id):
            return TenantDecay(DecayReport(0, 0), skipped=True)
        state = {"pass": pass_id, "step": 0, "cursor": None, "done": False, "runs": 0, "examined": 0, "archived": 0,
                 "page_seconds": state.get("page_seconds", 0.0)}
    elif state.get("done") or state.get("step") != step:
        return TenantDecay(DecayReport(0, 0), skipped=True)
    tally, cursor, complete = _Tally(), state.get("cursor"), False
    longest, timed = float(state.get("page_seconds", 0.0)), 0.0

    def keep(**changes) -> None:
        state.update(cursor=cursor, runs=state.get("runs", 0) + 1, examined=state.get("examined", 0) + tally.examined,
                     archived=state.get("archived", 0) + tally.archived, page_seconds=round(timed or longest, 3),
                     **changes)
        deps.checkpoints.save(name, state)  # type: ignore[union-attr]

    pages = 0
    try:
        while ((invocation_seconds or remaining_seconds) if pages == 0 else remaining_seconds)() > reserve_seconds + longest:
            pages += 1
            started = time.monotonic()
            page = deps.experiences.list(tenant_id, status=ExperienceStatus.ACTIVE, limit=page_size, cursor=cursor)
            _decay_page(deps, page.items, deps.clock.now(), tally, dry_run=False)
            timed = max(timed, time.monotonic() - started)
            longest = max(longest, timed)
            cursor = page.cursor
            if cursor is None:
                complete = True
                break
        if not complete:
            deps.decay_queue.send([{"tenant_id": tenant_id, "pass": pass_id, "step": step + 1}],
                                  delay_seconds=CONTINUE_DELAY_SECONDS)
    except BaseException:
        keep()  # the same step: the message, delivered again, goes on from the cursor reached
        raise
    if complete:
        keep(step=step + 1, done=True, finished_at=deps.clock.now().isoformat())
        return TenantDecay(tally.report(complete=True))
    keep(step=step + 1)
    return TenantDecay(tally.report(complete=False), next_step=step + 1)


def decay_lesson(deps: Deps, exp: Experience, now: datetime) -> Experience | None:
    """Decay one lesson read by a scan, as of ``now``: archived by a conditional write when it no
    longer earns its place (read again and decided again once on a conflict), else nothing is
    written (freshness is derived on read). Returns the lesson as archived, None when nothing was
    written; an archived one leaves the index."""
    if not _archive(deps, exp, now):
        return None
    deps.index.delete(exp.tenant_id, [exp.experience_id])
    return deps.experiences.get(exp.tenant_id, exp.experience_id)


def reindex_batch(deps: Deps, tenant_id: str, limit: int, cursor: str | None = None) -> tuple[int, str | None]:
    """One batch of a reindex: the ``limit`` active lessons after ``cursor`` (from the first
    without one) embedded and indexed again; returns their count and the next batch's cursor
    (None after the last). A request costs what its batch does, whatever the tenant's size."""
    page = deps.experiences.list(tenant_id, status=ExperienceStatus.ACTIVE, limit=limit, cursor=cursor)
    index_still_active(deps, tenant_id, page.items)  # one forgotten while the batch was read leaves again
    return len(page.items), page.cursor


def reindex_tenant(deps: Deps, tenant_id: str, page_size: int = 500) -> int:
    """Rebuild a tenant's vector entries from the store, so a lost index loses nothing."""
    count, cursor = reindex_batch(deps, tenant_id, page_size)
    while cursor is not None:
        done, cursor = reindex_batch(deps, tenant_id, page_size, cursor)
        count += done
    return count


HISTOGRAM_BUCKETS = 10


def agents(deps: Deps, tenant_id: str, items_per_request: int | None = None) -> tuple[dict[str, int], int]:
    """The agents the tenant's active lessons belong to, with how many each has (most first, then
    by name), and how many active lessons are shared with every agent: who a recall can name.
    Counted by the stats job (``tenant_stats``): what a request reads does not grow with the tenant."""
    shown, _ = _stats_pass(deps, tenant_id, items_per_request)
    by_agent: dict[str, int] = shown["agents"]
    return dict(sorted(by_agent.items(), key=lambda kv: (-kv[1], kv[0]))), shown["shared"]


STATS_PAGE = 500  # items one read of the stats job takes at most
STATS_CHECKPOINT = "stats:{tenant_id}"


def _bucket(i: int) -> str:
    return f"{i / HISTOGRAM_BUCKETS:.1f}-{(i + 1) / HISTOGRAM_BUCKETS:.1f}"


def _new_pass(now: datetime) -> dict:
    return {"started_at": now.isoformat(), "phase": "experiences", "cursor": None, "experiences": {}, "trajectories": {},
            "histogram": [0] * HISTOGRAM_BUCKETS, "agents": {}, "shared": 0}


def _add(counts: dict[str, int], more: dict[str, int]) -> None:
    for status, n in more.items():
        counts[status] = counts.get(status, 0) + n


def _advance(deps: Deps, tenant_id: str, run: dict, budget: int | None) -> bool:
    """Take the stats pass ``run`` on by pages until ``budget`` items were read (None: to its
    end): the tenant's lessons (all statuses, newest first), then its trajectories. Returns
    whether the pass is complete."""
    read = 0
    while budget is None or read < budget:
        size = STATS_PAGE if budget is None else max(1, min(STATS_PAGE, budget - read))
        if run["phase"] == "experiences":
            page = deps.experiences.list(tenant_id, limit=size, cursor=run["cursor"])
            now = deps.clock.now()
            for exp in page.items:
                _add(run["experiences"], {exp.status.value: 1})
                if exp.status is ExperienceStatus.ACTIVE:
                    f = current_freshness(exp, now, deps.decay.half_life_days)
                    run["histogram"][min(HISTOGRAM_BUCKETS - 1, int(f * HISTOGRAM_BUCKETS))] += 1
                    if exp.agent_id is None:
                        run["shared"] += 1
                    else:
                        _add(run["agents"], {exp.agent_id: 1})
            read += max(1, len(page.items))
            run["cursor"] = page.cursor
            if page.cursor is None:
                run["phase"] = "trajectories"
        else:
            counts, cursor = deps.trajectories.statuses_page(tenant_id, size, run["cursor"])
            _add(run["trajectories"], counts)
            read += max(1, sum(counts.values()))
            run["cursor"] = cursor
            if cursor is None:
                return True
    return False


def _stats_pass(deps: Deps, tenant_id: str, items_per_request: int | None = None) -> tuple[dict, bool]:
    """Take the tenant's stats pass on by one request's budget; returns what to show (the pass
    that ended now, else the last complete one, else the part counted so far) and whether it is
    a complete pass."""
    budget = items_per_request if items_per_request is not None else deps.stats_items_per_request
    name = STATS_CHECKPOINT.format(tenant_id=tenant_id)
    state = (deps.checkpoints.load(name) if deps.checkpoints is not None else None) or {}
    run = state.get("pass") or _new_pass(deps.clock.now())
    if _advance(deps, tenant_id, run, budget if deps.checkpoints is not None else None):
        state = {"done": {k: run[k] for k in ("started_at", "experiences", "trajectories", "histogram", "agents", "shared")}}
    else:
        state["pass"] = run
    if deps.checkpoints is not None:
        deps.checkpoints.save(name, state)
    return (state["done"], True) if "done" in state else (run, False)


def tenant_stats(deps: Deps, tenant_id: str, items_per_request: int | None = None) -> dict:
    """Counts by status and a histogram of the freshness of active lessons, as a bounded job.

    A request reads its checkpoint and takes the tenant's stats pass on by at most
    ``items_per_request`` lessons and trajectories (``deps.stats_items_per_request``), in pages,
    then saves where it stopped: what one request reads does not grow with the tenant. A pass
    that ends in the request is answered (a tenant within the budget is counted afresh by every
    request); otherwise the last complete pass is (``as_of``: when it started), or, before the
    first one ends, the part counted so far (``complete: false``). Without checkpoints the pass
    runs to its end in the request. ``GET /v1/agents`` reads the same pass (``agents``)."""
    shown, complete = _stats_pass(deps, tenant_id, items_per_request)
    return {
        "experiences": {s.value: 0 for s in ExperienceStatus} | shown["experiences"],
        "trajectories": {s.value: 0 for s in TrajectoryStatus} | shown["trajectories"],
        "freshness_histogram": [{"bucket": _bucket(i), "count": n} for i, n in enumerate(shown["histogram"])],
        "decay": {"half_life_days": deps.decay.half_life_days, "archive_below": deps.decay.archive_below,
                  "min_age_days": deps.decay.min_age_days},
        "as_of": shown["started_at"],
        "complete": complete,
    }
