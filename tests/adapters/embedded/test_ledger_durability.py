"""When a recall's ledger row is durable in the embedded database, and who sees it.

The row is committed before ``record`` returns, so the review that credits it sees it whichever
process runs that review: the server answers the recall, an ingest child appends the ``recall``
event, the review child reads the ledger. It used to be queued in the server's process for its next
group commit, which the child's append is not: 6 of 40 quick recall, event, finalize runs lost
their credit for good under another tenant's load. A "crash" or "another process" here is a
second database object on the same file, as a restart or a child opens it.
"""
from __future__ import annotations

import threading
import time
from datetime import datetime, timedelta, timezone

from chalicelib.adapters.embedded.db import SqliteDatabase
from chalicelib.adapters.embedded.recalls import SqliteRecallLedger
from chalicelib.ports import ServedRecall

T0 = datetime(2026, 11, 1, tzinfo=timezone.utc)
NEVER = 3600.0  # the flusher's delay: nothing is committed behind the test's back


def served(recall_id: str) -> ServedRecall:
    return ServedRecall("t1", recall_id, ("e1", "e2"), T0, T0 + timedelta(days=1), agent_id="a")


def seen_elsewhere(db: SqliteDatabase) -> set[str]:
    """The recall ids another process finds in the file (this object's memory is not shared)."""
    return set(SqliteRecallLedger(SqliteDatabase(db.path)).served("t1", ["r1", "r2", "r3"], T0))


def test_with_no_other_writer_the_row_is_committed_before_record_returns(tmp_path):
    db = SqliteDatabase(str(tmp_path / "hindsight.db"), flush_delay=NEVER)
    SqliteRecallLedger(db).record(served("r1"))
    assert seen_elsewhere(db) == {"r1"}


def test_a_record_made_while_another_writer_holds_the_lock_is_committed_when_it_returns(tmp_path):
    db = SqliteDatabase(str(tmp_path / "hindsight.db"), flush_delay=NEVER)
    ledger = SqliteRecallLedger(db)
    held = threading.Event()

    def holder() -> None:
        with db.write():
            held.set()
            time.sleep(0.2)  # an ingest's group commit, say

    thread = threading.Thread(target=holder)
    thread.start()
    assert held.wait(timeout=10)
    ledger.record(served("r1"))
    thread.join(timeout=10)
    assert seen_elsewhere(db) == {"r1"}  # no later commit of this process was needed


def test_another_process_attaches_it_and_a_third_credits_it(tmp_path):
    server = SqliteDatabase(str(tmp_path / "hindsight.db"), flush_delay=NEVER)
    SqliteRecallLedger(server).record(served("r2"))
    review = SqliteRecallLedger(SqliteDatabase(server.path))
    assert review.attach("t1", "r2", "tr1") is True
    assert SqliteRecallLedger(SqliteDatabase(server.path)).served("t1", ["r2"], T0)["r2"].trajectory_id == "tr1"
