"""``ports.TenantStore`` on DynamoDB: a tenant item, a name item that reserves its name (keyed by
the name's key: look-alike names reserve one item), and per API key a lookup item and a reference."""
from __future__ import annotations

from datetime import datetime

from pynamodb.exceptions import TransactWriteError
from pynamodb.transactions import TransactWrite

from chalicelib.adapters.cursors import encode_cursor
from chalicelib.adapters.dynamo.errors import CONDITION_FAILED, boundary, cancellation_codes, written_if
from chalicelib.adapters.dynamo.items import decode_key_cursor, time_key
from chalicelib.adapters.dynamo.models import DynamoTables
from chalicelib.domain.errors import Conflict, NotFound, TenantNameTaken
from chalicelib.domain.models import Tenant
from chalicelib.domain.tenant_names import name_key
from chalicelib.ports import TenantPage

TENANT_SK = "tenant"
KEY_SK = "key"
LISTING = "tenant"


def tenant_pk(tenant_id: str) -> str:
    return f"tenant#{tenant_id}"


def key_pk(key_hash: str) -> str:
    return f"key#{key_hash}"


def name_pk(name: str) -> str:
    return f"name#{name}"


NAME_SK = "name"


def _tenant(item) -> Tenant:
    days = item.event_retention_days
    return Tenant(item.tenant_id, item.name or "", datetime.fromisoformat(item.created_at), int(days) if days is not None else None)


class DynamoTenantStore:
    def __init__(self, tables: DynamoTables) -> None:
        self.tables = tables
        self.Item = tables.tenants

    def _key_items(self, tenant_id: str, key_hash: str, now: datetime) -> list:
        """The lookup item (partition key: the hash) and the tenant's reference to it."""
        lookup = self.Item(key_pk(key_hash), KEY_SK, tenant_id=tenant_id, created_at=now.isoformat(), revoked=False)
        ref = self.Item(tenant_pk(tenant_id), f"key#{key_hash}", tenant_id=tenant_id, created_at=now.isoformat())
        return [lookup, ref]

    def create_tenant(self, tenant: Tenant, key_hash: str) -> None:
        item = self.Item(
            tenant_pk(tenant.tenant_id),
            TENANT_SK,
            tenant_id=tenant.tenant_id,
            name=tenant.name,
            created_at=tenant.created_at.isoformat(),
            listing=LISTING,
            created_sk=time_key(tenant.created_at, tenant.tenant_id),
        )
        lookup, ref = self._key_items(tenant.tenant_id, key_hash, tenant.created_at)
        # DynamoDB has no unique index: the name is reserved by an item keyed by the name's key,
        # written in the same transaction, so two creates of names that read alike cannot both succeed.
        key = name_key(tenant.name)
        reserved = self.Item(name_pk(key), NAME_SK, tenant_id=tenant.tenant_id, created_at=tenant.created_at.isoformat())
        with boundary("create_tenant"):
            # tenants made before names had keys reserved the name as given: a look-alike of one of
            # theirs is found in the listing (a creation is rare; the listing is one query)
            for other in self.list_tenants():
                if name_key(other.name) == key:
                    raise TenantNameTaken(tenant.name, other.tenant_id, other.name)
            try:
                with TransactWrite(connection=self.tables.connection) as tx:
                    tx.save(reserved, condition=self.Item.pk.does_not_exist())
                    tx.save(item, condition=self.Item.pk.does_not_exist())
                    tx.save(lookup, condition=self.Item.pk.does_not_exist())
                    tx.save(ref)
            except TransactWriteError as exc:
                codes = cancellation_codes(exc)
                if codes[:1] == [CONDITION_FAILED]:
                    owner = self.Item.get(name_pk(key), NAME_SK, consistent_read=True)
                    raise TenantNameTaken(tenant.name, owner.tenant_id, self._name_of(owner.tenant_id)) from exc
                if CONDITION_FAILED in codes:
                    raise Conflict("tenant or key already exists") from exc
                raise

    def _name_of(self, tenant_id: str) -> str | None:
        try:
            return self.Item.get(tenant_pk(tenant_id), TENANT_SK, consistent_read=True).name
        except self.Item.DoesNotExist:
            return None

    def tenant_for_key(self, key_hash: str) -> str | None:
        with boundary("tenant_for_key"):
            try:
                item = self.Item.get(key_pk(key_hash), KEY_SK, consistent_read=True)
            except self.Item.DoesNotExist:
                return None
        return None if item.revoked else item.tenant_id

    def add_key(self, tenant_id: str, key_hash: str, now: datetime) -> None:
        lookup, ref = self._key_items(tenant_id, key_hash, now)
        with boundary("add_key"):
            try:
                with TransactWrite(connection=self.tables.connection) as tx:
                    # condition checks go first in the request: reason 0 is the tenant's
                    tx.condition_check(self.Item, tenant_pk(tenant_id), TENANT_SK, condition=self.Item.pk.exists())
                    tx.save(lookup, condition=self.Item.pk.does_not_exist())
                    tx.save(ref)
            except TransactWriteError as exc:
                codes = cancellation_codes(exc)
                if codes[:1] == [CONDITION_FAILED]:
                    raise NotFound("tenant not found") from exc
                if CONDITION_FAILED in codes:
                    raise Conflict("key already in use") from exc
                raise

    def revoke_keys(self, tenant_id: str, keep: str | None = None) -> int:
        revoked = 0
        with boundary("revoke_keys"):
            # the tenant's partition, read consistently: a key added a moment ago is revoked too
            refs = self.Item.query(tenant_pk(tenant_id), self.Item.sk.startswith("key#"), consistent_read=True)
            for ref in list(refs):
                key_hash = ref.sk[len("key#") :]
                if key_hash == keep:
                    continue
                item = self.Item(key_pk(key_hash), KEY_SK)
                not_yet = self.Item.pk.exists() & (self.Item.revoked == False)  # noqa: E712
                if written_if(lambda: item.update(actions=[self.Item.revoked.set(True)], condition=not_yet)):  # not when revoked already: counted once
                    revoked += 1
        return revoked

    def get_tenant(self, tenant_id: str) -> Tenant:
        with boundary("get_tenant"):
            try:
                return _tenant(self.Item.get(tenant_pk(tenant_id), TENANT_SK, consistent_read=True))
            except self.Item.DoesNotExist as exc:
                raise NotFound("tenant not found") from exc

    def set_event_retention(self, tenant_id: str, days: int | None) -> Tenant:
        item, I = self.Item(tenant_pk(tenant_id), TENANT_SK), self.Item
        action = I.event_retention_days.set(days) if days is not None else I.event_retention_days.remove()
        with boundary("set_event_retention"):
            if not written_if(lambda: item.update(actions=[action], condition=I.pk.exists())):
                raise NotFound("tenant not found")
        return self.get_tenant(tenant_id)

    def list_tenants(self) -> list[Tenant]:
        with boundary("list_tenants"):
            items = list(self.Item.by_created.query(LISTING))
        return [_tenant(i) for i in items]

    def list_tenants_page(self, limit: int, cursor: str | None = None) -> TenantPage:
        names = {"listing", "created_sk", "pk", "sk"}  # the index's key and the table's: a LastEvaluatedKey
        start = None
        if cursor:
            key = decode_key_cursor(cursor, names, {"listing": LISTING, "sk": TENANT_SK})
            start = {name: {"S": value} for name, value in key.items()}
        with boundary("list_tenants"):
            # one more than asked (a full last page then has no cursor); Limit bounds what one query reads
            found = list(self.Item.by_created.query(LISTING, limit=limit + 1, page_size=limit + 1, last_evaluated_key=start))
        items = found[:limit]
        next_cursor = None
        if len(found) > limit and items:
            last = items[-1]
            next_cursor = encode_cursor({name: getattr(last, name) for name in sorted(names)})
        return TenantPage([_tenant(i) for i in items], next_cursor)
