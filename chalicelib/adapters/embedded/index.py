"""The embedded experience index: cosine k-NN in numpy (exact, or a 1-bit first pass then float32)
plus BM25 over an inverted index, persisted in SQLite.

Exact search is the floor that approximate indexes are measured against, and at the scale of one
tenant on one machine (1e5 x 384 floats = 150 MB) one matrix-vector product takes milliseconds.
That product is bound by memory: from ``_SIGNS_MIN_ROWS`` rows a search first ranks the rows its
filter leaves by their sign codes (``sign_codes``: 48 bytes a row, a 32nd of the float32 bytes),
then scores the nearest in float32, at least 40 times k of them and a 25th of the rows; the scores
returned are the float32 ones.
Filters are boolean masks over per-row codes, applied before ranking, so a selective filter never
starves the result. Each tenant is its own partition, loaded from disk on first use.

This module holds the index and its tuning, and reads and writes its rows; its parts are
``partition`` (one tenant's matrix, filter codes and tool sets), ``bm25`` (postings and term
scores), ``search`` (the product, k-NN and top k), ``changes`` (the log that keeps several
processes' indexes on the same files in step) and ``token_vectors`` (late interaction's rows).
"""
from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections import Counter
from typing import Callable, Iterable, Iterator, Mapping, Sequence

import numpy as np

from chalicelib.adapters.embedded.bm25 import DENSE_SHARE, TERM_CACHE_POSTINGS
from chalicelib.adapters.embedded.bm25 import Postings as _Postings  # noqa: F401  (the index's parts, by their names here)
from chalicelib.adapters.embedded.changes import CHANGES_KEPT, PRUNE_EVERY, ChangeLog, Changes
from chalicelib.adapters.embedded.db import SqliteDatabase, dumps, rows_in
from chalicelib.adapters.embedded.partition import Partition as _Partition
from chalicelib.adapters.embedded.search import RowProduct, bm25_top, knn
from chalicelib.adapters.embedded.token_vectors import TokenVectorTable
from chalicelib.domain.lexical import Bm25Params, terms, terms_key
from chalicelib.ports import IndexEntry, IndexFilter

# The tuning, read as partitions are made and searches run.
_ROWS_PER_THREAD = 16384  # below this many rows a thread is not worth waking for a block
_GATHER_ROWS = 8192  # listed rows copied at a time: 12 MB at 384 dimensions, a few BLAS calls
# from this many rows a k-NN search first ranks the rows its filter leaves by their sign codes
# (``sign_codes``: 1 bit a dimension, a 32nd of the bytes float32 reads), then scores the nearest in
# float32: at least ``_RESCORE`` x k of them and 1/``_RESCORE_SHARE`` of the rows ranked
_SIGNS_MIN_ROWS = 16384
_RESCORE, _RESCORE_SHARE = 40, 25
_TERM_CACHE_POSTINGS = TERM_CACHE_POSTINGS  # BM25 term scores kept between writes (``bm25.Bm25Rows``)
_DENSE_SHARE = DENSE_SHARE
_CHECKED_ROWS = 64  # stored terms compared with a fresh tokenization at each load: the first rows and a spread
_CHANGES_KEPT = CHANGES_KEPT  # the change log (``changes``)
_PRUNE_EVERY = PRUNE_EVERY


class _StaleTerms(Exception):
    """A row's stored terms are not what ``terms`` makes of its text now, under the same key."""


def _stored(key: str, words: list[str]) -> str:
    """A row's terms as the vectors table keeps them: the key they were made under, a tab, the terms."""
    return f"{key}\t{' '.join(words)}"


# the vector of an entry read back from the files: its row of the partition's matrix holds it
_NO_VECTOR = np.zeros(0, dtype=np.float32)


def _entry(row: sqlite3.Row) -> IndexEntry:
    """A stored row's entry, without its vector."""
    m = json.loads(row["meta"])
    # rows written before intents were indexed have none: they fit any intent
    return IndexEntry(
        row["experience_id"], _NO_VECTOR, m.get("agent_id"), m.get("user_id"), tuple(m.get("tools", ())),
        m.get("task_type"), tuple(m.get("tags", ())), m.get("text", ""), m.get("intent"),
    )


class NumpyVectorIndex:
    """Implements ``ports.VectorIndex`` and ``ports.TokenVectorIndex``. Writes go to SQLite first,
    then to memory. Token vectors stay in SQLite only (``token_vectors``).

    Several processes may keep an index on the same files (the embedded server answers recalls, its
    review process writes lessons): every write also lists what it changed in ``index_changes``,
    and each search first brings the loaded partitions up to the last change (``_sync``: one
    indexed read when nothing changed, the changed rows read again when something did)."""

    def __init__(
        self, db: SqliteDatabase, dim: int, bm25: Bm25Params = Bm25Params(), threads: int = 1,
        idle_seconds: float = 0.0, clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """``threads``: how many threads share one search's matrix-vector product, each a block of
        rows (1: numpy's own, as BLAS is set up). The embedded server sets BLAS to one thread and
        this to the cores: BLAS's idle threads spin for about 100 ms after each product, a core
        lost to the other requests under load, while these sleep. ``idle_seconds``: a tenant's
        partition not searched nor written for that long is let go (loaded again from the files
        when next needed); 0: kept for the process's life (the server's, which answers recalls)."""
        self.db = db
        self.dim = dim
        self._parts: dict[str, _Partition] = {}
        self._loading: dict[str, threading.Lock] = {}  # tenants being loaded, each its lock
        self._lock = threading.RLock()  # the partitions' and loads' maps; each partition has its own
        self._product = RowProduct(threads)
        self.bm25 = bm25
        # every loaded partition holds each change up to the log's ``seen`` (``_sync``), read before
        # any partition loads
        self._changes = ChangeLog(db, _CHANGES_KEPT, _PRUNE_EVERY)
        self._tokens = TokenVectorTable(db, dim)
        self.idle_seconds = idle_seconds
        self._clock = clock
        self._swept = clock()

    def _sweep(self, now: float) -> None:
        """Let go of the partitions idle for ``idle_seconds`` (looked for at most every tenth of it)."""
        if not self.idle_seconds or now - self._swept < self.idle_seconds / 10:
            return
        with self._lock:
            self._swept = now
            idle = [t for t, p in self._parts.items() if now - p.used >= self.idle_seconds]
            for tenant_id in idle:  # a thread holding one finishes with it; the files hold its writes
                del self._parts[tenant_id]

    def _partition(self, tenant_id: str) -> _Partition:
        now = self._clock()
        self._sweep(now)
        part = self._parts.get(tenant_id)
        if part is None:
            # loaded under a lock of its own: the other tenants' searches and writes go on meanwhile
            with self._lock:
                loading = self._loading.setdefault(tenant_id, threading.Lock())
            with loading:
                part = self._parts.get(tenant_id)
                if part is None:
                    synced = self._changes.last()  # before its rows are read: any change after it is read again
                    part = self._load(tenant_id)
                    with self._lock:
                        self._parts[tenant_id] = part
                        del self._loading[tenant_id]
                    self._changes.loaded(synced)
        part.used = now
        return part

    def _new_partition(self) -> _Partition:
        return _Partition(self.dim, self.bm25, terms, _TERM_CACHE_POSTINGS, _DENSE_SHARE)

    def _sync(self) -> None:
        """The loaded partitions brought up to the last change any process made to the files: each
        changed entry read again (gone: removed). A process that fell behind the changes kept
        drops its partitions, which then load afresh."""
        self._changes.catch_up(self._apply)

    def _apply(self, conn: sqlite3.Connection, changes: Changes) -> None:
        if changes is None:
            with self._lock:
                self._parts.clear()
            return
        with self._lock:
            parts = dict(self._parts)
        by_tenant: dict[str, dict[str, None]] = {}
        for tenant_id, experience_id in changes:
            if tenant_id in parts:  # one not loaded reads them all when it loads
                by_tenant.setdefault(tenant_id, {})[experience_id] = None
        for tenant_id, ids in by_tenant.items():
            self._reread(conn, parts[tenant_id], tenant_id, list(ids))

    def _reread(self, conn: sqlite3.Connection, part: _Partition, tenant_id: str, ids: list[str]) -> None:
        """The entries as the files hold them now: reading one again that the partition holds already
        changes nothing."""
        sql = "SELECT experience_id, vec, meta, terms FROM vectors WHERE tenant_id=? AND experience_id IN ({marks})"
        found = {r["experience_id"]: r for r in rows_in(conn, sql, (tenant_id,), ids)}
        key = terms_key(self.bm25.stemmer)
        with part.lock:
            for experience_id in ids:
                r = found.get(experience_id)
                if r is None:
                    part.remove(experience_id)
                    continue
                entry = _entry(r)
                kept, _, words = (r["terms"] or "").partition("\t")
                counts = Counter(words.split()) if kept == key else None
                part.put(entry, np.frombuffer(r["vec"], dtype=np.float32), counts)

    def _wrote(self, first: int, last: int) -> None:
        """After this process applied its own write (seqs ``first`` to ``last``, one tenant's) to
        that tenant's partition. Not under the partition's lock: ``_sync`` takes the two the other
        way round."""
        self._changes.wrote(first, last)

    def _load(self, tenant_id: str) -> _Partition:
        conn = self.db.read()
        (count,) = conn.execute("SELECT COUNT(*) FROM vectors WHERE tenant_id=?", (tenant_id,)).fetchone()
        missing: list[tuple[str, str | None, str]] = []
        try:
            part = self._load_rows(tenant_id, count, True, missing)
        except _StaleTerms:  # terms changed without a new TERMS_VERSION: every row is tokenized again
            missing.clear()
            part = self._load_rows(tenant_id, count, False, missing)
        self._store_terms(tenant_id, missing)
        return part

    def _load_rows(self, tenant_id: str, count: int, trust: bool, missing: list[tuple[str, str | None, str]]) -> _Partition:
        part = self._new_partition()
        part.grow(count)
        part.put_bulk(self._stream(tenant_id, part, count, trust, missing))
        if part.n >= _SIGNS_MIN_ROWS:  # made now, not in a first search
            part.sign_codes()
        return part

    def _stream(
        self, tenant_id: str, part: _Partition, count: int, trust: bool, missing: list[tuple[str, str | None, str]]
    ) -> Iterator[tuple[IndexEntry, Counter[str]]]:
        """The tenant's stored entries with their counted terms, in chunks: the rows' blobs and
        texts are never all in memory at once. Each chunk's vectors go straight into the partition's
        matrix. Terms stored under the current key are read, not made again (tokenizing is most of
        a load's time), a spread of them checked against ``terms``; the rows that had none stored
        (or under another key) are listed in ``missing`` with what they had and their terms."""
        key = terms_key(self.bm25.stemmer)
        spread = max(1, count // _CHECKED_ROWS)
        cursor = self.db.read().execute(
            "SELECT experience_id, vec, meta, terms FROM vectors WHERE tenant_id=? ORDER BY rowid", (tenant_id,)
        )
        start = 0
        while rows := cursor.fetchmany(2048):
            part.grow(start + len(rows))  # rows written since the count
            part.vecs[start : start + len(rows)] = np.frombuffer(
                b"".join(r["vec"] for r in rows), dtype=np.float32
            ).reshape(len(rows), self.dim)
            for n, r in enumerate(rows, start):
                entry = _entry(r)
                stored = r["terms"]
                kept, _, words = (stored or "").partition("\t")
                if trust and kept == key:
                    counts = Counter(words.split())
                    if (n < _CHECKED_ROWS or n % spread == 0) and counts != Counter(terms(entry.text, self.bm25.stemmer)):
                        raise _StaleTerms(entry.experience_id)
                else:
                    made = terms(entry.text, self.bm25.stemmer)
                    counts = Counter(made)
                    missing.append((entry.experience_id, stored, _stored(key, made)))
                yield entry, counts
            start += len(rows)

    def _store_terms(self, tenant_id: str, missing: list[tuple[str, str | None, str]]) -> None:
        """Keep the terms made at a load (experience id, the terms read, the terms made), so that the
        next load reads them. A row written since it was read (its terms are no longer those read)
        is left as its writer left it."""
        for start in range(0, len(missing), 4096):
            with self.db.write() as conn:
                conn.executemany(
                    "UPDATE vectors SET terms=? WHERE tenant_id=? AND experience_id=? AND terms IS ?",
                    [(made, tenant_id, experience_id, was) for experience_id, was, made in missing[start : start + 4096]],
                )

    def _checked(self, vector: np.ndarray) -> np.ndarray:
        vec = np.asarray(vector, dtype=np.float32).reshape(-1)
        if vec.shape[0] != self.dim:
            raise ValueError(f"vector has {vec.shape[0]} dimensions, the index {self.dim}")
        norm = float(np.linalg.norm(vec))
        return vec / norm if norm > 0 else vec

    def upsert(self, tenant_id: str, entries: Sequence[IndexEntry]) -> None:
        if not entries:
            return
        vecs = [self._checked(e.vector) for e in entries]
        words = [terms(e.text, self.bm25.stemmer) for e in entries]
        key = terms_key(self.bm25.stemmer)
        late = self._tokens.rows(tenant_id, entries)
        with self.db.write() as conn:
            conn.executemany(
                "INSERT OR REPLACE INTO vectors(tenant_id, experience_id, vec, meta, terms) VALUES (?,?,?,?,?)",
                [
                    (tenant_id, e.experience_id, v.tobytes(), dumps({
                        "agent_id": e.agent_id, "user_id": e.user_id, "tools": list(e.tools),
                        "task_type": e.task_type, "tags": list(e.tags), "text": e.text, "intent": e.intent,
                    }), _stored(key, w))
                    for e, v, w in zip(entries, vecs, words)
                ],
            )
            self._tokens.write(conn, tenant_id, entries, late)
            first, last = self._changes.record(conn, tenant_id, [e.experience_id for e in entries])
        part = self._partition(tenant_id)
        with part.lock:
            for e, v, w in zip(entries, vecs, words):
                part.put(e, v, Counter(w))
        self._wrote(first, last)

    def delete(self, tenant_id: str, experience_ids: Sequence[str]) -> None:
        if not experience_ids:
            return
        with self.db.write() as conn:
            conn.executemany(
                "DELETE FROM vectors WHERE tenant_id=? AND experience_id=?", [(tenant_id, i) for i in experience_ids]
            )
            self._tokens.delete(conn, tenant_id, experience_ids)
            first, last = self._changes.record(conn, tenant_id, experience_ids)
        part = self._partition(tenant_id)
        with part.lock:
            for i in experience_ids:
                part.remove(i)
        self._wrote(first, last)

    def purge_tenant(self, tenant_id: str, limit: int) -> int:
        """Entries go by ``delete`` (so the other processes drop them too); once none is left, the
        tenant's token vectors and its lines of the change log go, and its partition is let go."""
        rows = self.db.read().execute("SELECT experience_id FROM vectors WHERE tenant_id=? LIMIT ?", (tenant_id, limit))
        ids = [r[0] for r in rows]
        if ids:
            self.delete(tenant_id, ids)
            return len(ids)
        with self.db.write() as conn:
            conn.execute("DELETE FROM token_vectors WHERE tenant_id=?", (tenant_id,))
            conn.execute("DELETE FROM index_changes WHERE tenant_id=?", (tenant_id,))
        with self._lock:
            self._parts.pop(tenant_id, None)
        return 0

    def search(self, tenant_id: str, vector: np.ndarray, flt: IndexFilter, k: int) -> list[tuple[str, float]]:
        if k <= 0:
            return []
        self._sync()
        q = self._checked(vector)
        part = self._partition(tenant_id)
        with part.lock:
            if part.n == 0:
                return []
            return self._knn(part, q, part.mask(flt), k)

    def _knn(self, part: _Partition, q: np.ndarray, mask: np.ndarray, k: int) -> list[tuple[str, float]]:
        return knn(part, q, mask, k, self._cosines, signs_min_rows=_SIGNS_MIN_ROWS, rescore=_RESCORE,
                   rescore_share=_RESCORE_SHARE)

    def _cosines(self, part: _Partition, q: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
        """The cosine of ``q`` with every row, or with ``rows`` (in their order) (``search.RowProduct``)."""
        return self._product.cosines(part.vecs, part.n, q, rows, _ROWS_PER_THREAD, _GATHER_ROWS)

    def lexical_search(self, tenant_id: str, text: str, flt: IndexFilter, k: int) -> list[tuple[str, float]]:
        if k <= 0:
            return []
        self._sync()
        part = self._partition(tenant_id)
        with part.lock:
            if part.n == 0:
                return []
            return bm25_top(part, text, part.mask(flt), k)

    def similarities(self, tenant_id: str, vector: np.ndarray, experience_ids: Sequence[str]) -> dict[str, float]:
        self._sync()
        q = self._checked(vector)
        part = self._partition(tenant_id)
        with part.lock:
            found = [(i, part.pos[i]) for i in experience_ids if i in part.pos]
            if not found:
                return {}
            sims = part.vecs[[row for _, row in found]] @ q
        return {i: float(s) for (i, _), s in zip(found, sims)}

    def hybrid_search(
        self, tenant_id: str, vector: np.ndarray, text: str, flt: IndexFilter, k: int
    ) -> tuple[dict[str, float], dict[str, float]]:
        """``hybrid_by_parts``'s answer, with the filter's mask computed once for both searches."""
        if k <= 0:
            return {}, {}
        self._sync()
        q = self._checked(vector)
        part = self._partition(tenant_id)
        with part.lock:
            if part.n == 0:
                return {}, {}
            mask = part.mask(flt)
            semantic = dict(self._knn(part, q, mask, k))
            lexical = dict(bm25_top(part, text, mask, k))
            missing = [i for i in lexical if i not in semantic]
            if missing:
                sims = part.vecs[[part.pos[i] for i in missing]] @ q
                semantic.update((i, float(s)) for i, s in zip(missing, sims))
        return semantic, lexical

    def token_vectors(self, tenant_id: str, keys: Mapping[str, str]) -> dict[str, np.ndarray]:
        return self._tokens.of_entries(tenant_id, keys)

    def token_vectors_of_texts(self, tenant_id: str, keys: Iterable[str]) -> dict[str, np.ndarray]:
        return self._tokens.of_texts(tenant_id, keys)

    def count(self, tenant_id: str) -> int:
        self._sync()
        return len(self._partition(tenant_id).pos)

    def warm(self) -> int:
        """Load every tenant's partition now (server start-up), not on its first recall."""
        tenants = [r["tenant_id"] for r in self.db.read().execute("SELECT DISTINCT tenant_id FROM vectors")]
        for tenant_id in tenants:
            self._partition(tenant_id)
        return len(tenants)
