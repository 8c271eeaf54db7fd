"""``ports.Checkpoints`` in the embedded database: one row per name."""
from __future__ import annotations

import json

from chalicelib.adapters.embedded.db import SqliteDatabase, dumps


class SqliteCheckpoints:
    def __init__(self, db: SqliteDatabase) -> None:
        self.db = db

    def load(self, name: str) -> dict | None:
        row = self.db.read().execute("SELECT doc FROM checkpoints WHERE name=?", (name,)).fetchone()
        return json.loads(row["doc"]) if row else None

    def save(self, name: str, state: dict) -> None:
        with self.db.write() as conn:
            conn.execute("INSERT OR REPLACE INTO checkpoints(name, doc) VALUES (?,?)", (name, dumps(state)))

    def delete(self, name: str) -> None:
        with self.db.write() as conn:
            conn.execute("DELETE FROM checkpoints WHERE name=?", (name,))
