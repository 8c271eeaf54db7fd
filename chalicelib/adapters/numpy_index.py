"""The embedded vector index: exact (brute-force) cosine k-NN in numpy, persisted in SQLite.

Exact search is the floor that approximate indexes are measured against, and at the scale of one
tenant on one machine (1e5 x 384 floats = 150 MB) one matrix-vector product takes milliseconds.
Filters are boolean masks over per-row codes, applied before ranking, so a selective filter never
starves the result. Each tenant is its own partition, loaded from disk on first use.
"""
from __future__ import annotations

import json
import threading
from typing import Sequence

import numpy as np

from ..ports import IndexEntry, IndexFilter
from .sqlite_db import SqliteDatabase, dumps


class _Partition:
    def __init__(self, dim: int) -> None:
        self.dim = dim
        self.n = 0
        self.ids: list[str | None] = []
        self.pos: dict[str, int] = {}
        self.vecs = np.zeros((0, dim), dtype=np.float32)
        self.alive = np.zeros(0, dtype=bool)
        self.agent = np.zeros(0, dtype=np.int32)  # 0 = shared (no agent)
        self.user = np.zeros(0, dtype=np.int32)
        self.has_tools = np.zeros(0, dtype=bool)
        self.row_tools: list[frozenset[str]] = []
        self.tool_rows: dict[str, set[int]] = {}
        self._tool_arrays: dict[str, np.ndarray] = {}  # cache of tool_rows as index arrays
        self.codes: dict[str, int] = {}

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
        self.vecs = np.vstack([self.vecs, np.zeros((new - cap, self.dim), np.float32)])
        self.alive = np.concatenate([self.alive, np.zeros(new - cap, bool)])
        self.agent = np.concatenate([self.agent, np.zeros(new - cap, np.int32)])
        self.user = np.concatenate([self.user, np.zeros(new - cap, np.int32)])
        self.has_tools = np.concatenate([self.has_tools, np.zeros(new - cap, bool)])

    def put(self, entry: IndexEntry, vec: np.ndarray) -> None:
        row = self.pos.get(entry.experience_id)
        if row is not None:
            self._unlink_tools(row)
        else:
            row = self.n
            self._grow(row + 1)
            self.n += 1
            self.ids.append(entry.experience_id)
            self.row_tools.append(frozenset())
            self.pos[entry.experience_id] = row
        self.vecs[row] = vec
        self.alive[row] = True
        self.agent[row] = self.code(entry.agent_id, True)
        self.user[row] = self.code(entry.user_id, True)
        tools = frozenset(t.lower() for t in entry.tools)
        self.has_tools[row] = bool(tools)
        self.row_tools[row] = tools
        for t in tools:
            self.tool_rows.setdefault(t, set()).add(row)
            self._tool_arrays.pop(t, None)

    def _unlink_tools(self, row: int) -> None:
        for t in self.row_tools[row]:
            self.tool_rows[t].discard(row)
            self._tool_arrays.pop(t, None)
        self.row_tools[row] = frozenset()

    def rows_with_tool(self, tool: str) -> np.ndarray | None:
        arr = self._tool_arrays.get(tool)
        if arr is None:
            rows = self.tool_rows.get(tool)
            if not rows:
                return None
            arr = self._tool_arrays[tool] = np.fromiter(rows, dtype=np.int64, count=len(rows))
        return arr

    def remove(self, experience_id: str) -> None:
        row = self.pos.pop(experience_id, None)
        if row is not None:
            self.alive[row] = False
            self.ids[row] = None
            self._unlink_tools(row)

    def mask(self, flt: IndexFilter) -> np.ndarray:
        n = self.n
        m = self.alive[:n].copy()
        m &= (self.agent[:n] == 0) | (self.agent[:n] == self.code(flt.agent_id, False))
        m &= (self.user[:n] == 0) | (self.user[:n] == self.code(flt.user_id, False))
        if flt.tools:
            tool_ok = ~self.has_tools[:n]
            for t in {t.lower() for t in flt.tools}:
                rows = self.rows_with_tool(t)
                if rows is not None:
                    tool_ok[rows] = True
            m &= tool_ok
        return m


class NumpyVectorIndex:
    """Implements ``ports.VectorIndex``. Writes go to SQLite first, then to memory."""

    def __init__(self, db: SqliteDatabase, dim: int) -> None:
        self.db = db
        self.dim = dim
        self._parts: dict[str, _Partition] = {}
        self._lock = threading.RLock()

    def _partition(self, tenant_id: str) -> _Partition:
        part = self._parts.get(tenant_id)
        if part is None:
            with self._lock:
                part = self._parts.get(tenant_id)
                if part is None:
                    part = self._load(tenant_id)
                    self._parts[tenant_id] = part
        return part

    def _load(self, tenant_id: str) -> _Partition:
        part = _Partition(self.dim)
        rows = self.db.read().execute(
            "SELECT experience_id, vec, meta FROM vectors WHERE tenant_id=? ORDER BY rowid", (tenant_id,)
        ).fetchall()
        part._grow(len(rows))
        for r in rows:
            meta = json.loads(r["meta"])
            entry = IndexEntry(r["experience_id"], None, meta.get("agent_id"), meta.get("user_id"), tuple(meta.get("tools", ())))
            part.put(entry, np.frombuffer(r["vec"], dtype=np.float32))
        return part

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
        with self.db.write() as conn:
            conn.executemany(
                "INSERT OR REPLACE INTO vectors(tenant_id, experience_id, vec, meta) VALUES (?,?,?,?)",
                [
                    (
                        tenant_id,
                        e.experience_id,
                        v.tobytes(),
                        dumps({"agent_id": e.agent_id, "user_id": e.user_id, "tools": list(e.tools)}),
                    )
                    for e, v in zip(entries, vecs)
                ],
            )
        part = self._partition(tenant_id)
        with self._lock:
            for e, v in zip(entries, vecs):
                part.put(e, v)

    def delete(self, tenant_id: str, experience_ids: Sequence[str]) -> None:
        if not experience_ids:
            return
        with self.db.write() as conn:
            conn.executemany(
                "DELETE FROM vectors WHERE tenant_id=? AND experience_id=?", [(tenant_id, i) for i in experience_ids]
            )
        part = self._partition(tenant_id)
        with self._lock:
            for i in experience_ids:
                part.remove(i)

    def search(self, tenant_id: str, vector: np.ndarray, flt: IndexFilter, k: int) -> list[tuple[str, float]]:
        if k <= 0:
            return []
        q = self._checked(vector)
        part = self._partition(tenant_id)
        with self._lock:
            n = part.n
            if n == 0:
                return []
            mask = part.mask(flt)
            sims = part.vecs[:n] @ q
            ids = list(part.ids)
        candidates = np.flatnonzero(mask)
        if candidates.size == 0:
            return []
        scores = sims[candidates]
        if candidates.size > k:
            top = np.argpartition(-scores, k - 1)[:k]
            candidates, scores = candidates[top], scores[top]
        order = np.argsort(-scores, kind="stable")
        return [(ids[candidates[i]], float(scores[i])) for i in order]

    def count(self, tenant_id: str) -> int:
        return len(self._partition(tenant_id).pos)
