"""``SqliteDatabase.read_in``: a list of ids read by several connections at once after a pause (a
recall's candidates and token vectors), with the rows one connection's ``rows_in`` gives."""
from __future__ import annotations

import threading
import time

import pytest

from chalicelib.adapters.embedded import db as sqlite_db
from chalicelib.adapters.embedded.db import SqliteDatabase, rows_in

SQL = "SELECT k, v FROM kv WHERE t=? AND k IN ({marks})"


@pytest.fixture()
def db(tmp_path, monkeypatch):
    monkeypatch.setattr(sqlite_db, "READ_SPLIT_QUIET_SECONDS", 0.0)  # every read splits (see the last test)
    db = SqliteDatabase(str(tmp_path / "read.db"))
    with db.write() as c:
        c.execute("CREATE TABLE kv (t TEXT, k TEXT, v TEXT, PRIMARY KEY (t, k))")
        c.executemany("INSERT INTO kv VALUES (?, ?, ?)", [(t, f"k{i:04d}", f"{t}-{i}") for t in ("t1", "t2") for i in range(1200)])
    return db


def pairs(rows) -> list[tuple[str, str]]:
    return sorted((r["k"], r["v"]) for r in rows)


@pytest.mark.parametrize("count", [0, 1, 3, 7, 8, 9, 20, 101, 1100])
def test_the_rows_of_one_connection_for_any_number_of_ids(db, count):
    ids = [f"k{i * 7 % 1200:04d}" for i in range(count)] + ["missing", "k0000"]  # an unknown id, a repeat
    got = db.read_in(SQL, ("t1",), ids)
    assert pairs(got) == pairs(rows_in(db.read(), SQL, ("t1",), ids))
    assert len(got) == len(set(ids) - {"missing"})  # each row once
    assert all(v.startswith("t1-") for _, v in pairs(got))  # the leading args apply to every part


@pytest.fixture()
def threads(db, monkeypatch) -> list[str]:
    """The thread that read each part of a split read (none for a read on one connection)."""
    read: list[str] = []
    part = db._read_part

    def spied(sql, args, ids):
        read.append(threading.current_thread().name)
        return part(sql, args, ids)

    monkeypatch.setattr(db, "_read_part", spied)
    return read


def test_a_long_list_is_read_by_several_threads_and_a_short_one_by_the_caller(db, threads):
    db.read_in(SQL, ("t1",), [f"k{i:04d}" for i in range(100)])
    # one part on the caller's connection, the others on reader threads' (an idle one may take two)
    assert len(threads) == sqlite_db.READ_WAYS
    assert threads.count(threading.current_thread().name) == 1
    assert all(name.startswith("hindsight-sqlite-read") for name in threads if name != threading.current_thread().name)

    threads.clear()
    few = [f"k{i:04d}" for i in range(2 * sqlite_db.IDS_PER_WAY - 1)]
    assert len(db.read_in(SQL, ("t1",), few)) == len(few)
    assert threads == []  # one connection's query: not split into parts


def test_a_failing_part_fails_the_read(db):
    with pytest.raises(Exception, match="no such table"):
        db.read_in("SELECT k FROM nowhere WHERE t=? AND k IN ({marks})", ("t1",), [f"k{i:04d}" for i in range(50)])


def test_a_reader_thread_sees_what_was_committed_after_its_connection_was_opened(db):
    ids = [f"k{i:04d}" for i in range(40)]
    db.read_in(SQL, ("t1",), ids)  # the reader threads' connections are open now
    with db.write() as c:
        c.execute("UPDATE kv SET v='new' WHERE t='t1'")
    assert {v for _, v in pairs(db.read_in(SQL, ("t1",), ids))} == {"new"}


def test_inside_a_transaction_the_read_sees_its_writes(db):
    ids = [f"k{i:04d}" for i in range(40)]
    with db.write() as c:
        c.execute("UPDATE kv SET v='mine' WHERE t='t1'")
        assert {v for _, v in pairs(db.read_in(SQL, ("t1",), ids))} == {"mine"}  # on this connection alone


def test_a_read_is_split_unless_another_thread_has_just_read(db, threads, monkeypatch):
    monkeypatch.setattr(sqlite_db, "READ_SPLIT_QUIET_SECONDS", 0.2)
    ids = [f"k{i:04d}" for i in range(100)]
    time.sleep(0.25)
    assert len(db.read_in(SQL, ("t1",), ids)) == 100
    assert len(threads) == sqlite_db.READ_WAYS  # no other thread had read for 0.25 s
    threads.clear()
    db.read_in(SQL, ("t1",), ids)
    assert len(threads) == sqlite_db.READ_WAYS  # the same thread's second read (a recall's token vectors)
    threads.clear()
    other = threading.Thread(target=db.read_in, args=(SQL, ("t1",), ids))
    other.start()
    other.join()
    assert threads == []  # its read follows this thread's at once (concurrent requests overlap their waits anyway)
    time.sleep(0.25)
    db.read_in(SQL, ("t1",), ids)
    assert len(threads) == sqlite_db.READ_WAYS
