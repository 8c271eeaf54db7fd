"""``ports.TenantData`` on DynamoDB: every table the tenant has items in is read by the tenant's
own partitions (no scan), and deleted a batch at a time (BatchWriteItem, 25 a request).

Where a tenant's items are (``models``): lessons, review jobs and the tenant's review turn, served
recalls and credit markers under ``tenant_id``; trajectories under ``tenant_id`` and each one's
events under ``<t>#<tr>``; the rate-limit bucket ``tenant#<t>``; its keys under ``tenant#<t>`` with
a lookup item ``key#<hash>`` each; its name's reservation ``name#<key>``; its record last.
"""
from __future__ import annotations

from datetime import datetime
from typing import Any, Iterable

from chalicelib.adapters.dynamo.errors import boundary
from chalicelib.adapters.dynamo.models import DynamoTables
from chalicelib.adapters.dynamo.rate_limiter import bucket_key
from chalicelib.adapters.dynamo.tenants import KEY_SK, NAME_SK, TENANT_SK, key_pk, name_pk, tenant_pk
from chalicelib.adapters.dynamo.trajectories import events_pk
from chalicelib.domain.models import Tenant
from chalicelib.domain.tenant_names import name_key


class DynamoTenantData:
    def __init__(self, tables: DynamoTables) -> None:
        self.tables = tables

    def tenant(self, tenant_id: str) -> Tenant | None:
        T = self.tables.tenants
        with boundary("tenant"):
            try:
                item = T.get(tenant_pk(tenant_id), TENANT_SK, consistent_read=True)
            except T.DoesNotExist:
                return None
        return Tenant(item.tenant_id, item.name or "", datetime.fromisoformat(item.created_at))

    def trajectory_ids(self, tenant_id: str, after: str | None, limit: int) -> list[str]:
        T = self.tables.trajectories
        with boundary("trajectory_ids"):
            condition = T.trajectory_id > after if after is not None else None
            items = T.query(tenant_id, condition, consistent_read=True, limit=limit,
                            attributes_to_get=["trajectory_id"])
            return [i.trajectory_id for i in items][:limit]

    @staticmethod
    def _delete(model: Any, items: Iterable[Any]) -> int:
        n = 0
        with model.batch_write() as batch:
            for item in items:
                batch.delete(item)
                n += 1
        return n

    def purge(self, tenant_id: str, limit: int) -> int:
        t = self.tables
        gone = 0
        with boundary("purge tenant"):
            for model in (t.experiences, t.jobs, t.recalls):
                if gone >= limit:
                    return gone
                gone += self._delete(model, model.query(tenant_id, consistent_read=True, limit=limit - gone))
            for traj in t.trajectories.query(tenant_id, consistent_read=True, limit=limit):
                if gone >= limit:
                    return gone
                room = limit - gone
                events = list(t.events.query(events_pk(tenant_id, traj.trajectory_id), consistent_read=True, limit=room))
                gone += self._delete(t.events, events)
                if len(events) < room:  # none of its events is left: the trajectory goes too
                    traj.delete()
                    gone += 1
            if gone >= limit:
                return gone
            try:
                t.rate_limits.get(bucket_key(tenant_id), consistent_read=True).delete()
                gone += 1
            except t.rate_limits.DoesNotExist:
                pass
            T = t.tenants
            record = None
            for item in T.query(tenant_pk(tenant_id), consistent_read=True):
                if gone >= limit:
                    return gone
                if item.sk == TENANT_SK:
                    record = item
                    continue
                if item.sk.startswith("key#"):  # the key's lookup item, then the tenant's reference
                    gone += self._delete(T, [T(key_pk(item.sk[len("key#"):]), KEY_SK), item])
                else:
                    item.delete()
                    gone += 1
            if record is not None and gone < limit:
                reserved = name_pk(name_key(record.name or ""))
                try:
                    owner = T.get(reserved, NAME_SK, consistent_read=True)
                    if owner.tenant_id == tenant_id:  # its name is free again only now, with nothing of it left
                        owner.delete()
                except T.DoesNotExist:
                    pass
                record.delete()
                gone += 1
        return gone
