"""``ports.RecallLedger`` in the embedded database: served recalls and credit markers."""
from __future__ import annotations

import json
from datetime import datetime
from typing import Sequence

from chalicelib.adapters.embedded.db import SqliteDatabase, dumps, from_us, rows_in, to_us
from chalicelib.ports import ServedRecall


def _doc(served: ServedRecall) -> str:
    return dumps({"experience_ids": list(served.experience_ids), "created_us": to_us(served.created_at),
                  "kind": served.kind, "tool": served.tool, "agent_id": served.agent_id, "user_id": served.user_id})


class SqliteRecallLedger:
    def __init__(self, db: SqliteDatabase) -> None:
        self.db = db

    def record(self, served: ServedRecall) -> None:
        """Committed before it returns. It was queued (``write_soon``) so that a recall never
        waited behind another writer, on the grounds that the ``recall`` event naming it would
        commit it; but that event is appended by an ingest child and the review runs in a third
        process, which did not see the server's queue: 6 of 40 quick recall, event, finalize runs
        lost their credit under load. Without ingest's fsync (``synchronous=NORMAL`` in WAL) the
        write costs the wait for the lock and a page or two."""
        row = (served.tenant_id, served.recall_id, to_us(served.expires_at), _doc(served), served.trajectory_id)
        with self.db.write() as conn:
            conn.execute(
                "INSERT OR IGNORE INTO recalls(tenant_id, recall_id, expires_us, doc, trajectory_id) VALUES (?,?,?,?,?)", row
            )

    def served(self, tenant_id: str, recall_ids: Sequence[str], now: datetime) -> dict[str, ServedRecall]:
        out: dict[str, ServedRecall] = {}
        sql = ("SELECT recall_id, expires_us, doc, trajectory_id FROM recalls WHERE tenant_id=? AND expires_us>?"
               " AND recall_id IN ({marks})")
        for r in rows_in(self.db.read(), sql, (tenant_id, to_us(now)), recall_ids):
            doc = json.loads(r["doc"])
            out[r["recall_id"]] = ServedRecall(
                tenant_id, r["recall_id"], tuple(doc["experience_ids"]), from_us(doc["created_us"]),
                from_us(r["expires_us"]), doc.get("kind", "recall"), doc.get("tool"), doc.get("agent_id"),
                doc.get("user_id"), r["trajectory_id"],
            )
        return out

    def attach(self, tenant_id: str, recall_id: str, trajectory_id: str) -> bool:
        with self.db.write() as conn:
            conn.execute(
                "UPDATE recalls SET trajectory_id=? WHERE tenant_id=? AND recall_id=? AND trajectory_id IS NULL",
                (trajectory_id, tenant_id, recall_id),
            )
            row = conn.execute(
                "SELECT trajectory_id FROM recalls WHERE tenant_id=? AND recall_id=?", (tenant_id, recall_id)
            ).fetchone()
        return row is not None and row[0] == trajectory_id

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
        with self.db.write() as conn:
            n = conn.execute("DELETE FROM recalls WHERE expires_us<=?", (to_us(now),)).rowcount
            return n + conn.execute("DELETE FROM credits WHERE expires_us<=?", (to_us(now),)).rowcount
