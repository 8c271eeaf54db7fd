"""The embedded database: one SQLite file in WAL mode, one connection per thread.

Durability: ``group_write`` (the ingest path: trajectory starts, appends, finalize) commits with
``synchronous=FULL``, so what it acknowledged was fsynced and survives a power loss; ``write``
commits with ``synchronous=NORMAL``, which survives a crash of the process (the WAL is in the
OS's cache) and is made durable by the next ``group_write`` or checkpoint (the WAL is one file,
synced as a whole). ``write_soon`` (for writes a crash may lose) is ``write`` when no other writer of the process
holds the database, and otherwise never waits: its write is queued for the next ``group_write``,
which commits it in its own transaction, or for a flusher thread shortly after; a process that
dies before then loses it.
"""
from __future__ import annotations

import fcntl
import json
import logging
import os
import sqlite3
import threading
import time
import weakref
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from datetime import datetime, timezone
from typing import Any, Callable, Iterable, Iterator, TypeVar

from pydantic_core import PydanticSerializationError, to_json

from chalicelib.adapters.embedded.private_files import private_database
from chalicelib.domain.errors import Unavailable

SCHEMA = """
CREATE TABLE IF NOT EXISTS tenants (
    tenant_id TEXT PRIMARY KEY, name TEXT NOT NULL, created_us INTEGER NOT NULL, name_key TEXT,
    event_retention_days INTEGER);
CREATE INDEX IF NOT EXISTS tenants_name_key ON tenants(name_key);
CREATE TABLE IF NOT EXISTS api_keys (
    key_hash TEXT PRIMARY KEY, tenant_id TEXT NOT NULL, created_us INTEGER NOT NULL,
    revoked INTEGER NOT NULL DEFAULT 0);
CREATE INDEX IF NOT EXISTS api_keys_tenant ON api_keys(tenant_id);
CREATE TABLE IF NOT EXISTS trajectories (
    tenant_id TEXT NOT NULL, trajectory_id TEXT NOT NULL, status TEXT NOT NULL,
    event_count INTEGER NOT NULL DEFAULT 0, doc TEXT NOT NULL, updated_us INTEGER NOT NULL,
    tools_ok TEXT, purge_after_us INTEGER, PRIMARY KEY (tenant_id, trajectory_id));
CREATE INDEX IF NOT EXISTS trajectories_status ON trajectories(status);
CREATE INDEX IF NOT EXISTS trajectories_purge ON trajectories(purge_after_us) WHERE purge_after_us IS NOT NULL;
CREATE TABLE IF NOT EXISTS events (
    tenant_id TEXT NOT NULL, trajectory_id TEXT NOT NULL, seq INTEGER NOT NULL,
    event_id TEXT NOT NULL, doc TEXT NOT NULL,
    PRIMARY KEY (tenant_id, trajectory_id, seq),
    UNIQUE (tenant_id, trajectory_id, event_id));
CREATE TABLE IF NOT EXISTS experiences (
    tenant_id TEXT NOT NULL, experience_id TEXT NOT NULL, agent_id TEXT, user_id TEXT,
    status TEXT NOT NULL, fingerprint TEXT, situation_key TEXT, created_us INTEGER NOT NULL, doc TEXT NOT NULL,
    ranking TEXT, rev INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (tenant_id, experience_id));
CREATE INDEX IF NOT EXISTS experiences_list ON experiences(tenant_id, created_us DESC, experience_id DESC);
CREATE INDEX IF NOT EXISTS experiences_fp ON experiences(tenant_id, fingerprint, status);
CREATE INDEX IF NOT EXISTS experiences_situation ON experiences(tenant_id, situation_key, status);
CREATE INDEX IF NOT EXISTS experiences_active ON experiences(status, tenant_id, experience_id);
CREATE TABLE IF NOT EXISTS review_jobs (
    tenant_id TEXT NOT NULL, trajectory_id TEXT NOT NULL, kind TEXT NOT NULL,
    state TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0, due_us INTEGER NOT NULL,
    last_error TEXT, triggers TEXT, PRIMARY KEY (tenant_id, trajectory_id, kind));
CREATE INDEX IF NOT EXISTS review_jobs_due ON review_jobs(state, due_us);
CREATE TABLE IF NOT EXISTS recalls (
    tenant_id TEXT NOT NULL, recall_id TEXT NOT NULL, expires_us INTEGER NOT NULL, doc TEXT NOT NULL,
    trajectory_id TEXT, PRIMARY KEY (tenant_id, recall_id));
CREATE INDEX IF NOT EXISTS recalls_expiry ON recalls(expires_us);
CREATE TABLE IF NOT EXISTS credits (
    tenant_id TEXT NOT NULL, trajectory_id TEXT NOT NULL, experience_id TEXT NOT NULL, expires_us INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, trajectory_id, experience_id));
CREATE INDEX IF NOT EXISTS credits_expiry ON credits(expires_us);
CREATE TABLE IF NOT EXISTS review_turns (
    tenant_id TEXT PRIMARY KEY, served INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS vectors (
    tenant_id TEXT NOT NULL, experience_id TEXT NOT NULL, vec BLOB NOT NULL, meta TEXT NOT NULL,
    terms TEXT, PRIMARY KEY (tenant_id, experience_id));
CREATE TABLE IF NOT EXISTS token_vectors (
    tenant_id TEXT NOT NULL, experience_id TEXT NOT NULL, text_key TEXT NOT NULL, vecs BLOB NOT NULL,
    PRIMARY KEY (tenant_id, experience_id));
CREATE INDEX IF NOT EXISTS token_vectors_text ON token_vectors(tenant_id, text_key);
CREATE TABLE IF NOT EXISTS checkpoints (
    name TEXT PRIMARY KEY, doc TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS index_changes (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, tenant_id TEXT NOT NULL, experience_id TEXT NOT NULL);
"""


def to_us(dt: datetime) -> int:
    return int(dt.timestamp() * 1_000_000)


def from_us(us: int) -> datetime:
    return datetime.fromtimestamp(us / 1_000_000, tz=timezone.utc)


_ENCODER = json.JSONEncoder(separators=(",", ":"), default=str)  # built once: json.dumps builds one per call


def dumps(obj: Any) -> str:
    return _ENCODER.encode(obj)


def fast_dumps(obj: Any) -> str:
    """``dumps`` by pydantic-core's serializer, about three times faster on an event. For JSON values
    the text reads back the same; only some spellings differ (``1e-7`` for ``1e-07``, DEL unescaped).
    Other values are written as pydantic writes them (a datetime in ISO form, not ``str``'s). What it
    cannot write (a lone surrogate: UTF-8 refuses it) goes through ``dumps``."""
    try:
        return to_json(obj, ensure_ascii=True, inf_nan_mode="constants", fallback=str).decode()
    except PydanticSerializationError:
        return _ENCODER.encode(obj)


IDS_PER_QUERY = 500  # ids of one IN list: under SQLite's bound-parameter limit
# ``read_in``: connections that read one list of ids at once, and the fewest ids each reads; and how
# long no other thread of the process may have read for a read to be split
READ_WAYS, IDS_PER_WAY = 4, 4
READ_SPLIT_QUIET_SECONDS = 0.05


def rows_in(conn: sqlite3.Connection, sql: str, args: tuple, ids: Iterable[str]) -> Iterator[sqlite3.Row]:
    """The rows of ``sql``, whose ``{marks}`` is the IN list of ``ids`` (each once), after ``args``:
    read a chunk of ids at a time."""
    ids = list(dict.fromkeys(ids))
    for start in range(0, len(ids), IDS_PER_QUERY):
        chunk = ids[start : start + IDS_PER_QUERY]
        yield from conn.execute(sql.format(marks=",".join("?" * len(chunk))), (*args, *chunk))


log = logging.getLogger("hindsight.sqlite")
T = TypeVar("T")
# jobs one group commit takes at most: bounds the wait of the last one in the batch
MAX_GROUP = 64
# how long a write queued by ``write_soon`` waits for a group commit before the flusher commits it: the
# window in which a crash loses it, and the flusher's batching of queued writes
FLUSH_DELAY_SECONDS = 0.02


class DatabaseBusy(Unavailable):
    """Another writer held the database longer than the busy timeout."""


def _is_busy(exc: BaseException) -> bool:
    text = str(exc).lower()
    return isinstance(exc, sqlite3.OperationalError) and ("locked" in text or "busy" in text)


class SqliteDatabase:
    """Thread-local connections to one database file (or a shared in-memory database)."""

    def __init__(self, path: str, busy_timeout_ms: int = 30_000, flush_delay: float = FLUSH_DELAY_SECONDS) -> None:
        self.path = path
        self.busy_timeout_ms = busy_timeout_ms
        self.flush_delay = flush_delay
        self._local = threading.local()
        self._uri = path.startswith("file:")
        # Writers of this process queue here, woken as soon as the lock is free; then, between
        # processes (the embedded server's ingest processes), on a lock file beside the database,
        # polled in sleeps of at most 1 ms: SQLite's own busy handler sleeps up to 100 ms, and under
        # load a writer of one process would wait out sleeps while another's commits went by.
        self._writer = threading.Lock()
        on_disk = not (self._uri or path == ":memory:")
        if on_disk:
            private_database(path)  # 0600 before SQLite opens it: its WAL and shared memory follow
        self._lock_fd = os.open(f"{path}-writer", os.O_RDWR | os.O_CREAT, 0o600) if on_disk else None
        if self._lock_fd is not None:
            weakref.finalize(self, os.close, self._lock_fd)
        self._group = threading.Condition(threading.Lock())
        self._queue: list[_Job] = []
        self._leading = False
        self._soon: list[Callable[[sqlite3.Connection], Any]] = []  # write_soon's queue
        self._soon_ready = threading.Condition(threading.Lock())
        self._flusher: threading.Thread | None = None
        self._readers: ThreadPoolExecutor | None = None  # read_in's, made on its first split read
        self._readers_lock = threading.Lock()
        # read_in's latest start or end: (monotonic time, thread); a race only blurs it
        self._last_read: tuple[float, int | None] = (0.0, None)
        conn = self.connection()
        self._migrate(conn)
        conn.executescript(SCHEMA)  # executescript manages its own transaction

    @staticmethod
    def _migrate(conn: sqlite3.Connection) -> None:
        """Columns added after a table was first created (CREATE TABLE IF NOT EXISTS skips them)."""
        added = {("experiences", "situation_key"): "TEXT", ("experiences", "ranking"): "TEXT",
                 ("experiences", "rev"): "INTEGER NOT NULL DEFAULT 0", ("recalls", "trajectory_id"): "TEXT", ("review_jobs", "triggers"): "TEXT",
                 ("vectors", "terms"): "TEXT", ("trajectories", "tools_ok"): "TEXT", ("tenants", "name_key"): "TEXT",
                 ("tenants", "event_retention_days"): "INTEGER", ("trajectories", "purge_after_us"): "INTEGER"}
        for (table, column), kind in added.items():
            cols = {r[1] for r in conn.execute(f"PRAGMA table_info({table})")}
            if cols and column not in cols:
                conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")

    def connection(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, timeout=30, isolation_level=None, uri=self._uri, check_same_thread=False)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute(f"PRAGMA busy_timeout={int(self.busy_timeout_ms)}")
            conn.row_factory = sqlite3.Row
            self._local.conn = conn
            self._local.sync = "NORMAL"
        return conn

    def _synchronous(self, conn: sqlite3.Connection, level: str) -> None:
        if self._local.sync != level:  # a pragma SQLite refuses inside a transaction: set between them
            conn.execute(f"PRAGMA synchronous={level}")
            self._local.sync = level

    @contextmanager
    def _writer_lock(self) -> Iterator[None]:
        deadline = time.monotonic() + self.busy_timeout_ms / 1000
        if not self._writer.acquire(timeout=self.busy_timeout_ms / 1000):
            raise DatabaseBusy("the database is busy; retry shortly")
        try:
            self._lock_file(deadline)
            try:
                yield
            finally:
                self._unlock_file()
        finally:
            self._writer.release()

    def _lock_file(self, deadline: float | None) -> bool:
        """The lock between processes, the thread lock held: False when ``deadline`` is None and
        another process holds it (DatabaseBusy once ``deadline`` has passed)."""
        if self._lock_fd is None:
            return True
        pause = 0.00005
        while True:
            try:
                fcntl.flock(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return True
            except BlockingIOError:
                if deadline is None:
                    return False
                if time.monotonic() >= deadline:
                    raise DatabaseBusy("the database is busy; retry shortly") from None
                time.sleep(pause)
                pause = min(pause * 2, 0.001)

    def _unlock_file(self) -> None:
        if self._lock_fd is not None:
            fcntl.flock(self._lock_fd, fcntl.LOCK_UN)

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """A write transaction taken up front, so concurrent writers queue instead of deadlocking.

        Raises DatabaseBusy (503, retry) when the lock is not had within the busy timeout: the
        write did not happen, and nothing about it is left half done."""
        conn = self.connection()
        with self._writer_lock():
            with self._transaction(conn):
                yield conn

    @contextmanager
    def _transaction(self, conn: sqlite3.Connection) -> Iterator[None]:
        """``write``'s transaction, the writer lock held."""
        self._synchronous(conn, "NORMAL")
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            if _is_busy(exc):
                raise DatabaseBusy("the database is busy; retry shortly") from exc
            raise
        try:
            yield
            conn.execute("COMMIT")
        except BaseException as exc:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            if _is_busy(exc):
                raise DatabaseBusy("the database is busy; retry shortly") from exc
            raise

    def write_soon(self, fn: Callable[[sqlite3.Connection], Any]) -> None:
        """``fn(conn)`` in a write transaction, as ``write`` runs it, when no other writer of this
        process holds the database; otherwise queued without waiting (a group commit holds the lock
        through its fsync): the next ``group_write`` runs it in its own transaction, before its jobs,
        or the flusher thread commits it within ``flush_delay`` seconds. So whatever a group commit
        acknowledges after this call returns is committed, and fsynced, with it; a queued write is
        lost only if the process dies before either. ``flush_soon`` commits the queue now (a
        reader that must see the writes calls it first). ``fn`` may run on another thread: it may
        touch only ``conn`` and its own objects."""
        if self._writer.acquire(blocking=False):
            try:
                if self._lock_file(None):
                    try:
                        conn = self.connection()
                        with self._transaction(conn):
                            fn(conn)
                    finally:
                        self._unlock_file()
                    return
            finally:
                self._writer.release()
        with self._soon_ready:
            self._soon.append(fn)
            if self._flusher is None:
                self._flusher = threading.Thread(target=self._flush_loop, name="hindsight-sqlite-flush", daemon=True)
                self._flusher.start()
            self._soon_ready.notify()

    def flush_soon(self) -> None:
        """Commit what ``write_soon`` queued, now (nothing to do when nothing is queued)."""
        if not self._soon:
            return
        conn = self.connection()
        # the lock first, then the queue: a group commit after this one finds the writes committed
        # before it, or takes them itself
        with self._writer_lock():
            soon = self._take_soon()
            if not soon:
                return
            try:
                with self._transaction(conn):
                    self._run_soon(conn, soon)
            except BaseException:
                self._requeue_soon(soon)
                raise

    def _flush_loop(self) -> None:
        while True:
            with self._soon_ready:
                while not self._soon:
                    self._soon_ready.wait()
            time.sleep(self.flush_delay)  # a group commit may take them meanwhile; more may come
            try:
                self.flush_soon()
            except Exception:  # kept queued: the next commit or round takes them
                log.exception("queued writes not committed; retrying")
                time.sleep(1.0)

    def _take_soon(self) -> list[Callable[[sqlite3.Connection], Any]]:
        with self._soon_ready:
            soon, self._soon = self._soon, []
        return soon

    def _requeue_soon(self, soon: list[Callable[[sqlite3.Connection], Any]]) -> None:
        if soon:
            with self._soon_ready:
                self._soon[:0] = soon
                self._soon_ready.notify()

    @staticmethod
    def _run_soon(conn: sqlite3.Connection, soon: list[Callable[[sqlite3.Connection], Any]]) -> None:
        """Each queued write in a savepoint: one that fails is dropped (and logged) alone."""
        for fn in soon:
            conn.execute("SAVEPOINT soon")
            try:
                fn(conn)
            except Exception:
                if not conn.in_transaction:
                    raise
                conn.execute("ROLLBACK TO soon")
                log.exception("a queued write failed; dropped")
            conn.execute("RELEASE soon")

    def group_write(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``fn(conn)`` in a write transaction shared with the writes queued meanwhile, and
        return once that transaction is committed and fsynced (group commit).

        The thread that finds no commit under way leads: it runs the queued jobs in order, each in a
        savepoint (an exception undoes that job's writes and is raised to its caller only), commits
        once, then wakes the others; a job left out of a full batch leads the next one. Nothing is
        acknowledged before its commit: when the commit fails, every job of the batch raises
        (DatabaseBusy when the lock was not had in time) and nothing of the batch is stored.
        ``fn`` runs on the leader's thread: it may touch only ``conn`` and its own objects."""
        job = _Job(fn)
        group = self._group
        with group:
            self._queue.append(job)
        while True:
            with group:
                while not job.done and self._leading:
                    group.wait()
                if job.done:
                    break
                self._leading = True
                batch = self._queue[:MAX_GROUP]
                del self._queue[:MAX_GROUP]
            try:
                self._commit(batch)
            finally:
                with group:
                    for j in batch:
                        j.done = True
                    self._leading = False
                    group.notify_all()
        if job.error is not None:
            raise job.error
        return job.result

    def _commit(self, batch: list["_Job"]) -> None:
        conn = self.connection()
        soon: list[Callable[[sqlite3.Connection], Any]] = []
        try:
            with self._writer_lock():
                self._synchronous(conn, "FULL")
                conn.execute("BEGIN IMMEDIATE")
                try:
                    soon = self._take_soon()  # write_soon's queue, under the lock: see flush_soon
                    self._run_soon(conn, soon)
                    for job in batch:
                        conn.execute("SAVEPOINT job")
                        try:
                            job.result = job.fn(conn)
                        except Exception as exc:
                            if not conn.in_transaction:  # SQLite gave up the whole transaction
                                raise
                            conn.execute("ROLLBACK TO job")
                            job.error = DatabaseBusy("the database is busy; retry shortly") if _is_busy(exc) else exc
                        conn.execute("RELEASE job")
                    conn.execute("COMMIT")
                except BaseException:
                    if conn.in_transaction:
                        conn.execute("ROLLBACK")
                    raise
        except BaseException as exc:  # nothing of the batch was committed: every job fails
            self._requeue_soon(soon)  # queued writes are not a job's: the next commit takes them
            for job in batch:
                job.result = None
                if _is_busy(exc):
                    job.error = DatabaseBusy("the database is busy; retry shortly")
                    job.error.__cause__ = exc
                else:
                    job.error = exc

    def read(self) -> sqlite3.Connection:
        return self.connection()

    def read_in(self, sql: str, args: tuple, ids: Iterable[str]) -> list[sqlite3.Row]:
        """``rows_in``'s rows; after a pause (nothing read by ``read_in`` in another thread of the process
        for ``READ_SPLIT_QUIET_SECONDS``), the ids split over up to ``READ_WAYS`` connections that read at
        once (this thread's and those of a few reader threads). Rows out of the OS's page cache are
        read from the disk one after another by one connection; several overlap those waits: 100
        random lessons' rows read in 18.7 ms by one connection and in 7.4 by four once the file was
        out of the cache (a recall reads its 50-100 candidates and its leading 20's token vectors).
        Rows are likeliest out of the cache after a pause; and a split costs its hand-offs between
        threads (0.34 -> 1.18 ms of CPU for 100 rows in the cache), which under load, where the
        requests' own waits overlap anyway, cost 12% of recalls/s. The rows come in no particular
        order, each read by one statement (no common snapshot)."""
        ids = list(dict.fromkeys(ids))
        ways = min(READ_WAYS, len(ids) // IDS_PER_WAY)
        conn = self.read()
        me, (last, reader) = threading.get_ident(), self._last_read
        started = time.monotonic()
        quiet, self._last_read = reader == me or started - last >= READ_SPLIT_QUIET_SECONDS, (started, me)
        try:
            # not from inside a transaction (other connections would miss its writes), nor from a private
            # in-memory database (another connection would open another, empty)
            if not quiet or ways < 2 or conn.in_transaction or self.path == ":memory:":
                return list(rows_in(conn, sql, args, ids))
            if self._readers is None:
                with self._readers_lock:
                    if self._readers is None:
                        self._readers = ThreadPoolExecutor(READ_WAYS - 1, thread_name_prefix="hindsight-sqlite-read")
            parts = [ids[i::ways] for i in range(ways)]
            pending = [self._readers.submit(self._read_part, sql, args, part) for part in parts[1:]]
            rows = self._read_part(sql, args, parts[0])
            for done in pending:
                rows.extend(done.result())
            return rows
        finally:
            self._last_read = time.monotonic(), me

    def _read_part(self, sql: str, args: tuple, ids: list[str]) -> list[sqlite3.Row]:
        return list(rows_in(self.read(), sql, args, ids))


class _Job:
    __slots__ = ("fn", "result", "error", "done")

    def __init__(self, fn: Callable[[sqlite3.Connection], Any]) -> None:
        self.fn = fn
        self.result: Any = None
        self.error: BaseException | None = None
        self.done = False
