"""Decay writes only what changes state: archives, each conditional; a pass over every tenant is
spread over runs by a checkpoint and a time budget."""
from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import numpy as np

from chalicelib.domain.models import ExperienceStatus
from chalicelib.ports import IndexEntry
from chalicelib.services import maintenance
from tests.support.builders import T0, experience
from tests.support.fakes import FakeClock, InMemoryExperienceStore, fake_deps

ACTIVE, ARCHIVED = ExperienceStatus.ACTIVE, ExperienceStatus.ARCHIVED


class CountingStore(InMemoryExperienceStore):
    """Counts every write, whatever the method; ``before_archive`` runs inside an archive, before
    its condition is checked (a write that lands between decay's read and its archive)."""

    def __init__(self) -> None:
        super().__init__()
        self.writes = 0
        self.before_archive = None

    def put(self, exp):
        self.writes += 1
        super().put(exp)

    def archive_if_unchanged(self, read, archived):
        if self.before_archive is not None:
            hook, self.before_archive = self.before_archive, None
            hook(read)
        writes = self.writes
        done = super().archive_if_unchanged(read, archived)
        self.writes = writes + 1 if done else writes  # the put inside it is the one write
        return done


def seeded(tenants: int, per_tenant: int, stale_every: int, clock: FakeClock):
    """Lessons created at T0; every ``stale_every``-th one never renewed (it will be archived),
    the others renewed a day before the clock."""
    store = CountingStore()
    deps = fake_deps(clock, experiences=store)
    n = 0
    for t in range(tenants):
        for i in range(per_tenant):
            renewed = T0 if n % stale_every == 0 else clock.now() - timedelta(days=1)
            e = experience(tenant_id=f"t{t:03d}", experience_id=f"x{i:04d}", renewed_at=renewed)
            store.put(e)
            deps.index.upsert(e.tenant_id, [IndexEntry(e.experience_id, np.ones(deps.embedder.dim, dtype=np.float32))])
            n += 1
    store.writes = 0
    return deps, store


def test_decay_writes_the_archives_and_nothing_else():
    clock = FakeClock(T0 + timedelta(days=120))
    deps, store = seeded(tenants=3, per_tenant=20, stale_every=4, clock=clock)
    report = maintenance.run_decay(deps, page_size=7)
    assert (report.examined, report.archived) == (60, 15)
    assert store.writes == report.written == report.archived
    assert report.decayed == 60  # every freshness fell: derived on read, written by nobody
    assert sum(deps.index.count(f"t{t:03d}") for t in range(3)) == 45
    again = maintenance.run_decay(deps)
    assert (again.examined, again.archived, store.writes) == (45, 0, 15)


def test_a_lesson_renewed_between_decays_read_and_its_archive_stays_active_with_the_renewal():
    clock = FakeClock(T0 + timedelta(days=120))
    deps, store = seeded(tenants=1, per_tenant=1, stale_every=1, clock=clock)
    renewed = {}

    def feedback_meanwhile(read):
        renewed["exp"] = replace(read, utility=0.95, confidence=0.9, renewed_at=clock.now(), freshness=1.0)
        InMemoryExperienceStore.put(store, renewed["exp"])

    store.before_archive = feedback_meanwhile
    report = maintenance.run_decay(deps)
    assert (report.archived, report.conflicts, report.written) == (0, 1, 0)
    assert store.get("t000", "x0000") == renewed["exp"]
    assert deps.index.count("t000") == 1


def test_a_lesson_changed_but_still_stale_is_archived_as_it_now_stands():
    clock = FakeClock(T0 + timedelta(days=120))
    deps, store = seeded(tenants=1, per_tenant=1, stale_every=1, clock=clock)
    store.before_archive = lambda read: InMemoryExperienceStore.put(store, replace(read, tags=["edited"]))
    report = maintenance.run_decay(deps)
    assert (report.archived, report.conflicts) == (1, 0)
    got = store.get("t000", "x0000")
    assert (got.status, got.tags) == (ARCHIVED, ["edited"])


def test_a_pass_over_many_tenants_is_spread_over_runs_within_their_budget():
    clock = FakeClock(T0 + timedelta(days=120))
    deps, store = seeded(tenants=40, per_tenant=25, stale_every=5, clock=clock)
    runs = []
    while True:
        budget = iter(range(100, 0, -7))  # each call of remaining_seconds: 7 s less (about a page's work)
        report = maintenance.run_decay_pass(deps, lambda: next(budget), reserve_seconds=30, page_size=25)
        runs.append(report)
        assert len(runs) < 50
        if report.complete:
            break
    assert len(runs) > 3  # one run could not do it all
    assert all(r.examined <= 10 * 25 for r in runs)  # each stopped when its budget was spent
    assert sum(r.examined for r in runs) == 1000  # the pass read each lesson once: no restart from the first tenant
    assert sum(r.archived for r in runs) == 200 == store.writes
    assert {e.tenant_id for e in store._exps.values() if e.status is ARCHIVED} == {f"t{t:03d}" for t in range(40)}
    state = deps.checkpoints.load(maintenance.DECAY_CHECKPOINT)
    assert (state["cursor"], state["runs"], state["examined"], state["archived"]) == (None, len(runs), 1000, 200)


def test_a_finished_pass_waits_for_its_interval_then_a_new_one_starts():
    clock = FakeClock(T0 + timedelta(days=120))
    deps, store = seeded(tenants=2, per_tenant=5, stale_every=5, clock=clock)
    forever = lambda: 1e9  # noqa: E731
    assert maintenance.run_decay_pass(deps, forever).examined == 10
    clock.advance(minutes=50)
    idle = maintenance.run_decay_pass(deps, forever)
    assert (idle.examined, idle.complete) == (0, True)
    clock.advance(minutes=15)
    assert maintenance.run_decay_pass(deps, forever).examined == 8


def test_a_run_that_fails_keeps_the_progress_made_before_the_failure():
    clock = FakeClock(T0 + timedelta(days=120))
    deps, store = seeded(tenants=4, per_tenant=10, stale_every=2, clock=clock)
    real_scan, pages = store.scan_active, []

    def failing_scan(limit=500, cursor=None):
        if len(pages) == 2:
            raise RuntimeError("throttled")
        pages.append(cursor)
        return real_scan(limit, cursor)

    store.scan_active = failing_scan
    try:
        maintenance.run_decay_pass(deps, lambda: 1e9, page_size=10)
    except RuntimeError:
        pass
    else:
        raise AssertionError("the failure must reach Lambda (its on-failure destination)")
    state = deps.checkpoints.load(maintenance.DECAY_CHECKPOINT)
    assert state["examined"] == 20 and state["cursor"] is not None
    store.scan_active = real_scan
    rest = maintenance.run_decay_pass(deps, lambda: 1e9, page_size=10)
    assert (rest.examined, rest.complete) == (20, True)
    assert store.writes == 20


def test_a_run_carries_the_last_runs_slowest_page_to_its_first_decision():
    """A first page as slow as the last run's slowest would not end before the reserve: the run
    takes none, rather than overrun its invocation."""
    clock = FakeClock(T0 + timedelta(days=120))
    deps, store = seeded(tenants=2, per_tenant=10, stale_every=5, clock=clock)
    last_pass = {"started_at": (clock.now() - timedelta(hours=2)).isoformat(), "cursor": None, "done": True, "runs": 1,
                 "examined": 20, "archived": 0, "page_seconds": 30.0}
    deps.checkpoints.save(maintenance.DECAY_CHECKPOINT, last_pass)
    short = maintenance.run_decay_pass(deps, lambda: 45.0, reserve_seconds=20)  # 20 + 30 > 45: no page
    assert (short.examined, short.complete) == (0, False)
    assert deps.checkpoints.load(maintenance.DECAY_CHECKPOINT)["page_seconds"] == 30.0
    enough = maintenance.run_decay_pass(deps, lambda: 60.0, reserve_seconds=20)
    assert (enough.examined, enough.complete) == (20, True)


class ListQueue:
    """``ports.WorkQueue`` in a list: what was sent, in order, with its delay."""

    def __init__(self) -> None:
        self.sent: list[tuple[dict, int]] = []

    def send(self, messages, delay_seconds: int = 0) -> None:
        self.sent += [(dict(m), delay_seconds) for m in messages]


def test_a_tenant_whose_page_is_slower_than_its_share_still_goes_on_within_the_invocations_time():
    """A tenant's share of an invocation (``decay_tenant_seconds``) shorter than its slowest page
    must not send it back to the queue without reading anything, for ever: the first page of
    each message is taken while the invocation itself has the time."""
    clock = FakeClock(T0 + timedelta(days=120))
    deps, store = seeded(tenants=1, per_tenant=30, stale_every=5, clock=clock)
    deps.decay_queue = ListQueue()
    message = {"tenant_id": "t000", "pass": "p1", "step": 0}
    name = maintenance.TENANT_CHECKPOINT.format(tenant_id="t000")
    deps.checkpoints.save(name, {"page_seconds": 5.0})  # the last pass's slowest page: 5 s
    for step in range(10):
        share = lambda: 1.0  # noqa: E731 -- the tenant's share: less than its slowest page
        done = maintenance.decay_tenant(deps, dict(message, step=step), share, reserve_seconds=0.5, page_size=10,
                                        invocation_seconds=lambda: 200.0)
        assert done.report.examined > 0, step  # a page read every time
        if done.next_step is None:
            break
    assert deps.checkpoints.load(name)["done"] is True and deps.checkpoints.load(name)["examined"] == 30
    assert store.writes == 6
