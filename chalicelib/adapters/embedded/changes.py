"""The embedded index's change log (``index_changes``), which keeps several processes' indexes on
the same files in step: every write lists the entries it changed, and each process brings what it
holds in memory up to the last change before it searches."""
from __future__ import annotations

import sqlite3
import threading
from typing import Callable, Iterable

from chalicelib.adapters.embedded.db import SqliteDatabase

# changes kept for the other processes on the same files; one that has fallen further behind loads
# its partitions again
CHANGES_KEPT = 100_000
PRUNE_EVERY = 1024  # a writer prunes the log when its seq passes a multiple of this

# (tenant id, experience id) of each change since the last one applied, in order; None when the
# changes since were pruned already (what changed is not known)
Changes = list[tuple[str, str]] | None


class ChangeLog:
    """``seen``: every change up to this seq is applied to what this process holds."""

    def __init__(self, db: SqliteDatabase, kept: int = CHANGES_KEPT, prune_every: int = PRUNE_EVERY) -> None:
        self.db = db
        self.kept, self.prune_every = kept, prune_every
        self._lock = threading.Lock()
        # read before anything loads: what loads after holds it
        self.seen = self.last()

    def last(self) -> int:
        """The seq of the last change any process made."""
        row = self.db.read().execute("SELECT seq FROM index_changes ORDER BY seq DESC LIMIT 1").fetchone()
        return int(row[0]) if row else 0

    def record(self, conn: sqlite3.Connection, tenant_id: str, experience_ids: Iterable[str]) -> tuple[int, int]:
        """List the written entries (in the write's transaction); the seqs they got, first and last.
        The log is pruned to the last ``kept``."""
        rows = [(tenant_id, i) for i in experience_ids]
        conn.executemany("INSERT INTO index_changes(tenant_id, experience_id) VALUES (?,?)", rows)
        # one writer at a time: the write's rows have consecutive seqs, ending at the last one inserted
        (last,) = conn.execute("SELECT last_insert_rowid()").fetchone()
        first = last - len(rows) + 1
        if (first - 1) // self.prune_every != last // self.prune_every:
            conn.execute("DELETE FROM index_changes WHERE seq <= ?", (last - self.kept,))
        return first, last

    def wrote(self, first: int, last: int) -> None:
        """After this process applied its own write (seqs ``first`` to ``last``): when nothing else
        was written since what it holds, the log's entries of the write need not be read again."""
        with self._lock:
            if self.seen == first - 1:
                self.seen = last

    def loaded(self, synced: int) -> None:
        """A tenant's rows were read after change ``synced``: the changes made while they were read
        are applied again (for every tenant held)."""
        with self._lock:
            self.seen = min(self.seen, synced)

    def catch_up(self, apply: Callable[[sqlite3.Connection, Changes], None]) -> None:
        """Hand the changes made since ``seen`` to ``apply`` with the connection they were read on,
        one caller at a time; then they are seen."""
        if self.last() <= self.seen:
            return
        with self._lock:
            since = self.seen
            conn = self.db.read()
            changes = conn.execute(
                "SELECT seq, tenant_id, experience_id FROM index_changes WHERE seq > ? ORDER BY seq", (since,)
            ).fetchall()
            if not changes:
                return
            pruned = changes[0][0] != since + 1  # pruned past us
            apply(conn, None if pruned else [(tenant_id, experience_id) for _, tenant_id, experience_id in changes])
            self.seen = changes[-1][0]
