"""``ports.RecallLedger`` in the embedded database: served recalls and credit markers."""
from __future__ import annotations

import json
from datetime import datetime
from typing import Sequence

from chalicelib.adapters.embedded.db import SqliteDatabase, dumps, from_us, rows_in, to_us
from chalicelib.ports import ServedRecall


def _doc(served: ServedRecall) -> str:
    return dumps({"experience_ids": list(served.experience_ids), "created_us": to_us(served.created_at),
                  "kind": served.kind, "tool": served.tool})


class SqliteRecallLedger:
    def __init__(self, db: SqliteDatabase) -> None:
        self.db = db

    def record(self, served: ServedRecall) -> None:
        """Written by ``write_soon``: a recall never waits behind an ingest's group commit and its
        fsync. A served recall is read only by the review of a trajectory that attached its id in a
        ``recall`` event, and that event's group commit commits every row queued before it; a crash
        can lose only rows no acknowledged event named yet (at most ``flush_delay`` old), and a
        lost row costs the credit of one recall's lessons, never an answer or an event."""
        row = (served.tenant_id, served.recall_id, to_us(served.expires_at), _doc(served))
        self.db.write_soon(
            lambda conn: conn.execute("INSERT OR IGNORE INTO recalls(tenant_id, recall_id, expires_us, doc) VALUES (?,?,?,?)", row)
        )

    def served(self, tenant_id: str, recall_ids: Sequence[str], now: datetime) -> dict[str, ServedRecall]:
        self.db.flush_soon()  # a row still queued is read too
        out: dict[str, ServedRecall] = {}
        sql = "SELECT recall_id, expires_us, doc FROM recalls WHERE tenant_id=? AND expires_us>? AND recall_id IN ({marks})"
        for r in rows_in(self.db.read(), sql, (tenant_id, to_us(now)), recall_ids):
            doc = json.loads(r["doc"])
            out[r["recall_id"]] = ServedRecall(
                tenant_id, r["recall_id"], tuple(doc["experience_ids"]), from_us(doc["created_us"]),
                from_us(r["expires_us"]), doc.get("kind", "recall"), doc.get("tool"),
            )
        return out

    def mark_credited(self, tenant_id: str, trajectory_id: str, experience_id: str, expires_at: datetime) -> bool:
        with self.db.write() as conn:
            cur = conn.execute(
                "INSERT OR IGNORE INTO credits(tenant_id, trajectory_id, experience_id, expires_us) VALUES (?,?,?,?)",
                (tenant_id, trajectory_id, experience_id, to_us(expires_at)),
            )
            return cur.rowcount == 1

    def is_credited(self, tenant_id: str, trajectory_id: str, experience_id: str) -> bool:
        row = self.db.read().execute(
            "SELECT 1 FROM credits WHERE tenant_id=? AND trajectory_id=? AND experience_id=?",
            (tenant_id, trajectory_id, experience_id),
        ).fetchone()
        return row is not None

    def purge_expired(self, now: datetime) -> int:
        self.db.flush_soon()
        with self.db.write() as conn:
            n = conn.execute("DELETE FROM recalls WHERE expires_us<=?", (to_us(now),)).rowcount
            return n + conn.execute("DELETE FROM credits WHERE expires_us<=?", (to_us(now),)).rowcount
