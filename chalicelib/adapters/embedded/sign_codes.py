"""Sign codes: each row of a matrix as one bit per dimension, the sign of its difference from the
rows' mean, for a first pass that ranks rows before the float32 product scores the nearest few.

The number of bits two codes differ in (their Hamming distance) tracks the angle between the two
vectors (random hyperplanes would make it an unbiased estimate; the coordinate axes, about the
mean, keep most of that for sentence embeddings). It is coarse: the rows it puts first are a
superset to rescore, not an answer. At 384 dimensions a code is 48 bytes, a 32nd of the float32
row, so every row's distance is a few passes of XOR and popcount over 5 MB per 100k rows.

The codes are kept word-major (``bits[w, row]``): each of the ``dim / 64`` words of every row is
one contiguous uint64 array, so a query's distances are ``dim / 64`` vector XORs and popcounts, with
no reduction along a short axis (which numpy does row by row, five times slower).
"""
from __future__ import annotations

import numpy as np

_SAMPLE_ROWS = 4096  # rows whose mean is the centre


class SignCodes:
    """The sign codes of a matrix's first ``n`` rows, row by row as it changes (``set``, ``grow``).

    The centre is the mean of a spread of the rows when the codes are made, then fixed: a code
    means the same thing however the rows change, and only the distances' precision (not the
    exactness of the float32 scores that follow) depends on how well it still centres them."""

    def __init__(self, vecs: np.ndarray, n: int) -> None:
        dim = vecs.shape[1]
        spread = vecs[: n : max(1, n // _SAMPLE_ROWS)]
        self.centre = spread.mean(axis=0, dtype=np.float64).astype(np.float32) if n else np.zeros(dim, np.float32)
        self.words = -(-dim // 64)
        self.bits = np.zeros((self.words, len(vecs)), dtype=np.uint64)
        step = 8192  # rows packed at a time: their boolean copy stays a few MB
        for lo in range(0, n, step):
            hi = min(lo + step, n)
            self.bits[:, lo:hi] = self.pack(vecs[lo:hi])

    def pack(self, rows: np.ndarray) -> np.ndarray:
        """The codes of ``rows`` (m x dim), word-major: (words, m) uint64."""
        packed = np.packbits(rows > self.centre, axis=1)  # m x ceil(dim / 8) bytes
        if packed.shape[1] != self.words * 8:
            packed = np.pad(packed, ((0, 0), (0, self.words * 8 - packed.shape[1])))
        return packed.view(np.uint64).T

    def grow(self, capacity: int) -> None:
        bits = np.zeros((self.words, capacity), dtype=np.uint64)
        bits[:, : self.bits.shape[1]] = self.bits
        self.bits = bits

    def set(self, row: int, vec: np.ndarray) -> None:
        self.bits[:, row] = self.pack(vec[None, :])[:, 0]

    def distances(self, q: np.ndarray, n: int, rows: np.ndarray | None = None) -> np.ndarray:
        """The Hamming distance of ``q``'s code to each of the first ``n`` rows' (uint16), or to
        each of ``rows``' (in their order)."""
        code = self.pack(q[None, :])[:, 0]
        size = n if rows is None else rows.size
        word = np.empty(size, dtype=np.uint64)
        ones = np.empty(size, dtype=np.uint8)
        out = np.zeros(size, dtype=np.uint16)
        for w in range(self.words):
            bits = self.bits[w, :n] if rows is None else self.bits[w].take(rows)
            np.bitwise_xor(bits, code[w], out=word)
            np.bitwise_count(word, out=ones)
            np.add(out, ones, out=out)
        return out

    def nearest(self, q: np.ndarray, n: int, rows: np.ndarray | None, count: int) -> np.ndarray:
        """The rows (of the first ``n``, or of ``rows``) whose codes are nearest ``q``'s: at least
        ``count`` of them, every row as near as the ``count``-th included (ties are never cut), in
        row order."""
        dist = self.distances(q, n, rows)
        if count >= dist.size:
            return np.arange(n) if rows is None else rows
        # the smallest distance that already takes ``count`` rows: a histogram, not a sort
        cutoff = int(np.searchsorted(np.cumsum(np.bincount(dist)), count))
        near = np.flatnonzero(dist <= cutoff)
        return near if rows is None else rows[near]
