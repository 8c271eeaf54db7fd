"""BM25 over one partition of the embedded index: its postings, compact (``Postings``), and the
rows' lengths and scores (``Bm25Rows``), each query term's scores kept between writes."""
from __future__ import annotations

from array import array
from typing import Callable, Iterable

import numpy as np

from chalicelib.domain.lexical import Bm25Params, idf

NO_ROWS: np.ndarray = np.zeros(0, dtype=np.int32)
NO_TFS: np.ndarray = np.zeros(0, dtype=np.float32)
# postings whose BM25 shares a partition keeps between writes, for the terms queries used first; a
# write empties them. 8 bytes each: at most 16 MB per partition
TERM_CACHE_POSTINGS = 1 << 21
# a term held by at least this share of the rows keeps its shares as one vector over every row (4 bytes
# a row, counted as half a posting; 0 where the term is not): added in one pass, where scattering each
# share to its row costs several times more per share
DENSE_SHARE = 1 / 8

Tokenizer = Callable[[str, str], list[str]]


class Postings:
    """BM25 postings of one partition, compact: a base built in bulk (every posting of a term in one
    slice of two flat arrays, and every term of a row in one slice of a third), plus the rows
    written since, in dicts, folded into a new base once there are many of them.

    Per posting the base holds 12 bytes (row, term frequency, and the term id by row, to unlink a
    row); dicts and Counters per row cost about 20 times that at 100k lessons.
    """

    REBUILD_MIN = 4096  # recent rows kept in dicts before a rebuild, at least (or an eighth of the rows)

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}
        self.df: np.ndarray = np.zeros(0, dtype=np.int64)  # live rows holding each term: BM25's document frequency
        self.off: np.ndarray = np.zeros(1, dtype=np.int64)  # base: term t's postings are rows/tfs[off[t]:off[t+1]]
        self.rows: np.ndarray = NO_ROWS
        self.tfs: np.ndarray = NO_TFS
        self.row_off: np.ndarray = np.zeros(1, dtype=np.int64)  # base: row r's term ids are row_terms[row_off[r]:row_off[r+1]]
        self.row_terms: np.ndarray = NO_ROWS
        self.in_base: np.ndarray = np.zeros(0, dtype=bool)  # the row's base postings are its current ones
        self.stale: np.ndarray = np.zeros(0, dtype=np.int64)  # per term: base postings no longer current
        self.delta: dict[int, dict[int, int]] = {}  # term -> row -> tf, rows written since the base
        self.delta_rows: dict[int, np.ndarray] = {}  # row -> its term ids, for those rows

    def term_ids(self, counts: Iterable[str]) -> list[int]:
        """The ids of these terms, new ones given the next ids."""
        ids = self.ids
        out = [ids.setdefault(term, len(ids)) for term in counts]
        if len(ids) > len(self.df):
            grow = max(len(ids), 2 * len(self.df), 64) - len(self.df)
            self.df = np.concatenate([self.df, np.zeros(grow, np.int64)])
            self.stale = np.concatenate([self.stale, np.zeros(grow, np.int64)])
        return out

    def add(self, row: int, counts: dict[str, int], n_rows: int) -> None:
        """The row's terms (the row holds none now)."""
        tids = self.term_ids(counts)
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
        rows, tfs = NO_ROWS, NO_TFS
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


class BulkPostings:
    """The postings of rows put in bulk into an empty ``Bm25Rows``, gathered flat, built once."""

    def __init__(self, rows: Bm25Rows) -> None:
        self._into = rows
        self.term_ids, self.rows, self.tfs = array("i"), array("i"), array("f")

    def add(self, row: int, counts: dict[str, int]) -> None:
        self._into.set_len(row, sum(counts.values()))
        self.term_ids.extend(self._into.postings.term_ids(counts))
        self.rows.extend([row] * len(counts))
        self.tfs.extend(counts.values())

    def build(self, live: np.ndarray) -> None:
        """``live``: every row put, all of them live."""
        postings = self._into.postings
        ids = np.frombuffer(self.term_ids, dtype=np.int32) if self.term_ids else NO_ROWS
        np.add.at(postings.df, ids, 1)
        postings.build(ids, np.frombuffer(self.rows, dtype=np.int32) if self.rows else NO_ROWS,
                       np.frombuffer(self.tfs, dtype=np.float32) if self.tfs else NO_TFS, live)


class Bm25Rows:
    """BM25 over the rows of one partition: their postings and lengths, the length normalisation
    per row and each query term's scores kept until a write. The partition says how many rows it
    has (``n``) and how many are live."""

    def __init__(self, params: Bm25Params, cache_postings: int = TERM_CACHE_POSTINGS, dense_share: float = DENSE_SHARE) -> None:
        self.params = params
        self.cache_postings, self.dense_share = cache_postings, dense_share
        self.postings = Postings()
        self.doc_len: np.ndarray = np.zeros(0, dtype=np.float32)
        self.total_len = 0  # an exact count of terms: it stays exact however rows come and go
        self._len_norm: np.ndarray | None = None  # BM25's length normalisation per row, until a write
        # each term's rows and their share of the BM25 score, as a query made them, until a write: the
        # common words of queries are most of a search's arithmetic and come back in query after query
        self._term_scores: dict[str, tuple[np.ndarray | None, np.ndarray]] = {}
        self._term_postings = 0  # postings held in _term_scores, at most ``cache_postings``

    def grow(self, new: int) -> None:
        self.doc_len = np.concatenate([self.doc_len, np.zeros(new - len(self.doc_len), np.float32)])

    def set_len(self, row: int, length: int) -> None:
        self.doc_len[row] = length
        self.total_len += length

    def add(self, row: int, counts: dict[str, int], n_rows: int) -> None:
        """The row's terms, counted (the row holds none now)."""
        self.set_len(row, sum(counts.values()))
        self.postings.add(row, counts, n_rows)

    def bulk(self) -> BulkPostings:
        return BulkPostings(self)

    def remove(self, row: int, alive: bool) -> None:
        """The row's terms gone; ``alive``: it counted in the live rows' length."""
        if alive:
            self.total_len -= int(self.doc_len[row])
        self.postings.remove(row)
        self.doc_len[row] = 0

    def written(self) -> None:
        """A row changed: the length normalisation and every term's scores are made again."""
        self._len_norm = None
        if self._term_postings:
            self._term_scores, self._term_postings = {}, 0

    def _term_score(self, term: str, len_norm: np.ndarray, n: int, live: int) -> tuple[np.ndarray | None, np.ndarray] | None:
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
        shares = idf(len(rows), live) * tfs * (self.params.k1 + 1) / norm
        made: tuple[np.ndarray | None, np.ndarray] = rows, shares
        size = len(rows)
        # dense only when it is kept: made for one query, it would cost more than the scatter it saves
        if len(rows) >= n * self.dense_share and self._term_postings + n // 2 <= self.cache_postings:
            dense = np.zeros(n, dtype=shares.dtype)
            dense[rows] = shares
            made, size = (None, dense), n // 2
        if self._term_postings + size <= self.cache_postings:
            self._term_scores[term] = made
            self._term_postings += size
        return made

    def scores(self, query_terms: Iterable[str], n: int, live: int) -> np.ndarray:
        """Every row's BM25 score for the query's terms (in the order the query names them), of
        ``n`` rows of which ``live`` are."""
        scores = np.zeros(n, dtype=np.float32)
        if not live:
            return scores
        if self._len_norm is None:
            # float32 throughout, as the per-term arithmetic below; the same values whether computed
            # for every row once or for each term's rows
            avg_len = np.float32(self.total_len) / np.float32(live)
            k1, b = self.params.k1, self.params.b
            self._len_norm = k1 * (1 - b + b * self.doc_len[:n] / max(float(avg_len), 1e-9))
        len_norm = self._len_norm
        # in the order the query names them: a float32 sum in set order would differ between processes
        for term in dict.fromkeys(query_terms):
            found = self._term_score(term, len_norm, n, live)
            if found is not None:
                rows, share = found
                if rows is None:
                    scores += share  # x + 0 is x: the rows without the term keep their score exactly
                else:
                    scores[rows] += share
        return scores
