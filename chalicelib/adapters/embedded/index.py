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
"""
from __future__ import annotations

import json
import threading
import time
from array import array
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Iterable, Iterator, Mapping, Sequence

import numpy as np

from chalicelib.adapters.embedded.db import SqliteDatabase, dumps, rows_in
from chalicelib.adapters.embedded.sign_codes import SignCodes
from chalicelib.domain.lexical import Bm25Params, idf, terms, terms_key
from chalicelib.domain.models import match_key, match_keys
from chalicelib.ports import IndexEntry, IndexFilter

_ROWS_PER_THREAD = 16384  # below this many rows a thread is not worth waking for a block
_GATHER_ROWS = 8192  # listed rows copied at a time: 12 MB at 384 dimensions, a few BLAS calls
# from this many rows a k-NN search first ranks the rows its filter leaves by their sign codes
# (``sign_codes``: 1 bit a dimension, a 32nd of the bytes float32 reads), then scores the nearest in
# float32: at least ``_RESCORE`` x k of them and 1/``_RESCORE_SHARE`` of the rows ranked
_SIGNS_MIN_ROWS = 16384
_RESCORE, _RESCORE_SHARE = 40, 25
_NO_ROWS = np.zeros(0, dtype=np.int32)
_NO_TFS = np.zeros(0, dtype=np.float32)
# postings whose BM25 shares a partition keeps between writes, for the terms queries used first; a
# write empties them. 8 bytes each: at most 16 MB per partition
_TERM_CACHE_POSTINGS = 1 << 21
# a term held by at least this share of the rows keeps its shares as one vector over every row (4 bytes
# a row, counted as half a posting; 0 where the term is not): added in one pass, where scattering each
# share to its row costs several times more per share
_DENSE_SHARE = 1 / 8
_CHECKED_ROWS = 64  # stored terms compared with a fresh tokenization at each load: the first rows and a spread
# changes kept in ``index_changes`` for the other processes on the same files (``NumpyVectorIndex._sync``);
# one that has fallen further behind loads its partitions again
_CHANGES_KEPT = 100_000
_PRUNE_EVERY = 1024  # a writer prunes the log when its seq passes a multiple of this


def _packed(vectors: np.ndarray, dim: int) -> bytes:
    """Token vectors as the index keeps them: per row a float32 scale, then the row in int8 (388
    bytes a token at 384 dimensions, a quarter of float32; a unit row's cosines move by ~1e-3)."""
    v = np.asarray(vectors, dtype=np.float32).reshape(-1, dim)
    scale = np.abs(v).max(axis=1) / 127
    scale = np.where(scale > 0, scale, 1).astype(np.float32)
    return scale.tobytes() + np.rint(v / scale[:, None]).astype(np.int8).tobytes()


def _unpacked(blob: bytes, dim: int) -> np.ndarray:
    """``_packed``'s rows again, as float32 unit rows."""
    n = len(blob) // (dim + 4)
    scale = np.frombuffer(blob, np.float32, n)
    v = np.frombuffer(blob, np.int8, n * dim, 4 * n).reshape(n, dim) * scale[:, None]
    v /= np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)
    return v


class _StaleTerms(Exception):
    """A row's stored terms are not what ``terms`` makes of its text now, under the same key."""


def _stored(key: str, words: list[str]) -> str:
    """A row's terms as the vectors table keeps them: the key they were made under, a tab, the terms."""
    return f"{key}\t{' '.join(words)}"


class _Postings:
    """BM25 postings of one partition, compact: a base built in bulk (every posting of a term in one
    slice of two flat arrays, and every term of a row in one slice of a third), plus the rows
    written since, in dicts, folded into a new base once there are many of them.

    Per posting the base holds 12 bytes (row, term frequency, and the term id by row, to unlink a
    row); dicts and Counters per row cost about 20 times that at 100k lessons.
    """

    REBUILD_MIN = 4096  # recent rows kept in dicts before a rebuild, at least (or an eighth of the rows)

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}
        self.df = np.zeros(0, dtype=np.int64)  # live rows holding each term: BM25's document frequency
        self.off = np.zeros(1, dtype=np.int64)  # base: term t's postings are rows/tfs[off[t]:off[t+1]]
        self.rows, self.tfs = _NO_ROWS, _NO_TFS
        self.row_off = np.zeros(1, dtype=np.int64)  # base: row r's term ids are row_terms[row_off[r]:row_off[r+1]]
        self.row_terms = _NO_ROWS
        self.in_base = np.zeros(0, dtype=bool)  # the row's base postings are its current ones
        self.stale = np.zeros(0, dtype=np.int64)  # per term: base postings no longer current
        self.delta: dict[int, dict[int, int]] = {}  # term -> row -> tf, rows written since the base
        self.delta_rows: dict[int, np.ndarray] = {}  # row -> its term ids, for those rows

    def _term_ids(self, counts: dict[str, int]) -> list[int]:
        ids = self.ids
        out = [ids.setdefault(term, len(ids)) for term in counts]
        if len(ids) > len(self.df):
            grow = max(len(ids), 2 * len(self.df), 64) - len(self.df)
            self.df = np.concatenate([self.df, np.zeros(grow, np.int64)])
            self.stale = np.concatenate([self.stale, np.zeros(grow, np.int64)])
        return out

    def add(self, row: int, counts: dict[str, int], n_rows: int) -> None:
        """The row's terms (the row holds none now)."""
        tids = self._term_ids(counts)
        for t, tf in zip(tids, counts.values()):
            self.delta.setdefault(t, {})[row] = tf
        self.df[tids] += 1  # a row's term ids are distinct
        self.delta_rows[row] = np.array(tids, dtype=np.int32)  # an array: nothing for the garbage collector
        if len(self.delta_rows) > max(self.REBUILD_MIN, n_rows // 8):
            self.rebuild(n_rows)

    def remove(self, row: int) -> None:
        tids = self.delta_rows.pop(row, None)
        if tids is not None:
            for t in tids.tolist():
                d = self.delta[t]
                del d[row]
                if not d:
                    del self.delta[t]
            self.df[tids] -= 1
        elif row < len(self.in_base) and self.in_base[row]:
            base = self.row_terms[self.row_off[row] : self.row_off[row + 1]]
            self.df[base] -= 1
            self.stale[base] += 1
            self.in_base[row] = False

    def postings(self, term: str) -> tuple[np.ndarray, np.ndarray] | None:
        """(rows, term frequencies) of the live rows holding the term, or None."""
        t = self.ids.get(term)
        if t is None or not self.df[t]:
            return None
        rows, tfs = _NO_ROWS, _NO_TFS
        if t + 1 < len(self.off):
            lo, hi = self.off[t], self.off[t + 1]
            rows, tfs = self.rows[lo:hi], self.tfs[lo:hi]
            if self.stale[t]:
                keep = self.in_base[rows]
                rows, tfs = rows[keep], tfs[keep]
        recent = self.delta.get(t)
        if recent:
            rows = np.concatenate([rows, np.fromiter(recent, dtype=np.int32, count=len(recent))])
            tfs = np.concatenate([tfs, np.fromiter(recent.values(), dtype=np.float32, count=len(recent))])
        return rows, tfs

    def rebuild(self, n_rows: int) -> None:
        """Fold the recent rows into a new base, leaving out postings no longer current."""
        nt = len(self.off) - 1
        base_terms = np.repeat(np.arange(nt, dtype=np.int32), np.diff(self.off))
        keep = self.in_base[self.rows] if len(self.rows) else np.zeros(0, dtype=bool)
        n_recent = sum(len(d) for d in self.delta.values())
        d_terms = np.empty(n_recent, dtype=np.int32)
        d_rows = np.empty(n_recent, dtype=np.int32)
        d_tfs = np.empty(n_recent, dtype=np.float32)
        i = 0
        for t, d in self.delta.items():
            j = i + len(d)
            d_terms[i:j] = t
            d_rows[i:j] = np.fromiter(d, dtype=np.int32, count=len(d))
            d_tfs[i:j] = np.fromiter(d.values(), dtype=np.float32, count=len(d))
            i = j
        live = np.zeros(n_rows, dtype=bool)
        live[: len(self.in_base)] = self.in_base[:n_rows]
        live[list(self.delta_rows)] = True
        self.build(
            np.concatenate([base_terms[keep], d_terms]), np.concatenate([self.rows[keep], d_rows]),
            np.concatenate([self.tfs[keep], d_tfs]), live,
        )

    def build(self, term_ids: np.ndarray, rows: np.ndarray, tfs: np.ndarray, live: np.ndarray) -> None:
        """A new base of these postings; ``live``: the rows whose postings these are (all of them)."""
        n_terms, n_rows = len(self.ids), len(live)
        by_term = np.argsort(term_ids, kind="stable")
        self.off = np.zeros(n_terms + 1, dtype=np.int64)
        np.cumsum(np.bincount(term_ids, minlength=n_terms), out=self.off[1:])
        self.rows, self.tfs = rows[by_term].astype(np.int32), tfs[by_term].astype(np.float32)
        by_row = np.argsort(rows, kind="stable")
        self.row_off = np.zeros(n_rows + 1, dtype=np.int64)
        np.cumsum(np.bincount(rows, minlength=n_rows), out=self.row_off[1:])
        self.row_terms = term_ids[by_row].astype(np.int32)
        self.in_base = live.copy()
        self.stale = np.zeros(len(self.df), dtype=np.int64)
        self.delta, self.delta_rows = {}, {}


class _Partition:
    def __init__(self, dim: int, bm25: Bm25Params) -> None:
        self.dim = dim
        self.bm25_params = bm25
        self.n = 0
        # Per-row objects live in object arrays, which the cyclic garbage collector does not walk: in
        # lists, every full collection visited each of the 1e5 ids and tool sets (about 40 ms).
        self.ids = np.zeros(0, dtype=object)  # the experience id of each row, None once removed
        self.pos: dict[str, int] = {}
        self.vecs = np.zeros((0, dim), dtype=np.float32)
        self.signs: SignCodes | None = None  # the rows' sign codes, once a search wanted them
        self.alive = np.zeros(0, dtype=bool)
        self.agent = np.zeros(0, dtype=np.int32)  # 0 = shared (no agent)
        self.user = np.zeros(0, dtype=np.int32)
        self.task = np.zeros(0, dtype=np.int32)  # 0 = any task type
        self.intent = np.zeros(0, dtype=np.int32)  # 0 = any intent
        self.doc_len = np.zeros(0, dtype=np.float32)
        self.has_tools = np.zeros(0, dtype=bool)
        self.row_tools = np.zeros(0, dtype=object)  # frozenset[str] per row
        self.tool_rows: dict[str, dict[int, None]] = {}  # rows by tool: dicts of ints, which the collector skips
        self._tool_arrays: dict[str, np.ndarray] = {}  # tool_rows as arrays, until the tool's rows change
        self._interned: dict[frozenset[str], frozenset[str]] = {}  # one frozenset per distinct tool set
        self.postings = _Postings()
        self._len_norm: np.ndarray | None = None  # BM25's length normalisation per row, until a write
        # each term's rows and their share of the BM25 score, as a query made them, until a write: the
        # common words of queries are most of a search's arithmetic and come back in query after query
        self._term_scores: dict[str, tuple[np.ndarray | None, np.ndarray]] = {}
        self._term_postings = 0  # postings held in _term_scores, at most _TERM_CACHE_POSTINGS
        self.codes: dict[str, int] = {}
        self.total_len = 0  # an exact count of terms: it stays exact however rows come and go
        self.live = 0
        # a tenant's searches and writes take its partition's lock: another tenant's never wait on it
        self.lock = threading.RLock()
        self.used = 0.0  # when a search or write last took it (``NumpyVectorIndex.idle_seconds``)

    def sign_codes(self) -> SignCodes:
        """The rows' sign codes (``sign_codes``), made now if there are none."""
        if self.signs is None:
            self.signs = SignCodes(self.vecs, self.n)
        return self.signs

    def code(self, value: str | None, create: bool) -> int:
        if value is None:
            return 0
        c = self.codes.get(value)
        if c is None:
            if not create:
                return -1  # matches no row
            c = self.codes[value] = len(self.codes) + 1
        return c

    def _grow(self, need: int) -> None:
        cap = len(self.alive)
        if need <= cap:
            return
        new = max(need, cap * 2, 64)
        vecs = np.zeros((new, self.dim), np.float32)
        vecs[:cap] = self.vecs
        self.vecs = vecs
        if self.signs is not None:
            self.signs.grow(new)
        for name, dtype in (("alive", bool), ("agent", np.int32), ("user", np.int32), ("task", np.int32),
                            ("intent", np.int32), ("doc_len", np.float32), ("has_tools", bool), ("ids", object),
                            ("row_tools", object)):
            more = np.empty(new - cap, dtype) if dtype is object else np.zeros(new - cap, dtype)  # None, or zeros
            setattr(self, name, np.concatenate([getattr(self, name), more]))

    def _place(self, entry: IndexEntry) -> int:
        """The entry's row, emptied (a new one at the end for a new id), with its filter codes set."""
        row = self.pos.get(entry.experience_id)
        if row is not None:
            self._unlink(row)
        else:
            row = self.n
            self._grow(row + 1)
            self.n += 1
            self.ids[row] = entry.experience_id
            self.pos[entry.experience_id] = row
        self.alive[row] = True
        self.live += 1
        self.agent[row] = self.code(entry.agent_id, True)
        self.user[row] = self.code(entry.user_id, True)
        self.task[row] = self.code(match_key(entry.task_type), True)
        self.intent[row] = self.code(match_key(entry.intent), True)
        tools = frozenset(match_keys(entry.tools))
        tools = self._interned.setdefault(tools, tools)
        self.has_tools[row] = bool(tools)
        self.row_tools[row] = tools
        for t in tools:
            self.tool_rows.setdefault(t, {})[row] = None
            self._tool_arrays.pop(t, None)
        self._written()
        return row

    def put(self, entry: IndexEntry, vec: np.ndarray | None, counts: Counter[str] | None = None) -> None:
        """``counts``: the terms of the entry's text, counted, when the caller has them already."""
        row = self._place(entry)
        if vec is not None:
            self.vecs[row] = vec
            if self.signs is not None:
                self.signs.set(row, vec)
        if counts is None:
            counts = Counter(terms(entry.text, self.bm25_params.stemmer))
        self._set_len(row, sum(counts.values()))
        self.postings.add(row, counts, self.n)

    def put_bulk(self, entries: Iterable[tuple[IndexEntry, Counter[str] | None]]) -> None:
        """``put`` of the entries of an empty partition, in rows 0.. (their vectors in place already),
        with one build of the postings. Entries (each with its counted terms, or None to tokenize
        its text) are taken one at a time and only their postings kept."""
        if self.n:
            raise ValueError("put_bulk fills an empty partition")
        term_ids, rows, tfs = array("i"), array("i"), array("f")
        for entry, counts in entries:
            if entry.experience_id in self.pos:
                raise ValueError(f"put_bulk: {entry.experience_id} twice")
            row = self._place(entry)
            if counts is None:
                counts = Counter(terms(entry.text, self.bm25_params.stemmer))
            self._set_len(row, sum(counts.values()))
            term_ids.extend(self.postings._term_ids(counts))
            rows.extend([row] * len(counts))
            tfs.extend(counts.values())
        ids = np.frombuffer(term_ids, dtype=np.int32) if term_ids else _NO_ROWS
        np.add.at(self.postings.df, ids, 1)
        self.postings.build(ids, np.frombuffer(rows, dtype=np.int32) if rows else _NO_ROWS,
                            np.frombuffer(tfs, dtype=np.float32) if tfs else _NO_TFS, self.alive[: self.n])

    def _set_len(self, row: int, length: int) -> None:
        self.doc_len[row] = length
        self.total_len += length

    def _unlink(self, row: int) -> None:
        if self.alive[row]:
            self.live -= 1
            self.total_len -= int(self.doc_len[row])
        for t in self.row_tools[row]:
            self.tool_rows[t].pop(row, None)
            self._tool_arrays.pop(t, None)
        self.postings.remove(row)
        self.row_tools[row] = frozenset()
        self.alive[row] = False
        self.doc_len[row] = 0
        self._written()

    def remove(self, experience_id: str) -> None:
        row = self.pos.pop(experience_id, None)
        if row is not None:
            self._unlink(row)
            self.ids[row] = None

    def _tool(self, tool: str) -> np.ndarray | None:
        rows = self._tool_arrays.get(tool)
        if rows is None:
            source = self.tool_rows.get(tool)
            if not source:
                return None
            rows = self._tool_arrays[tool] = np.fromiter(source, dtype=np.int64, count=len(source))
        return rows

    def mask(self, flt: IndexFilter) -> np.ndarray:
        n = self.n
        m = self.alive[:n].copy()
        m &= (self.agent[:n] == 0) | (self.agent[:n] == self.code(flt.agent_id, False))
        m &= (self.user[:n] == 0) | (self.user[:n] == self.code(flt.user_id, False))
        if match_key(flt.task_type):
            m &= (self.task[:n] == 0) | (self.task[:n] == self.code(match_key(flt.task_type), False))
        if match_key(flt.intent):
            m &= (self.intent[:n] == 0) | (self.intent[:n] == self.code(match_key(flt.intent), False))
        if flt.tools:
            tool_ok = ~self.has_tools[:n]
            for t in match_keys(flt.tools):
                found = self._tool(t)
                if found is not None:
                    tool_ok[found] = True
            m &= tool_ok
        return m

    def _written(self) -> None:
        """A row changed: the length normalisation and every term's scores are made again."""
        self._len_norm = None
        if self._term_postings:
            self._term_scores, self._term_postings = {}, 0

    def _term_score(self, term: str, len_norm: np.ndarray) -> tuple[np.ndarray | None, np.ndarray] | None:
        """(rows, their BM25 score for the term) of the live rows holding it, or None; (None, the
        score of every row, 0 where the term is not) for a term that many rows hold."""
        cached = self._term_scores.get(term)
        if cached is not None:
            return cached
        found = self.postings.postings(term)
        if found is None:
            return None
        rows, tfs = found
        norm = tfs + len_norm[rows]
        shares = idf(len(rows), self.live) * tfs * (self.bm25_params.k1 + 1) / norm
        made: tuple[np.ndarray | None, np.ndarray] = rows, shares
        size = len(rows)
        # dense only when it is kept: made for one query, it would cost more than the scatter it saves
        if len(rows) >= self.n * _DENSE_SHARE and self._term_postings + self.n // 2 <= _TERM_CACHE_POSTINGS:
            dense = np.zeros(self.n, dtype=shares.dtype)
            dense[rows] = shares
            made, size = (None, dense), self.n // 2
        if self._term_postings + size <= _TERM_CACHE_POSTINGS:
            self._term_scores[term] = made
            self._term_postings += size
        return made

    def bm25(self, query: str) -> np.ndarray:
        scores = np.zeros(self.n, dtype=np.float32)
        if not self.live:
            return scores
        if self._len_norm is None:
            # float32 throughout, as the per-term arithmetic below; the same values whether computed
            # for every row once or for each term's rows
            avg_len = np.float32(self.total_len) / np.float32(self.live)
            k1, b = self.bm25_params.k1, self.bm25_params.b
            self._len_norm = k1 * (1 - b + b * self.doc_len[: self.n] / max(avg_len, 1e-9))
        len_norm = self._len_norm
        # in the order the query names them: a float32 sum in set order would differ between processes
        for term in dict.fromkeys(terms(query, self.bm25_params.stemmer)):
            found = self._term_score(term, len_norm)
            if found is not None:
                rows, share = found
                if rows is None:
                    scores += share  # x + 0 is x: the rows without the term keep their score exactly
                else:
                    scores[rows] += share
        return scores


def _entry(row) -> IndexEntry:
    """A stored row's entry, without its vector."""
    m = json.loads(row["meta"])
    # rows written before intents were indexed have none: they fit any intent
    return IndexEntry(
        row["experience_id"], None, m.get("agent_id"), m.get("user_id"), tuple(m.get("tools", ())),
        m.get("task_type"), tuple(m.get("tags", ())), m.get("text", ""), m.get("intent"),
    )


def _top(ids: np.ndarray, candidates: np.ndarray | None, scores: np.ndarray, k: int) -> list[tuple[str, float]]:
    """The k best (id, score), best first; ``candidates``: the row of each score (None: score i is
    row i's). Called under the partition's lock: ``ids`` is read, not copied."""
    if scores.size == 0:
        return []
    if scores.size > k:
        top = np.argpartition(-scores, k - 1)[:k]
        candidates, scores = (top if candidates is None else candidates[top]), scores[top]
    elif candidates is None:
        candidates = np.arange(scores.size)
    order = np.argsort(-scores, kind="stable")
    return [(ids[candidates[i]], float(scores[i])) for i in order]


class NumpyVectorIndex:
    """Implements ``ports.VectorIndex`` and ``ports.TokenVectorIndex``. Writes go to SQLite first,
    then to memory. Token vectors stay in SQLite only (``token_vectors``, int8): a recall reads its
    leading candidates' in one query, where 100k lessons' would take gigabytes of memory.

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
        self._lock = threading.RLock()  # the partitions' and loads' maps and the pool; each partition has its own
        self._threads = max(1, threads)
        self.bm25 = bm25
        self._pool: ThreadPoolExecutor | None = None
        self._sync_lock = threading.Lock()
        # every loaded partition holds each change up to this seq of ``index_changes`` (``_sync``);
        # read before any partition loads: what loads after holds it
        self._seen = self._last_change()
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
                    synced = self._last_change()  # before its rows are read: any change after it is read again
                    part = self._load(tenant_id)
                    with self._lock:
                        self._parts[tenant_id] = part
                        del self._loading[tenant_id]
                    with self._sync_lock:  # changes made while it loaded are read again (for every partition)
                        self._seen = min(self._seen, synced)
        part.used = now
        return part

    def _last_change(self) -> int:
        row = self.db.read().execute("SELECT seq FROM index_changes ORDER BY seq DESC LIMIT 1").fetchone()
        return int(row[0]) if row else 0

    def _sync(self) -> None:
        """The loaded partitions brought up to the last change any process made to the files: each
        changed entry read again (gone: removed). A process that fell behind the changes kept
        drops its partitions, which then load afresh."""
        if self._last_change() <= self._seen:
            return
        with self._sync_lock:
            since = self._seen
            conn = self.db.read()
            changes = conn.execute(
                "SELECT seq, tenant_id, experience_id FROM index_changes WHERE seq > ? ORDER BY seq", (since,)
            ).fetchall()
            if not changes:
                return
            if changes[0][0] != since + 1:  # pruned past us: what was changed is not known
                with self._lock:
                    self._parts.clear()
                self._seen = changes[-1][0]
                return
            with self._lock:
                parts = dict(self._parts)
            by_tenant: dict[str, dict[str, None]] = {}
            for _, tenant_id, experience_id in changes:
                if tenant_id in parts:  # one not loaded reads them all when it loads
                    by_tenant.setdefault(tenant_id, {})[experience_id] = None
            for tenant_id, ids in by_tenant.items():
                self._reread(conn, parts[tenant_id], tenant_id, list(ids))
            self._seen = changes[-1][0]

    def _reread(self, conn, part: _Partition, tenant_id: str, ids: list[str]) -> None:
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

    @staticmethod
    def _log_changes(conn, tenant_id: str, experience_ids: Iterable[str]) -> tuple[int, int]:
        """List the written entries in ``index_changes`` (in the write's transaction); the seqs
        they got, first and last. The log is pruned to the last ``_CHANGES_KEPT``."""
        rows = [(tenant_id, i) for i in experience_ids]
        conn.executemany("INSERT INTO index_changes(tenant_id, experience_id) VALUES (?,?)", rows)
        # one writer at a time: the write's rows have consecutive seqs, ending at the last one inserted
        (last,) = conn.execute("SELECT last_insert_rowid()").fetchone()
        first = last - len(rows) + 1
        if (first - 1) // _PRUNE_EVERY != last // _PRUNE_EVERY:
            conn.execute("DELETE FROM index_changes WHERE seq <= ?", (last - _CHANGES_KEPT,))
        return first, last

    def _wrote(self, first: int, last: int) -> None:
        """After this process applied its own write (seqs ``first`` to ``last``, one tenant's) to
        that tenant's partition: when nothing else was written since what every partition holds,
        the log's entries of the write need not be read again. Not under the partition's lock:
        ``_sync`` takes the two the other way round."""
        with self._sync_lock:
            if self._seen == first - 1:
                self._seen = last

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

    def _load_rows(self, tenant_id: str, count: int, trust: bool, missing: list) -> _Partition:
        part = _Partition(self.dim, self.bm25)
        part._grow(count)
        part.put_bulk(self._stream(tenant_id, part, count, trust, missing))
        if part.n >= _SIGNS_MIN_ROWS:  # made now, not in a first search
            part.sign_codes()
        return part

    def _stream(
        self, tenant_id: str, part: _Partition, count: int, trust: bool, missing: list
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
            part._grow(start + len(rows))  # rows written since the count
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
        late = [(tenant_id, e.experience_id, e.late.key, _packed(e.late.vectors, self.dim)) for e in entries if e.late]
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
            # an entry's token vectors are written with it: one written without them keeps none
            conn.executemany(
                "DELETE FROM token_vectors WHERE tenant_id=? AND experience_id=?",
                [(tenant_id, e.experience_id) for e in entries if not e.late],
            )
            conn.executemany(
                "INSERT OR REPLACE INTO token_vectors(tenant_id, experience_id, text_key, vecs) VALUES (?,?,?,?)", late
            )
            first, last = self._log_changes(conn, tenant_id, [e.experience_id for e in entries])
        part = self._partition(tenant_id)
        with part.lock:
            for e, v, w in zip(entries, vecs, words):
                part.put(e, v, Counter(w))
        self._wrote(first, last)

    def delete(self, tenant_id: str, experience_ids: Sequence[str]) -> None:
        if not experience_ids:
            return
        with self.db.write() as conn:
            for table in ("vectors", "token_vectors"):
                conn.executemany(
                    f"DELETE FROM {table} WHERE tenant_id=? AND experience_id=?", [(tenant_id, i) for i in experience_ids]
                )
            first, last = self._log_changes(conn, tenant_id, experience_ids)
        part = self._partition(tenant_id)
        with part.lock:
            for i in experience_ids:
                part.remove(i)
        self._wrote(first, last)

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
        # None: no row filtered out, every row's score as the product gives it, no list of rows
        candidates = None if mask.all() else np.flatnonzero(mask)
        count = part.n if candidates is None else candidates.size
        keep = max(k * _RESCORE, count // _RESCORE_SHARE)
        if part.n >= _SIGNS_MIN_ROWS and count > 2 * keep:
            # every row the filter leaves ranked by its sign code, the nearest few scored in float32
            rows = part.sign_codes().nearest(q, part.n, candidates, keep)
            if rows.size * 2 <= count:  # not when codes too alike to tell rows apart tie past half
                return _top(part.ids, rows, self._cosines(part, q, rows), k)
        if candidates is not None and count * 4 < part.n:
            # the candidates' rows alone when they are few enough to be cheaper than every row
            return _top(part.ids, candidates, self._cosines(part, q, candidates), k)
        if candidates is None:
            return _top(part.ids, None, self._cosines(part, q), k)
        return _top(part.ids, candidates, self._cosines(part, q)[candidates], k)

    @staticmethod
    def _bm25_top(part: _Partition, text: str, mask: np.ndarray, k: int) -> list[tuple[str, float]]:
        scores = part.bm25(text)
        candidates = np.flatnonzero(mask & (scores > 0))
        return _top(part.ids, candidates, scores[candidates], k)

    def _cosines(self, part: _Partition, q: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
        """The cosine of ``q`` with every row, or with ``rows`` (in their order), into one output:
        contiguous blocks, one per thread, each row's dot product computed alone (so blocks give the
        scores one product gives). Listed rows are copied a few thousand at a time, never all."""
        vecs = part.vecs
        n = part.n if rows is None else len(rows)
        out = np.empty(n, dtype=np.float32)

        def block(lo: int, hi: int) -> None:
            if rows is None:
                np.matmul(vecs[lo:hi], q, out=out[lo:hi])
                return
            for start in range(lo, hi, _GATHER_ROWS):
                end = min(start + _GATHER_ROWS, hi)
                np.matmul(vecs[rows[start:end]], q, out=out[start:end])

        blocks = min(self._threads, n // _ROWS_PER_THREAD)
        if blocks < 2:
            block(0, n)
            return out
        if self._pool is None:
            with self._lock:
                if self._pool is None:
                    self._pool = ThreadPoolExecutor(self._threads - 1, thread_name_prefix="hindsight-index")
        edges = [n * i // blocks // 64 * 64 for i in range(blocks)] + [n]
        pending = [self._pool.submit(block, lo, hi) for lo, hi in zip(edges[1:-1], edges[2:])]
        block(0, edges[1])
        for done in pending:
            done.result()
        return out

    def lexical_search(self, tenant_id: str, text: str, flt: IndexFilter, k: int) -> list[tuple[str, float]]:
        if k <= 0:
            return []
        self._sync()
        part = self._partition(tenant_id)
        with part.lock:
            if part.n == 0:
                return []
            return self._bm25_top(part, text, part.mask(flt), k)

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
            lexical = dict(self._bm25_top(part, text, mask, k))
            missing = [i for i in lexical if i not in semantic]
            if missing:
                sims = part.vecs[[part.pos[i] for i in missing]] @ q
                semantic.update((i, float(s)) for i, s in zip(missing, sims))
        return semantic, lexical

    def token_vectors(self, tenant_id: str, keys: Mapping[str, str]) -> dict[str, np.ndarray]:
        sql = "SELECT experience_id, text_key, vecs FROM token_vectors WHERE tenant_id=? AND experience_id IN ({marks})"
        rows = self.db.read_in(sql, (tenant_id,), keys)
        return {i: _unpacked(blob, self.dim) for i, key, blob in rows if keys[i] == key}

    def token_vectors_of_texts(self, tenant_id: str, keys: Iterable[str]) -> dict[str, np.ndarray]:
        # one row of each text, chosen on the (tenant_id, text_key) index alone: a text that many of
        # the tenant's entries hold (a lesson in several scopes) has one blob read, not each entry's
        sql = (
            "SELECT text_key, vecs FROM token_vectors WHERE rowid IN (SELECT MIN(rowid) FROM token_vectors"
            " WHERE tenant_id=? AND text_key IN ({marks}) GROUP BY text_key)"
        )
        return {key: _unpacked(blob, self.dim) for key, blob in rows_in(self.db.read(), sql, (tenant_id,), keys)}

    def count(self, tenant_id: str) -> int:
        self._sync()
        return len(self._partition(tenant_id).pos)

    def warm(self) -> int:
        """Load every tenant's partition now (server start-up), not on its first recall."""
        tenants = [r["tenant_id"] for r in self.db.read().execute("SELECT DISTINCT tenant_id FROM vectors")]
        for tenant_id in tenants:
            self._partition(tenant_id)
        return len(tenants)
