"""Review jobs run in batches (``review_jobs.process_review_jobs(deps, limit, vectors)``): the same
lessons as one job at a time, each trajectory reviewed once, the tenants in turns, a failure kept to
its own job, nothing lost when a worker dies mid-batch; and several workers on one SQLite queue
never run a job twice."""
from __future__ import annotations

import threading
from collections import Counter
from pathlib import Path

import pytest

from chalicelib.adapters.reviewers.rules import DeterministicReviewer
from chalicelib.adapters.embedders.hash import HashEmbedder
from chalicelib.adapters.embedded.index import NumpyVectorIndex
from chalicelib.adapters.embedded.db import SqliteDatabase
from chalicelib.adapters.embedded.stores import (
    SqliteExperienceStore, SqliteReviewQueue, SqliteTenantStore, SqliteTrajectoryStore,
)
from chalicelib.adapters.clock import SystemClock
from chalicelib.services import ingest, review_jobs
from chalicelib.services.deps import Deps, policies
from chalicelib.services.indexing import VectorCache
from chalicelib.settings import Settings
from tests.support.fakes import FakeClock, fake_deps

# (failing call, its error, the call that fixed it, the call that then worked): recurring lessons
FAMILIES = [
    (("search_flights", {"from": "Paris"}), "InvalidAirport: IATA code expected",
     ("lookup_airport", {"city": "Paris"}), ("search_flights", {"from": "CDG"})),
    (("get_weather", {"date": "tomorrow"}), "MissingParameter: city is required",
     ("ask_user", {"question": "Which city?"}), ("get_weather", {"date": "tomorrow", "city": "Lyon"})),
    (("payments.refund", {"invoice": "42"}), "MissingParameter: charge_id is required",
     ("payments.lookup_charge", {"invoice": "42"}), ("payments.refund", {"charge_id": "ch_42"})),
    (("sql.query", {"sql": "SELECT signup_date FROM users"}), "UndefinedColumn: column signup_date does not exist",
     ("sql.describe", {"table": "users"}), ("sql.query", {"sql": "SELECT created_at FROM users"})),
]


class CountingReviewer:
    """The rules reviewer, counting its calls per (tenant, trajectory, scope); can fail on cue."""

    def __init__(self) -> None:
        self.inner = DeterministicReviewer()
        self.calls: Counter = Counter()
        self.fail_on: dict[str, BaseException] = {}
        self._lock = threading.Lock()

    def review(self, traj, events, kind):
        with self._lock:
            self.calls[(traj.tenant_id, traj.trajectory_id, kind)] += 1
        if traj.trajectory_id in self.fail_on:
            raise self.fail_on[traj.trajectory_id]
        return self.inner.review(traj, events, kind)


class CountingEmbedder(HashEmbedder):
    def __init__(self) -> None:
        super().__init__()
        self.calls: list[int] = []
        self.fail_above: int | None = None

    def embed(self, texts, query=False):
        if self.fail_above is not None and len(texts) > self.fail_above:
            raise ConnectionError("batch too large for the embedding service")
        self.calls.append(len(texts))
        return super().embed(texts)


def record(deps, tenant: str, tid: str, family: int, blind_retry: bool = False, agent: str = "a1") -> None:
    """A trajectory with a failure, its fix and the call that then worked; ``blind_retry``: the
    failure twice in a row, which queues a local review beside the full one."""
    (tool, params), error, (fix, fix_params), (ok, ok_params) = FAMILIES[family]
    ingest.start_trajectory(deps, tenant, agent, f"Work item of kind {family}", trajectory_id=tid,
                            tools=sorted({tool, fix, ok}), task_type="operation")
    fail = {"type": "tool_call", "content": {"tool": tool, "params": params, "status": "error", "error": error}}
    events = [dict(fail, event_id="e0")]
    if blind_retry:
        events.append(dict(fail, event_id="e0b"))
    events += [
        {"event_id": "e1", "type": "tool_call", "content": {"tool": fix, "params": fix_params, "status": "ok", "result": "x"}},
        {"event_id": "e2", "type": "tool_call", "content": {"tool": ok, "params": ok_params, "status": "ok", "result": "y"}},
    ]
    ingest.append_events(deps, tenant, tid, events)
    ingest.finalize(deps, tenant, tid, "success", None)


WORKLOAD = [(f"t{n % 3}", f"tr{n}", n % len(FAMILIES), n % 5 == 0) for n in range(24)]


def run_workload(deps) -> None:
    for tenant, tid, family, blind in WORKLOAD:
        record(deps, tenant, tid, family, blind)


def drain(deps, limit: int, vectors=None) -> int:
    ran = 0
    while n := review_jobs.process_review_jobs(deps, limit, vectors):
        ran += n
    return ran


def lessons(deps) -> dict[str, list[tuple]]:
    """Per tenant, every stored lesson as order-free facts: what it says, its status, its support
    and the trajectories it was learned from."""
    out = {}
    for tenant in sorted({t for t, *_ in WORKLOAD}):
        items = deps.experiences.list(tenant, agent_id=None, status=None, limit=1000, cursor=None).items
        out[tenant] = sorted((e.lesson, e.status.value, e.support, tuple(sorted(e.sources))) for e in items)
    return out


def deps_with(reviewer=None, embedder=None, clock=None):
    return fake_deps(clock or FakeClock(), embedder=embedder or CountingEmbedder(), reviewer=reviewer or CountingReviewer())


def test_a_batch_learns_what_one_job_at_a_time_learns_and_reviews_each_trajectory_once():
    one, batched = deps_with(), deps_with()
    run_workload(one)
    run_workload(batched)
    jobs = one.queue.pending()
    assert drain(one, 1) == jobs
    assert drain(batched, 8, VectorCache(4096)) == jobs
    assert lessons(batched) == lessons(one)
    assert all(n == 1 for n in batched.reviewer.calls.values())
    assert set(batched.reviewer.calls) == set(one.reviewer.calls)
    for tenant, tid, *_ in WORKLOAD:
        a, b = one.trajectories.get(tenant, tid), batched.trajectories.get(tenant, tid)
        assert b.status.value == "reviewed"
        assert sorted(b.experience_ids) == sorted(a.experience_ids)
        assert b.review == a.review  # the local reviews the full one records too
    # recurring lessons merged rather than stored again: one active lesson per failure and scope
    for tenant, facts in lessons(batched).items():
        active = [f[0] for f in facts if f[1] == "active"]
        assert len(active) == len(set(active)), tenant


def test_the_lessons_of_a_batch_are_embedded_together_and_a_recurring_lesson_not_again():
    one, batched = deps_with(), deps_with()
    run_workload(one)
    run_workload(batched)
    drain(one, 1)
    cache = VectorCache(4096)
    drain(batched, 8, cache)
    assert len(batched.embedder.calls) * 3 <= len(one.embedder.calls)
    assert max(batched.embedder.calls) > max(one.embedder.calls)
    # the same failures in new tasks: every text is known, nothing is embedded, the lessons gain support
    before = len(batched.embedder.calls)
    support = sum(f[2] for facts in lessons(batched).values() for f in facts)
    for tenant, tid, family, _ in WORKLOAD[:6]:
        record(batched, tenant, tid + "-again", family)
    drain(batched, 8, cache)
    assert len(batched.embedder.calls) == before and cache.hits > 0
    assert sum(f[2] for facts in lessons(batched).values() for f in facts) == support + 6


def test_the_cache_keeps_its_size_dropping_the_least_recently_used():
    deps = deps_with()
    cache = VectorCache(3)
    from chalicelib.services.indexing import embed_texts

    embed_texts(deps, ["a", "b", "c"], cache)
    embed_texts(deps, ["a", "d"], cache)  # "a" used again
    cache.trim()
    assert list(cache) == ["c", "a", "d"]  # "b", least recently used, went
    assert (cache.hits, cache.misses) == (1, 4)


def test_tenants_take_turns_within_a_batch():
    deps = deps_with()
    for n in range(20):
        record(deps, "busy", f"b{n}", n % len(FAMILIES))
    record(deps, "quiet", "q0", 0)
    review_jobs.process_review_jobs(deps, 8, VectorCache(64))
    assert deps.trajectories.get("quiet", "q0").status.value == "reviewed"
    assert sum(deps.trajectories.get("busy", f"b{n}").status.value == "reviewed" for n in range(20)) == 7


def test_a_failing_review_in_a_batch_is_retried_alone_while_the_others_are_stored():
    clock = FakeClock()
    deps = deps_with(clock=clock)
    for n in range(6):
        record(deps, f"t{n % 2}", f"tr{n}", n % len(FAMILIES))
    deps.reviewer.fail_on["tr2"] = TimeoutError("reviewer slow")
    assert review_jobs.process_review_jobs(deps, 8, VectorCache(64)) == 6
    status = {n: deps.trajectories.get(f"t{n % 2}", f"tr{n}").status.value for n in range(6)}
    assert status == {0: "reviewed", 1: "reviewed", 2: "finalized", 3: "reviewed", 4: "reviewed", 5: "reviewed"}
    del deps.reviewer.fail_on["tr2"]
    clock.advance(seconds=5)
    assert review_jobs.process_review_jobs(deps, 8, VectorCache(64)) == 1
    assert deps.trajectories.get("t0", "tr2").status.value == "reviewed"


def test_when_embedding_the_whole_batch_fails_each_review_embeds_its_own():
    deps = deps_with()
    reference = deps_with()
    for d in (deps, reference):
        for n in range(6):
            record(d, f"t{n % 2}", f"tr{n}", n % len(FAMILIES))
    reference_jobs = drain(reference, 1)
    deps.embedder.fail_above = 4  # one review's texts go through, six reviews' texts do not
    assert drain(deps, 8) == reference_jobs
    assert lessons(deps) == lessons(reference)


def test_a_worker_dying_mid_batch_leaves_every_claimed_job_to_run_again_once():
    clock = FakeClock()
    deps, reference = deps_with(clock=clock), deps_with()
    run_workload(deps)
    run_workload(reference)
    drain(reference, 1)
    real_complete = deps.queue.complete
    stored: list = []

    def die_after_storing_the_first(job):
        stored.append(job)
        raise SystemExit("killed")  # not an Exception: nothing in the worker catches it

    jobs = deps.queue.pending()
    deps.queue.complete = die_after_storing_the_first
    with pytest.raises(SystemExit):
        review_jobs.process_review_jobs(deps, 8, VectorCache(64))
    deps.queue.complete = real_complete
    assert drain(deps, 8, VectorCache(64)) == jobs - 8  # the 8 it claimed stay leased meanwhile
    assert deps.queue.pending() == 8
    clock.advance(seconds=deps.review_lease_seconds + 1)
    assert drain(deps, 8, VectorCache(64)) == 8
    assert deps.queue.pending() == 0
    assert lessons(deps) == lessons(reference)  # the job stored before the crash added nothing twice
    (first,) = stored
    first_full = (first.tenant_id, first.trajectory_id, "full")
    assert deps.reviewer.calls[first_full] <= 1 or first.kind != "full"
    for tenant, tid, *_ in WORKLOAD:
        assert deps.trajectories.get(tenant, tid).status.value == "reviewed"


def sqlite_deps(data: Path, reviewer) -> Deps:
    settings = Settings(data_dir=str(data), embedder="hash")
    db = SqliteDatabase(str(data / "hindsight.db"))
    embedder = HashEmbedder()
    return Deps(
        tenants=SqliteTenantStore(db), trajectories=SqliteTrajectoryStore(db), experiences=SqliteExperienceStore(db),
        index=NumpyVectorIndex(SqliteDatabase(str(data / "vectors.db")), embedder.dim), embedder=embedder,
        reviewer=reviewer, queue=SqliteReviewQueue(db), clock=SystemClock(), **policies(settings),
    )


def test_several_workers_on_one_sqlite_queue_run_every_job_exactly_once(tmp_path):
    reviewer = CountingReviewer()
    deps = sqlite_deps(tmp_path, reviewer)
    # one tenant per worker's share, so no two workers merge into one tenant's lessons at once
    for n in range(32):
        record(deps, f"t{n % 8}", f"tr{n}", n % len(FAMILIES), blind_retry=n % 4 == 0)
    jobs = deps.queue.pending()
    ran = Counter()
    errors: list[BaseException] = []

    def worker(i: int) -> None:
        try:
            while n := review_jobs.process_review_jobs(deps, 3, VectorCache(64)):
                ran[i] += n
        except BaseException as exc:  # noqa: BLE001 -- reported by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == []
    assert sum(ran.values()) == jobs and deps.queue.pending() == 0
    assert reviewer.calls and all(n == 1 for n in reviewer.calls.values())
    for n in range(32):
        traj = deps.trajectories.get(f"t{n % 8}", f"tr{n}")
        assert traj.status.value == "reviewed" and len(traj.experience_ids) == len(set(traj.experience_ids))


class OverlapReviewer(CountingReviewer):
    """Holds each review a moment and records which tenants were under review at once."""

    def __init__(self) -> None:
        super().__init__()
        self.active: Counter = Counter()
        self.same_tenant_overlap = 0
        self.tenants_at_once = 0

    def review(self, traj, events, kind):
        import time

        with self._lock:
            self.active[traj.tenant_id] += 1
            self.same_tenant_overlap += self.active[traj.tenant_id] > 1
            self.tenants_at_once = max(self.tenants_at_once, sum(1 for n in self.active.values() if n))
        try:
            time.sleep(0.01)
            return super().review(traj, events, kind)
        finally:
            with self._lock:
                self.active[traj.tenant_id] -= 1


def test_a_batch_split_over_threads_runs_tenants_at_once_and_each_tenant_in_order():
    from concurrent.futures import ThreadPoolExecutor

    one, split = deps_with(), deps_with(reviewer=OverlapReviewer())
    run_workload(one)
    run_workload(split)
    jobs = drain(one, 1)
    ran = 0
    with ThreadPoolExecutor(3) as pool:
        while n := review_jobs.process_review_jobs(split, 8, VectorCache(4096), pool, 3):
            ran += n
    assert ran == jobs
    assert split.reviewer.tenants_at_once > 1 and split.reviewer.same_tenant_overlap == 0
    assert all(n == 1 for n in split.reviewer.calls.values())
    assert lessons(split) == lessons(one)
    for tenant, tid, *_ in WORKLOAD:
        assert split.trajectories.get(tenant, tid).review == one.trajectories.get(tenant, tid).review


def test_a_batch_whose_lease_runs_out_starts_no_more_jobs_and_they_are_claimed_again_later():
    clock = FakeClock()

    class SlowReviewer(CountingReviewer):
        def review(self, traj, events, kind):
            clock.advance(seconds=20)  # an LLM taking its time
            return super().review(traj, events, kind)

    deps = deps_with(reviewer=SlowReviewer(), clock=clock)
    for n in range(6):
        record(deps, f"t{n % 3}", f"tr{n}", n % len(FAMILIES))
    assert review_jobs.process_review_jobs(deps, 6, VectorCache(64)) == 6
    # 60 s lease, half of it for starting jobs: the first two reviews took 40 s
    assert sum(c for c in deps.reviewer.calls.values()) == 2
    assert sum(deps.trajectories.get(f"t{n % 3}", f"tr{n}").status.value == "reviewed" for n in range(6)) == 2
    assert review_jobs.process_review_jobs(deps, 6, VectorCache(64)) == 0  # still leased
    clock.advance(seconds=deps.review_lease_seconds)
    while review_jobs.process_review_jobs(deps, 6, VectorCache(64)):
        clock.advance(seconds=deps.review_lease_seconds)
    assert all(deps.trajectories.get(f"t{n % 3}", f"tr{n}").status.value == "reviewed" for n in range(6))
    assert all(n == 1 for n in deps.reviewer.calls.values()) and len(deps.reviewer.calls) == 6
