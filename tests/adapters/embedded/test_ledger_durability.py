"""When a recall's ledger row is durable in the embedded database (``SqliteDatabase.write_soon``).

A recall never waits for another writer (an ingest's group commit holds the lock through its fsync):
its row is then queued. Whatever a group commit acknowledges after the recall answered (the agent's
``recall`` event naming the id) is committed with the row, so a crash after that loses neither; a
crash before any commit loses the queued row, and only that. A "crash" here is the process's
database object abandoned with its queue, and the file opened again, as a restart does.
"""
from __future__ import annotations

import sqlite3
import threading
from datetime import datetime, timedelta, timezone

from chalicelib.adapters.embedded.db import SqliteDatabase
from chalicelib.adapters.embedded.recalls import SqliteRecallLedger
from chalicelib.adapters.embedded.stores import SqliteTrajectoryStore
from chalicelib.domain.models import Trajectory
from chalicelib.ports import ServedRecall

T0 = datetime(2026, 11, 1, tzinfo=timezone.utc)
NEVER = 3600.0  # the flusher's delay: only a commit of the test's own takes the queue


def served(recall_id: str) -> ServedRecall:
    return ServedRecall("t1", recall_id, ("e1", "e2"), T0, T0 + timedelta(days=1))


def traj(tid: str) -> Trajectory:
    return Trajectory(tenant_id="t1", trajectory_id=tid, agent_id="a", goal="g", created_at=T0, updated_at=T0)


def after_restart(db: SqliteDatabase) -> set[str]:
    """The recall ids a fresh process finds in the file (the old object's queue is gone with it)."""
    return set(SqliteRecallLedger(SqliteDatabase(db.path)).served("t1", ["r1", "r2", "r3"], T0))


def record_while_the_writer_lock_is_held(db: SqliteDatabase, ledger: SqliteRecallLedger, recall_id: str) -> None:
    """``record`` while another writer holds the lock; it must return without waiting for it."""
    held, done = threading.Event(), threading.Event()

    def holder() -> None:
        with db.write():
            held.set()
            done.wait(timeout=30)

    thread = threading.Thread(target=holder)
    thread.start()
    assert held.wait(timeout=10)
    try:
        ledger.record(served(recall_id))  # returns while the holder still writes
        assert thread.is_alive() and not done.is_set()
    finally:
        done.set()
        thread.join(timeout=10)


def test_with_no_other_writer_the_row_is_committed_before_record_returns(tmp_path):
    db = SqliteDatabase(str(tmp_path / "hindsight.db"), flush_delay=NEVER)
    SqliteRecallLedger(db).record(served("r1"))
    assert after_restart(db) == {"r1"}


def test_a_recall_does_not_wait_for_a_writer_and_the_next_group_commit_makes_its_row_durable(tmp_path):
    db = SqliteDatabase(str(tmp_path / "hindsight.db"), flush_delay=NEVER)
    ledger, store = SqliteRecallLedger(db), SqliteTrajectoryStore(db)
    record_while_the_writer_lock_is_held(db, ledger, "r1")
    assert after_restart(db) == set()  # queued: a crash now would lose it
    store.create(traj("tr1"))  # an acknowledged group commit (the recall event's append is one)
    assert after_restart(db) == {"r1"}


def test_a_queued_row_is_read_by_its_own_process_and_committed_by_the_flusher(tmp_path):
    db = SqliteDatabase(str(tmp_path / "hindsight.db"), flush_delay=NEVER)
    ledger = SqliteRecallLedger(db)
    record_while_the_writer_lock_is_held(db, ledger, "r1")
    assert set(ledger.served("t1", ["r1"], T0)) == {"r1"}  # a read commits the queue first
    assert after_restart(db) == {"r1"}

    quick = SqliteDatabase(str(tmp_path / "other.db"), flush_delay=0.01)
    ledger = SqliteRecallLedger(quick)
    record_while_the_writer_lock_is_held(quick, ledger, "r2")
    deadline = threading.Event()
    for _ in range(500):  # the flusher commits it on its own, without a read or a group commit
        if after_restart(quick) == {"r2"}:
            break
        deadline.wait(0.01)
    assert after_restart(quick) == {"r2"}


def test_a_group_commit_that_fails_leaves_the_queued_rows_to_the_next_one(tmp_path):
    db = SqliteDatabase(str(tmp_path / "hindsight.db"), flush_delay=NEVER)
    ledger, store = SqliteRecallLedger(db), SqliteTrajectoryStore(db)
    record_while_the_writer_lock_is_held(db, ledger, "r1")

    def breaks_the_transaction(conn: sqlite3.Connection) -> None:
        conn.execute("ROLLBACK")  # the whole commit fails: nothing of it is stored

    try:
        db.group_write(breaks_the_transaction)
    except sqlite3.Error:
        pass
    assert after_restart(db) == set()
    store.create(traj("tr1"))
    assert after_restart(db) == {"r1"}
