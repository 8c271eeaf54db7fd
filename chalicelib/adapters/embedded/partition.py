"""One tenant's rows in the embedded index: the float32 matrix (and its sign codes), the filter
codes and tool sets a search's mask is made of, and the rows' BM25 terms (``bm25``)."""
from __future__ import annotations

import threading
from collections import Counter
from typing import Iterable

import numpy as np

from chalicelib.adapters.embedded.bm25 import DENSE_SHARE, TERM_CACHE_POSTINGS, Bm25Rows, Tokenizer
from chalicelib.adapters.embedded.sign_codes import SignCodes
from chalicelib.domain.lexical import Bm25Params, terms
from chalicelib.domain.models import match_key, match_keys
from chalicelib.ports import IndexEntry, IndexFilter

# the per-row arrays a partition grows together, and their types (object: None until set)
_ROW_ARRAYS = (("alive", bool), ("agent", np.int32), ("user", np.int32), ("task", np.int32), ("intent", np.int32),
               ("has_tools", bool), ("ids", object), ("row_tools", object))


class Partition:
    """``tokenize``: the terms of a text (``lexical.terms``' signature); ``cache_postings`` and
    ``dense_share``: the BM25 term scores kept between writes (``bm25.Bm25Rows``)."""

    def __init__(self, dim: int, bm25: Bm25Params, tokenize: Tokenizer = terms,
                 cache_postings: int = TERM_CACHE_POSTINGS, dense_share: float = DENSE_SHARE) -> None:
        self.dim = dim
        self.tokenize = tokenize
        self.n = 0
        # Per-row objects live in object arrays, which the cyclic garbage collector does not walk: in
        # lists, every full collection visited each of the 1e5 ids and tool sets (about 40 ms).
        self.ids: np.ndarray = np.zeros(0, dtype=object)  # the experience id of each row, None once removed
        self.pos: dict[str, int] = {}
        self.vecs: np.ndarray = np.zeros((0, dim), dtype=np.float32)
        self.signs: SignCodes | None = None  # the rows' sign codes, once a search wanted them
        self.alive: np.ndarray = np.zeros(0, dtype=bool)
        self.agent: np.ndarray = np.zeros(0, dtype=np.int32)  # 0 = shared (no agent)
        self.user: np.ndarray = np.zeros(0, dtype=np.int32)
        self.task: np.ndarray = np.zeros(0, dtype=np.int32)  # 0 = any task type
        self.intent: np.ndarray = np.zeros(0, dtype=np.int32)  # 0 = any intent
        self.has_tools: np.ndarray = np.zeros(0, dtype=bool)
        self.row_tools: np.ndarray = np.zeros(0, dtype=object)  # frozenset[str] per row
        self.tool_rows: dict[str, dict[int, None]] = {}  # rows by tool: dicts of ints, which the collector skips
        self._tool_arrays: dict[str, np.ndarray] = {}  # tool_rows as arrays, until the tool's rows change
        self._interned: dict[frozenset[str], frozenset[str]] = {}  # one frozenset per distinct tool set
        self.lexical = Bm25Rows(bm25, cache_postings, dense_share)
        self.codes: dict[str, int] = {}
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

    def grow(self, need: int) -> None:
        """Room for ``need`` rows."""
        cap = len(self.alive)
        if need <= cap:
            return
        new = max(need, cap * 2, 64)
        vecs = np.zeros((new, self.dim), np.float32)
        vecs[:cap] = self.vecs
        self.vecs = vecs
        if self.signs is not None:
            self.signs.grow(new)
        self.lexical.grow(new)
        for name, dtype in _ROW_ARRAYS:
            more = np.empty(new - cap, dtype) if dtype is object else np.zeros(new - cap, dtype)  # None, or zeros
            setattr(self, name, np.concatenate([getattr(self, name), more]))

    def _place(self, entry: IndexEntry) -> int:
        """The entry's row, emptied (a new one at the end for a new id), with its filter codes set."""
        row = self.pos.get(entry.experience_id)
        if row is not None:
            self._unlink(row)
        else:
            row = self.n
            self.grow(row + 1)
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
        self.lexical.written()
        return row

    def _counted(self, text: str) -> Counter[str]:
        return Counter(self.tokenize(text, self.lexical.params.stemmer))

    def put(self, entry: IndexEntry, vec: np.ndarray | None, counts: Counter[str] | None = None) -> None:
        """``counts``: the terms of the entry's text, counted, when the caller has them already."""
        row = self._place(entry)
        if vec is not None:
            self.vecs[row] = vec
            if self.signs is not None:
                self.signs.set(row, vec)
        self.lexical.add(row, self._counted(entry.text) if counts is None else counts, self.n)

    def put_bulk(self, entries: Iterable[tuple[IndexEntry, Counter[str] | None]]) -> None:
        """``put`` of the entries of an empty partition, in rows 0.. (their vectors in place already),
        with one build of the postings. Entries (each with its counted terms, or None to tokenize
        its text) are taken one at a time and only their postings kept."""
        if self.n:
            raise ValueError("put_bulk fills an empty partition")
        bulk = self.lexical.bulk()
        for entry, counts in entries:
            if entry.experience_id in self.pos:
                raise ValueError(f"put_bulk: {entry.experience_id} twice")
            row = self._place(entry)
            bulk.add(row, self._counted(entry.text) if counts is None else counts)
        bulk.build(self.alive[: self.n])

    def _unlink(self, row: int) -> None:
        alive = bool(self.alive[row])
        if alive:
            self.live -= 1
        for t in self.row_tools[row]:
            self.tool_rows[t].pop(row, None)
            self._tool_arrays.pop(t, None)
        self.lexical.remove(row, alive)
        self.row_tools[row] = frozenset()
        self.alive[row] = False
        self.lexical.written()

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
        """The rows the filter leaves, as a boolean mask over the partition's rows."""
        n = self.n
        m = self.alive[:n].copy()
        if not flt.all_scopes:
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

    def bm25(self, query: str) -> np.ndarray:
        """Every row's BM25 score for the query (0 for the rows without its terms)."""
        if not self.live:
            return np.zeros(self.n, dtype=np.float32)
        return self.lexical.scores(self.tokenize(query, self.lexical.params.stemmer), self.n, self.live)
