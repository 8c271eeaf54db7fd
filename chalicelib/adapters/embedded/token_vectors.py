"""The token vectors late interaction reads (``ports.TokenVectorIndex``), kept by the embedded
index in SQLite only (``token_vectors``, int8 rows with a float32 scale each): a recall reads its
leading candidates' in one query, where 100k lessons' would take gigabytes of memory."""
from __future__ import annotations

import sqlite3
from typing import Iterable, Mapping, Sequence

import numpy as np

from chalicelib.adapters.embedded.db import SqliteDatabase, rows_in
from chalicelib.ports import IndexEntry


def packed(vectors: np.ndarray, dim: int) -> bytes:
    """Token vectors as the index keeps them: per row a float32 scale, then the row in int8 (388
    bytes a token at 384 dimensions, a quarter of float32; a unit row's cosines move by ~1e-3)."""
    v = np.asarray(vectors, dtype=np.float32).reshape(-1, dim)
    scale = np.abs(v).max(axis=1) / 127
    scale = np.where(scale > 0, scale, 1).astype(np.float32)
    return scale.tobytes() + np.rint(v / scale[:, None]).astype(np.int8).tobytes()


def unpacked(blob: bytes, dim: int) -> np.ndarray:
    """``packed``'s rows again, as float32 unit rows."""
    n = len(blob) // (dim + 4)
    scale = np.frombuffer(blob, np.float32, n)
    v = np.frombuffer(blob, np.int8, n * dim, 4 * n).reshape(n, dim) * scale[:, None]
    v /= np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)
    return v


class TokenVectorTable:
    """The ``token_vectors`` table: written in the index's own transactions, read apart."""

    def __init__(self, db: SqliteDatabase, dim: int) -> None:
        self.db, self.dim = db, dim

    def rows(self, tenant_id: str, entries: Sequence[IndexEntry]) -> list[tuple[str, str, str, bytes]]:
        """The rows of the entries that carry token vectors, packed: made before the write's
        transaction, which holds the writer lock."""
        return [(tenant_id, e.experience_id, e.late.key, packed(e.late.vectors, self.dim)) for e in entries if e.late]

    def write(self, conn: sqlite3.Connection, tenant_id: str, entries: Sequence[IndexEntry],
              rows: list[tuple[str, str, str, bytes]]) -> None:
        """An entry's token vectors are written with it (``rows``): one written without them keeps none."""
        conn.executemany(
            "DELETE FROM token_vectors WHERE tenant_id=? AND experience_id=?",
            [(tenant_id, e.experience_id) for e in entries if not e.late],
        )
        conn.executemany(
            "INSERT OR REPLACE INTO token_vectors(tenant_id, experience_id, text_key, vecs) VALUES (?,?,?,?)", rows
        )

    def delete(self, conn: sqlite3.Connection, tenant_id: str, experience_ids: Sequence[str]) -> None:
        conn.executemany(
            "DELETE FROM token_vectors WHERE tenant_id=? AND experience_id=?", [(tenant_id, i) for i in experience_ids]
        )

    def of_entries(self, tenant_id: str, keys: Mapping[str, str]) -> dict[str, np.ndarray]:
        """By experience id, the token vectors kept for the text key ``keys`` names (none for another key)."""
        sql = "SELECT experience_id, text_key, vecs FROM token_vectors WHERE tenant_id=? AND experience_id IN ({marks})"
        rows = self.db.read_in(sql, (tenant_id,), keys)
        return {i: unpacked(blob, self.dim) for i, key, blob in rows if keys[i] == key}

    def of_texts(self, tenant_id: str, keys: Iterable[str]) -> dict[str, np.ndarray]:
        """By text key, the token vectors of one entry holding that text."""
        # one row of each text, chosen on the (tenant_id, text_key) index alone: a text that many of
        # the tenant's entries hold (a lesson in several scopes) has one blob read, not each entry's
        sql = (
            "SELECT text_key, vecs FROM token_vectors WHERE rowid IN (SELECT MIN(rowid) FROM token_vectors"
            " WHERE tenant_id=? AND text_key IN ({marks}) GROUP BY text_key)"
        )
        return {key: unpacked(blob, self.dim) for key, blob in rows_in(self.db.read(), sql, (tenant_id,), keys)}
