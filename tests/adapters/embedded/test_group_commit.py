"""The embedded database's group commit and the store's appends through it, under many threads.

What an append acknowledges is committed and fsynced, stored once, in order; a write that fails
inside a shared commit fails alone; a commit that fails fails every write it held, and stores none.
"""
from __future__ import annotations

import sqlite3
import threading
import time
from datetime import datetime, timedelta, timezone

import pytest

from chalicelib.adapters.embedded.db import DatabaseBusy, SqliteDatabase
from chalicelib.adapters.embedded.stores import SqliteTrajectoryStore
from chalicelib.domain.errors import Conflict, TrajectoryFull
from chalicelib.domain.models import Event, Trajectory

T0 = datetime(2026, 11, 1, tzinfo=timezone.utc)


def traj(tid: str, tenant: str = "t1") -> Trajectory:
    return Trajectory(tenant_id=tenant, trajectory_id=tid, agent_id="a", goal="g", created_at=T0, updated_at=T0)


def ev(event_id: str, status: str = "ok", tool: str = "git", **params) -> Event:
    return Event(event_id=event_id, type="tool_call", timestamp=T0,
                 content={"tool": tool, "params": params, "status": status}, context={"goal": "g"})


def run_threads(n: int, target) -> list[BaseException]:
    errors: list[BaseException] = []
    start = threading.Barrier(n)

    def wrapped(i: int) -> None:
        try:
            start.wait(timeout=10)
            target(i)
        except BaseException as exc:  # noqa: BLE001 -- reported by the test
            errors.append(exc)

    threads = [threading.Thread(target=wrapped, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads), "a writer thread hung"
    return errors


@pytest.fixture
def db(tmp_path) -> SqliteDatabase:
    return SqliteDatabase(str(tmp_path / "hindsight.db"))


def test_concurrent_appends_store_every_acknowledged_event_once_in_order(db):
    store = SqliteTrajectoryStore(db)
    threads, trajs_per_thread, batches, size = 16, 3, 6, 7
    for i in range(threads):
        for j in range(trajs_per_thread):
            store.create(traj(f"tr{i}-{j}", tenant=f"t{i % 4}"))
    acked: dict[str, list[str]] = {}

    def client(i: int) -> None:
        for b in range(batches):
            for j in range(trajs_per_thread):
                tid = f"tr{i}-{j}"
                events = [ev(f"{tid}-{b}-{k}", n=k) for k in range(size)]
                result = store.append_events(f"t{i % 4}", tid, events, T0 + timedelta(seconds=b))
                assert (result.accepted, result.duplicates) == (size, 0)
                again = store.append_events(f"t{i % 4}", tid, events[2:], T0)  # a redelivery stores nothing
                assert (again.accepted, again.duplicates) == (0, size - 2)
                acked.setdefault(tid, []).extend(e.event_id for e in events)

    assert run_threads(threads, client) == []
    for i in range(threads):
        for j in range(trajs_per_thread):
            tid = f"tr{i}-{j}"
            stored = store.events(f"t{i % 4}", tid)
            assert [e.event_id for e in stored] == acked[tid]
            assert [e.seq for e in stored] == list(range(1, batches * size + 1))
            got = store.get(f"t{i % 4}", tid)
            assert got.event_count == batches * size and got.updated_at == T0 + timedelta(seconds=batches - 1)
    assert store.events("t1", "tr0-0") == []  # another tenant's trajectory of the same id holds nothing


def test_concurrent_batches_to_one_trajectory_each_stay_whole_and_in_their_order(db):
    store = SqliteTrajectoryStore(db)
    store.create(traj("shared"))
    threads, batches, size = 12, 5, 9

    def client(i: int) -> None:
        for b in range(batches):
            store.append_events("t1", "shared", [ev(f"c{i}-b{b}-{k}", n=k) for k in range(size)], T0)

    assert run_threads(threads, client) == []
    stored = store.events("t1", "shared")
    assert [e.seq for e in stored] == list(range(1, threads * batches * size + 1))
    ids = [e.event_id for e in stored]
    assert len(set(ids)) == len(ids) == threads * batches * size
    for start in range(0, len(ids), size):  # every batch contiguous, its events in the order sent
        client_batch = ids[start].rsplit("-", 1)[0]
        assert ids[start : start + size] == [f"{client_batch}-{k}" for k in range(size)]
    for i in range(threads):  # a client's batches in the order it sent them
        mine = [x.rsplit("-", 1)[0] for x in ids if x.startswith(f"c{i}-")][::size]
        assert mine == [f"c{i}-b{b}" for b in range(batches)]


def test_jobs_queued_during_a_commit_share_the_next_one_and_a_failing_job_fails_alone(db):
    db.connection().execute("CREATE TABLE t (k TEXT PRIMARY KEY)")
    inside, release = threading.Event(), threading.Event()
    leaders: dict[str, int] = {}
    outcome: dict[str, object] = {}

    def job(name: str, fail: bool = False, block: bool = False):
        def fn(conn: sqlite3.Connection) -> str:
            leaders[name] = threading.get_ident()
            conn.execute("INSERT INTO t VALUES (?)", (name,))
            if block:
                inside.set()
                release.wait(timeout=10)
            if fail:
                raise Conflict(f"{name} refused")
            return name
        return fn

    def submit(name: str, **kw) -> None:
        try:
            outcome[name] = db.group_write(job(name, **kw))
        except Conflict as exc:
            outcome[name] = exc

    first = threading.Thread(target=submit, args=("first",), kwargs={"block": True})
    first.start()
    assert inside.wait(timeout=10)
    others = [threading.Thread(target=submit, args=(n,), kwargs={"fail": n == "bad"}) for n in ("a", "bad", "b")]
    for t in others:
        t.start()
    deadline = threading.Event()
    while len(db._queue) < 3 and not deadline.wait(0.01):  # all three wait for the commit under way
        pass
    release.set()
    for t in [first, *others]:
        t.join(timeout=10)
    assert outcome["first"] == "first" and outcome["a"] == "a" and outcome["b"] == "b"
    assert isinstance(outcome["bad"], Conflict)
    assert leaders["a"] == leaders["bad"] == leaders["b"]  # one leader ran the three in one transaction
    rows = {r[0] for r in db.read().execute("SELECT k FROM t")}
    assert rows == {"first", "a", "b"}  # the failing job's insert was undone, its neighbours' kept


def test_group_commits_are_fsynced_and_plain_writes_are_not_held_to_it(db):
    seen = db.group_write(lambda conn: conn.execute("PRAGMA synchronous").fetchone()[0])
    assert seen == 2  # FULL: the WAL is synced before the commit returns
    with db.write() as conn:
        assert conn.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL


def test_a_commit_that_cannot_get_the_lock_fails_every_job_and_stores_none(tmp_path):
    db = SqliteDatabase(str(tmp_path / "hindsight.db"), busy_timeout_ms=50)
    store = SqliteTrajectoryStore(db)
    store.create(traj("tr1"))
    other = sqlite3.connect(db.path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another process holds the write lock
    try:
        results: list[object] = []

        def client(i: int) -> None:
            try:
                results.append(store.append_events("t1", "tr1", [ev(f"e{i}")], T0))
            except DatabaseBusy as exc:
                results.append(exc)

        assert run_threads(4, client) == []
        assert len(results) == 4 and all(isinstance(r, DatabaseBusy) for r in results)
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert store.events("t1", "tr1") == [] and store.get("t1", "tr1").event_count == 0
    assert store.append_events("t1", "tr1", [ev("e0")], T0).accepted == 1  # and it works once the lock is free


def test_a_full_trajectory_refuses_its_batch_without_touching_the_others_in_the_same_commit(db):
    store = SqliteTrajectoryStore(db)
    for tid in ("small", "big"):
        store.create(traj(tid))
    store.append_events("t1", "small", [ev(f"s{k}") for k in range(4)], T0, max_events=5)
    outcome: dict[str, object] = {}

    def client(i: int) -> None:
        tid, events = ("small", [ev("s4"), ev("s5")]) if i == 0 else ("big", [ev(f"b{i}-{k}") for k in range(3)])
        try:
            outcome[f"{tid}{i}"] = store.append_events("t1", tid, events, T0, max_events=5 if tid == "small" else None)
        except TrajectoryFull as exc:
            outcome[f"{tid}{i}"] = exc

    assert run_threads(6, client) == []
    assert isinstance(outcome["small0"], TrajectoryFull)
    assert [e.event_id for e in store.events("t1", "small")] == [f"s{k}" for k in range(4)]
    assert len(store.events("t1", "big")) == 15


def test_read_back_windows_are_what_the_database_holds_when_another_process_appends_too(tmp_path):
    path = str(tmp_path / "hindsight.db")
    here, there = SqliteTrajectoryStore(SqliteDatabase(path)), SqliteTrajectoryStore(SqliteDatabase(path))
    here.create(traj("tr1"))
    here.append_events("t1", "tr1", [ev(f"a{k}", n=k) for k in range(5)], T0)
    there.append_events("t1", "tr1", [ev(f"b{k}", n=k) for k in range(5)], T0)  # not seen by `here`'s tails
    here.append_events("t1", "tr1", [ev(f"c{k}", n=k) for k in range(5)], T0)
    fresh = SqliteTrajectoryStore(SqliteDatabase(path))  # nothing cached: reads the database
    for ids, before in ((["c0"], 3), (["c4", "a2"], 2), (["c0", "c4"], 64), (["b1"], 1), (["zz"], 4)):
        assert here.events_around("t1", "tr1", ids, before) == fresh.events_around("t1", "tr1", ids, before)
    assert [e.event_id for e in here.events_around("t1", "tr1", ["c0"], 3)] == ["b2", "b3", "b4", "c0"]


def hold_writer_lock(other: SqliteDatabase, seconds: float) -> threading.Thread:
    """Another process's writer (another instance: its own descriptor of the lock file) holds the
    lock for ``seconds``; returns once it holds it."""
    held = threading.Event()

    def hold() -> None:
        with other.write() as conn:
            conn.execute("CREATE TABLE IF NOT EXISTS other_process (x)")
            held.set()
            time.sleep(seconds)

    thread = threading.Thread(target=hold)
    thread.start()
    assert held.wait(5)
    return thread


def test_a_writer_of_another_process_is_waited_for_on_the_lock_file_and_then_goes_at_once(tmp_path):
    path = str(tmp_path / "hindsight.db")
    db, other = SqliteDatabase(path), SqliteDatabase(path)
    store = SqliteTrajectoryStore(db)
    store.create(traj("tr1"))
    holder = hold_writer_lock(other, 0.25)
    started = time.monotonic()
    assert store.append_events("t1", "tr1", [ev("e0")], T0).accepted == 1
    waited = time.monotonic() - started
    holder.join()
    # it waited for the other writer, and not on until the end of one of SQLite's busy sleeps (which
    # would wake it at 228 ms, then at 328 ms)
    assert 0.2 <= waited < 0.25 + 0.06
    assert [e.event_id for e in store.events("t1", "tr1")] == ["e0"]


def test_a_writer_of_another_process_that_keeps_the_lock_gets_a_busy_answer_in_time(tmp_path):
    path = str(tmp_path / "hindsight.db")
    db, other = SqliteDatabase(path, busy_timeout_ms=100), SqliteDatabase(path)
    store = SqliteTrajectoryStore(db)
    store.create(traj("tr1"))
    holder = hold_writer_lock(other, 0.5)
    started = time.monotonic()
    with pytest.raises(DatabaseBusy):
        store.append_events("t1", "tr1", [ev("e0")], T0)
    assert time.monotonic() - started < 0.4
    holder.join()
    assert store.events("t1", "tr1") == []


def test_a_queued_write_never_waits_for_another_process_and_is_committed_once_it_lets_go(tmp_path):
    path = str(tmp_path / "hindsight.db")
    db, other = SqliteDatabase(path, flush_delay=0.01), SqliteDatabase(path)
    with db.write() as conn:
        conn.execute("CREATE TABLE ledger (x)")
    holder = hold_writer_lock(other, 0.3)
    started = time.monotonic()
    db.write_soon(lambda conn: conn.execute("INSERT INTO ledger VALUES (1)"))
    assert time.monotonic() - started < 0.05  # queued, not waited for
    holder.join()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and not db.read().execute("SELECT COUNT(*) FROM ledger").fetchone()[0]:
        time.sleep(0.02)
    assert [tuple(r) for r in db.read().execute("SELECT x FROM ledger")] == [(1,)]
