"""The embedded database: one SQLite file in WAL mode, one connection per thread."""
from __future__ import annotations

import json
import sqlite3
import threading
from contextlib import contextmanager
from datetime import datetime, timezone
from typing import Any, Iterator

from ..domain.errors import Unavailable

SCHEMA = """
CREATE TABLE IF NOT EXISTS tenants (
    tenant_id TEXT PRIMARY KEY, name TEXT NOT NULL, created_us INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS api_keys (
    key_hash TEXT PRIMARY KEY, tenant_id TEXT NOT NULL, created_us INTEGER NOT NULL,
    revoked INTEGER NOT NULL DEFAULT 0);
CREATE INDEX IF NOT EXISTS api_keys_tenant ON api_keys(tenant_id);
CREATE TABLE IF NOT EXISTS trajectories (
    tenant_id TEXT NOT NULL, trajectory_id TEXT NOT NULL, status TEXT NOT NULL,
    event_count INTEGER NOT NULL DEFAULT 0, doc TEXT NOT NULL, updated_us INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, trajectory_id));
CREATE INDEX IF NOT EXISTS trajectories_status ON trajectories(status);
CREATE TABLE IF NOT EXISTS events (
    tenant_id TEXT NOT NULL, trajectory_id TEXT NOT NULL, seq INTEGER NOT NULL,
    event_id TEXT NOT NULL, doc TEXT NOT NULL,
    PRIMARY KEY (tenant_id, trajectory_id, seq),
    UNIQUE (tenant_id, trajectory_id, event_id));
CREATE TABLE IF NOT EXISTS experiences (
    tenant_id TEXT NOT NULL, experience_id TEXT NOT NULL, agent_id TEXT, user_id TEXT,
    status TEXT NOT NULL, fingerprint TEXT, situation_key TEXT, created_us INTEGER NOT NULL, doc TEXT NOT NULL,
    PRIMARY KEY (tenant_id, experience_id));
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
    PRIMARY KEY (tenant_id, recall_id));
CREATE INDEX IF NOT EXISTS recalls_expiry ON recalls(expires_us);
CREATE TABLE IF NOT EXISTS credits (
    tenant_id TEXT NOT NULL, trajectory_id TEXT NOT NULL, experience_id TEXT NOT NULL, expires_us INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, trajectory_id, experience_id));
CREATE INDEX IF NOT EXISTS credits_expiry ON credits(expires_us);
CREATE TABLE IF NOT EXISTS review_turns (
    tenant_id TEXT PRIMARY KEY, served INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS vectors (
    tenant_id TEXT NOT NULL, experience_id TEXT NOT NULL, vec BLOB NOT NULL, meta TEXT NOT NULL,
    PRIMARY KEY (tenant_id, experience_id));
"""


def to_us(dt: datetime) -> int:
    return int(dt.timestamp() * 1_000_000)


def from_us(us: int) -> datetime:
    return datetime.fromtimestamp(us / 1_000_000, tz=timezone.utc)


def dumps(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"), default=str)


class DatabaseBusy(Unavailable):
    """Another writer held the database longer than the busy timeout."""


def _is_busy(exc: BaseException) -> bool:
    text = str(exc).lower()
    return isinstance(exc, sqlite3.OperationalError) and ("locked" in text or "busy" in text)


class SqliteDatabase:
    """Thread-local connections to one database file (or a shared in-memory database)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._local = threading.local()
        self._uri = path.startswith("file:")
        conn = self.connection()
        self._migrate(conn)
        conn.executescript(SCHEMA)  # executescript manages its own transaction

    @staticmethod
    def _migrate(conn: sqlite3.Connection) -> None:
        """Columns added after a table was first created (CREATE TABLE IF NOT EXISTS skips them)."""
        added = {("experiences", "situation_key"): "TEXT", ("review_jobs", "triggers"): "TEXT"}
        for (table, column), kind in added.items():
            cols = {r[1] for r in conn.execute(f"PRAGMA table_info({table})")}
            if cols and column not in cols:
                conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")

    def connection(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, timeout=30, isolation_level=None, uri=self._uri, check_same_thread=False)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")  # WAL + NORMAL: durable across process crashes
            conn.execute("PRAGMA busy_timeout=30000")
            conn.row_factory = sqlite3.Row
            self._local.conn = conn
        return conn

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """A write transaction taken up front, so concurrent writers queue instead of deadlocking.

        Raises DatabaseBusy (503, retry) when the lock is not had within the busy timeout: the
        write did not happen, and nothing about it is left half done."""
        conn = self.connection()
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            if _is_busy(exc):
                raise DatabaseBusy("the database is busy; retry shortly") from exc
            raise
        try:
            yield conn
            conn.execute("COMMIT")
        except BaseException as exc:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            if _is_busy(exc):
                raise DatabaseBusy("the database is busy; retry shortly") from exc
            raise

    def read(self) -> sqlite3.Connection:
        return self.connection()
