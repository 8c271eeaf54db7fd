"""``ports.RecallLedger`` on DynamoDB: one item per served recall and per credit marker.

Both live in the ``recalls`` table under the tenant's partition; the table's TTL drops them after
``expires``. TTL deletes lazily (up to days late), so readers compare ``expires_us`` themselves.
"""
from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Sequence

from chalicelib.adapters.dynamo.errors import boundary, written_if
from chalicelib.adapters.dynamo.items import dumps
from chalicelib.adapters.dynamo.models import DynamoTables
from chalicelib.domain.ratelimit import epoch_us
from chalicelib.ports import ServedRecall


def _from_us(us: int) -> datetime:
    return datetime.fromtimestamp(us / 1_000_000, tz=timezone.utc)


def recall_key(recall_id: str) -> str:
    return f"recall#{recall_id}"


def credit_key(trajectory_id: str, experience_id: str) -> str:
    # ids may hold '#': the JSON list keeps the two parts apart whatever they contain
    return "credit#" + json.dumps([trajectory_id, experience_id], separators=(",", ":"))


class DynamoRecallLedger:
    def __init__(self, tables: DynamoTables) -> None:
        self.Item = tables.recalls

    def record(self, served: ServedRecall) -> None:
        doc = {"experience_ids": list(served.experience_ids), "created_us": epoch_us(served.created_at),
               "kind": served.kind, "tool": served.tool, "agent_id": served.agent_id, "user_id": served.user_id}
        item = self.Item(served.tenant_id, recall_key(served.recall_id), doc=dumps(doc),
                         expires_us=epoch_us(served.expires_at), expires=served.expires_at,
                         trajectory_id=served.trajectory_id)
        with boundary("record recall"):
            written_if(lambda: item.save(condition=self.Item.key.does_not_exist()))

    def served(self, tenant_id: str, recall_ids: Sequence[str], now: datetime) -> dict[str, ServedRecall]:
        keys = [(tenant_id, recall_key(i)) for i in dict.fromkeys(recall_ids)]
        if not keys:
            return {}
        now_us = epoch_us(now)
        out: dict[str, ServedRecall] = {}
        with boundary("get recalls"):
            for item in self.Item.batch_get(keys, consistent_read=True):
                if item.expires_us <= now_us or not item.doc:
                    continue
                doc = json.loads(item.doc)
                rid = item.key.removeprefix("recall#")
                out[rid] = ServedRecall(tenant_id, rid, tuple(doc["experience_ids"]), _from_us(doc["created_us"]),
                                        _from_us(int(item.expires_us)), doc.get("kind", "recall"), doc.get("tool"),
                                        doc.get("agent_id"), doc.get("user_id"), item.trajectory_id)
        return out

    def attach(self, tenant_id: str, recall_id: str, trajectory_id: str) -> bool:
        I = self.Item
        item = I(tenant_id, recall_key(recall_id))
        with boundary("attach recall"):  # the condition fails for an unknown recall and for another's
            return written_if(lambda: item.update(
                actions=[I.trajectory_id.set(trajectory_id)],
                condition=I.doc.exists() & (I.trajectory_id.does_not_exist() | (I.trajectory_id == trajectory_id)),
            ))

    def mark_credited(self, tenant_id: str, trajectory_id: str, experience_id: str, expires_at: datetime) -> bool:
        item = self.Item(tenant_id, credit_key(trajectory_id, experience_id), expires_us=epoch_us(expires_at),
                         expires=expires_at)
        with boundary("mark credited"):
            return written_if(lambda: item.save(condition=self.Item.key.does_not_exist()))

    def is_credited(self, tenant_id: str, trajectory_id: str, experience_id: str) -> bool:
        with boundary("is credited"):
            try:
                self.Item.get(tenant_id, credit_key(trajectory_id, experience_id), consistent_read=True)
            except self.Item.DoesNotExist:
                return False
        return True

    def purge_expired(self, now: datetime) -> int:
        return 0  # the table's TTL deletes expired items; readers already skip them
