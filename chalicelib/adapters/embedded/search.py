"""Searches within one partition of the embedded index: the cosines of a query with the rows,
split in blocks over threads (``RowProduct``); the k nearest, ranked by sign codes first on large
partitions (``knn``); BM25's best (``bm25_top``); the best k of any scores (``top``)."""
from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Callable

import numpy as np

from chalicelib.adapters.embedded.partition import Partition

# the float32 cosines of a query with a partition's rows: every row (None) or the listed ones, in their order
Cosines = Callable[[Partition, np.ndarray, "np.ndarray | None"], np.ndarray]


def top(ids: np.ndarray, candidates: np.ndarray | None, scores: np.ndarray, k: int) -> list[tuple[str, float]]:
    """The k best (id, score), best first; ``candidates``: the row of each score (None: score i is
    row i's). Called under the partition's lock: ``ids`` is read, not copied."""
    if scores.size == 0:
        return []
    if scores.size > k:
        best = np.argpartition(-scores, k - 1)[:k]
        candidates, scores = (best if candidates is None else candidates[best]), scores[best]
    elif candidates is None:
        candidates = np.arange(scores.size)
    order = np.argsort(-scores, kind="stable")
    return [(ids[candidates[i]], float(scores[i])) for i in order]


class RowProduct:
    """The cosine of a unit query with every row of a matrix, or with listed rows, into one output:
    contiguous blocks, one per thread, each row's dot product computed alone (so blocks give the
    scores one product gives). Listed rows are copied a few thousand at a time, never all.

    ``threads``: how many threads share one product (1: numpy's own, as BLAS is set up)."""

    def __init__(self, threads: int) -> None:
        self.threads = max(1, threads)
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()

    def cosines(self, vecs: np.ndarray, n_rows: int, q: np.ndarray, rows: np.ndarray | None,
                rows_per_thread: int, gather_rows: int) -> np.ndarray:
        """Of the first ``n_rows`` of ``vecs``, or of ``rows``; ``rows_per_thread``: below this many
        rows a thread is not woken for a block; ``gather_rows``: listed rows copied at a time."""
        n = n_rows if rows is None else len(rows)
        out = np.empty(n, dtype=np.float32)

        def block(lo: int, hi: int) -> None:
            if rows is None:
                np.matmul(vecs[lo:hi], q, out=out[lo:hi])
                return
            for start in range(lo, hi, gather_rows):
                end = min(start + gather_rows, hi)
                np.matmul(vecs[rows[start:end]], q, out=out[start:end])

        blocks = min(self.threads, n // rows_per_thread)
        if blocks < 2:
            block(0, n)
            return out
        pool = self._pool
        if pool is None:
            with self._lock:
                if self._pool is None:
                    self._pool = ThreadPoolExecutor(self.threads - 1, thread_name_prefix="hindsight-index")
                pool = self._pool
        edges = [n * i // blocks // 64 * 64 for i in range(blocks)] + [n]
        pending = [pool.submit(block, lo, hi) for lo, hi in zip(edges[1:-1], edges[2:])]
        block(0, edges[1])
        for done in pending:
            done.result()
        return out


def knn(part: Partition, q: np.ndarray, mask: np.ndarray, k: int, cosines: Cosines, *,
        signs_min_rows: int, rescore: int, rescore_share: int) -> list[tuple[str, float]]:
    """The k rows of the mask nearest the unit query ``q``, by the float32 ``cosines``. From
    ``signs_min_rows`` rows the rows the mask leaves are ranked by their sign codes first and the
    nearest scored in float32: at least ``rescore`` x k of them and 1/``rescore_share`` of the rows."""
    # None: no row filtered out, every row's score as the product gives it, no list of rows
    candidates = None if mask.all() else np.flatnonzero(mask)
    count = part.n if candidates is None else candidates.size
    keep = max(k * rescore, count // rescore_share)
    if part.n >= signs_min_rows and count > 2 * keep:
        # every row the filter leaves ranked by its sign code, the nearest few scored in float32
        rows = part.sign_codes().nearest(q, part.n, candidates, keep)
        if rows.size * 2 <= count:  # not when codes too alike to tell rows apart tie past half
            return top(part.ids, rows, cosines(part, q, rows), k)
    if candidates is not None and count * 4 < part.n:
        # the candidates' rows alone when they are few enough to be cheaper than every row
        return top(part.ids, candidates, cosines(part, q, candidates), k)
    if candidates is None:
        return top(part.ids, None, cosines(part, q, None), k)
    return top(part.ids, candidates, cosines(part, q, None)[candidates], k)


def bm25_top(part: Partition, text: str, mask: np.ndarray, k: int) -> list[tuple[str, float]]:
    """The k rows of the mask with the best BM25 scores for ``text`` (none scoring 0)."""
    scores = part.bm25(text)
    candidates = np.flatnonzero(mask & (scores > 0))
    return top(part.ids, candidates, scores[candidates], k)
