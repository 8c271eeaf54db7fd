"""``ports.ExperienceStore`` on DynamoDB: the source of truth for every experience.

One item per experience, whatever its status; the indexes that only concern active experiences
(fingerprint, situation, the maintenance scan) are sparse: their attributes exist only while the
experience is active, so a put that archives it takes it out of them in the same write. A
forgotten one keeps a fingerprint key of its own in the fingerprint index (``FORGOTTEN``), where a
review that would learn it again finds the tombstone.

Conditional writes (``put_if``) hold a condition expression on ``rev``, the revision read.
"""
from __future__ import annotations

import builtins
import heapq
import json
from dataclasses import replace
from itertools import islice
from typing import Any, Sequence

from chalicelib.adapters.codec import experience_from_doc, to_doc
from chalicelib.adapters.cursors import encode_cursor
from chalicelib.adapters.dynamo.errors import CONDITION_FAILED, boundary, cancellation_codes, written_if
from chalicelib.adapters.dynamo.items import (
    ITEM_DOC_BUDGET,
    compose,
    decode_key_cursor,
    decode_pair_cursor,
    dumps,
    scope_key,
    shard_of,
    size_of,
    time_key,
)
from chalicelib.adapters.dynamo.models import DynamoTables
from chalicelib.domain.errors import NotFound, PayloadTooLarge
from chalicelib.domain.models import Candidate, Experience, ExperienceStatus
from chalicelib.ports import Page

ACTIVE = ExperienceStatus.ACTIVE
FORGOTTEN = "forgotten"  # the scope key part that keeps tombstones apart from active lessons


class DynamoExperienceStore:
    def __init__(self, tables: DynamoTables) -> None:
        self.tables = tables
        self.Item = tables.experiences

    def _item(self, exp: Experience) -> Any:
        doc = to_doc(exp)
        size = size_of(doc)
        if size > ITEM_DOC_BUDGET:  # the source of truth is never cut: refuse rather than lose text
            raise PayloadTooLarge(f"experience {exp.experience_id} takes {size} bytes; at most {ITEM_DOC_BUDGET} fit")
        t = exp.tenant_id
        attrs: dict[str, Any] = dict(
            doc=dumps(doc),
            status=exp.status.value,
            created_sk=time_key(exp.created_at, exp.experience_id),
            tenant_status=compose(t, exp.status.value),
            tenant_agent=compose(t, exp.agent_id) if exp.agent_id is not None else None,
        )
        if exp.status is ACTIVE:
            key = compose(t, exp.experience_id)
            attrs.update(active_shard=shard_of(key, self.tables.config.shards), active_sk=key)
            if exp.fingerprint is not None:
                attrs["fp_scope"] = scope_key(t, exp.agent_id, exp.user_id, exp.fingerprint)
            if exp.situation_key is not None:
                attrs["situation_scope"] = scope_key(t, exp.agent_id, exp.user_id, exp.situation_key)
        elif exp.status is ExperienceStatus.FORGOTTEN and exp.fingerprint is not None:
            attrs["fp_scope"] = scope_key(t, exp.agent_id, exp.user_id, exp.fingerprint, FORGOTTEN)
        return self.Item(t, exp.experience_id, rev=exp.revision, **attrs)

    def _read_with(self, exp: Experience) -> Any:
        """The condition that the stored item's revision is still the one ``exp`` was read with."""
        I = self.Item
        return (I.rev.does_not_exist() | (I.rev == 0)) if exp.revision == 0 else (I.rev == exp.revision)

    @staticmethod
    def _experience(item: Any) -> Experience:
        return experience_from_doc(json.loads(item.doc))

    def put(self, exp: Experience) -> None:
        item = self._item(exp)
        with boundary("put experience"):
            item.save()  # a whole-item replace: index attributes it no longer has are gone too

    def put_all(self, exps: Sequence[Experience]) -> None:
        """All of them or none: one DynamoDB transaction (at most 100 items)."""
        from pynamodb.transactions import TransactWrite

        items = [self._item(e) for e in exps]
        if not items:
            return
        if len(items) > 100:
            raise ValueError(f"{len(items)} experiences in one transaction; DynamoDB takes at most 100")
        with boundary("put experiences"):
            with TransactWrite(connection=self.tables.connection) as tx:
                for item in items:
                    tx.save(item)

    def archive_if_unchanged(self, read: Experience, archived: Experience) -> bool:
        """One conditional put: the stored document must still be the one ``read`` was decoded
        from and the lesson active (whatever wrote it since, feedback, a merge, a forget, changed
        the document). The put takes the archived item out of the sparse indexes, as any put does."""
        if archived.status is ACTIVE or (archived.tenant_id, archived.experience_id) != (read.tenant_id, read.experience_id):
            raise ValueError("archive_if_unchanged takes the same lesson, archived")
        # the archived copy takes the next revision, as any write: a writer holding ``read`` then fails its own
        item, I = self._item(replace(archived, revision=read.revision + 1)), self.Item
        condition = self._read_with(read) & (I.status == ACTIVE.value) & (I.doc == dumps(to_doc(read)))
        with boundary("archive experience"):
            return written_if(lambda: item.save(condition=condition))

    def put_if(self, exp: Experience) -> Experience | None:
        written = replace(exp, revision=exp.revision + 1)
        item = self._item(written)
        with boundary("put experience if unchanged"):
            return written if written_if(lambda: item.save(condition=self._read_with(exp))) else None

    def put_all_if(self, exps: Sequence[Experience]) -> builtins.list[Experience] | None:
        from pynamodb.exceptions import TransactWriteError
        from pynamodb.transactions import TransactWrite

        written = [replace(e, revision=e.revision + 1) for e in exps]
        items = [self._item(e) for e in written]
        if not items:
            return []
        if len(items) > 100:
            raise ValueError(f"{len(items)} experiences in one transaction; DynamoDB takes at most 100")
        with boundary("put experiences if unchanged"):
            try:
                with TransactWrite(connection=self.tables.connection) as tx:
                    for exp, item in zip(exps, items):
                        tx.save(item, condition=self._read_with(exp))
            except TransactWriteError as exc:
                if CONDITION_FAILED in cancellation_codes(exc):
                    return None
                raise
        return written

    def get(self, tenant_id: str, experience_id: str) -> Experience:
        with boundary("get experience"):
            try:
                return self._experience(self.Item.get(tenant_id, experience_id, consistent_read=True))
            except self.Item.DoesNotExist as exc:
                raise NotFound(f"experience {experience_id} not found") from exc

    def get_many(self, tenant_id: str, ids: Sequence[str]) -> dict[str, Experience]:
        keys = [(tenant_id, i) for i in dict.fromkeys(ids)]
        if not keys:
            return {}
        with boundary("get_many experiences"):
            found = [self._experience(i) for i in self.Item.batch_get(keys, consistent_read=True)]
        return {e.experience_id: e for e in found}

    def recall_candidates(self, tenant_id: str, ids: Sequence[str]) -> dict[str, Candidate]:
        # an item is one attribute of JSON: the whole lesson is read anyway, and kept for the hits
        return {i: Candidate.of(e) for i, e in self.get_many(tenant_id, ids).items()}

    def list(
        self,
        tenant_id: str,
        *,
        agent_id: str | None = None,
        status: ExperienceStatus | None = None,
        limit: int = 50,
        cursor: str | None = None,
    ) -> Page:
        I = self.Item
        base = {"tenant_id": tenant_id}
        if agent_id is not None:
            index, hash_name, hash_value = I.by_agent, "tenant_agent", compose(tenant_id, agent_id)
        elif status is not None:
            index, hash_name, hash_value = I.by_status, "tenant_status", compose(tenant_id, status.value)
        else:
            index, hash_name, hash_value = I.by_created, "tenant_id", tenant_id
        flt = (I.status == status.value) if (agent_id is not None and status is not None) else None
        names = {hash_name, "created_sk", "tenant_id", "experience_id"}
        start = None
        if cursor:
            key = decode_key_cursor(cursor, names, {**base, hash_name: hash_value})
            start = {name: {"S": value} for name, value in key.items()}
        with boundary("list experiences"):
            found = list(
                index.query(
                    hash_value,
                    filter_condition=flt,
                    scan_index_forward=False,
                    limit=limit + 1,  # one more than asked: a full last page then has no cursor
                    last_evaluated_key=start,
                )
            )
        items = found[:limit]
        next_cursor = None
        if len(found) > limit and items:
            last = items[-1]
            next_cursor = encode_cursor({name: getattr(last, name) for name in sorted(names)})
        return Page([self._experience(i) for i in items], next_cursor)

    def find_active_by_fingerprint(
        self, tenant_id: str, fingerprint: str, agent_id: str | None, user_id: str | None
    ) -> Experience | None:
        with boundary("find by fingerprint"):
            items = list(self.Item.by_fingerprint.query(scope_key(tenant_id, agent_id, user_id, fingerprint), limit=1))
        return self._experience(items[0]) if items else None

    def find_forgotten_by_fingerprint(
        self, tenant_id: str, fingerprint: str, agent_id: str | None, user_id: str | None
    ) -> Experience | None:
        with boundary("find forgotten by fingerprint"):
            key = scope_key(tenant_id, agent_id, user_id, fingerprint, FORGOTTEN)
            items = list(self.Item.by_fingerprint.query(key, limit=1))
        return self._experience(items[0]) if items else None

    def find_active_by_situation(
        self, tenant_id: str, situation_key: str, agent_id: str | None, user_id: str | None
    ) -> builtins.list[Experience]:  # ``list`` names a method here
        with boundary("find by situation"):
            items = list(self.Item.by_situation.query(scope_key(tenant_id, agent_id, user_id, situation_key)))
        return [self._experience(i) for i in items]  # oldest first: the index sorts by created_sk

    def scan_active(self, limit: int = 500, cursor: str | None = None) -> Page:
        I = self.Item
        after = compose(*decode_pair_cursor(cursor)) if cursor else None
        with boundary("scan_active"):
            shards = [
                I.active.query(shard, I.active_sk > after if after else None, limit=limit + 1)
                for shard in self.tables.shards
            ]
            # each shard comes sorted by tenant#id; merged, they are in (tenant, id) order overall
            found = list(islice(heapq.merge(*shards, key=lambda i: i.active_sk), limit + 1))
        items = found[:limit]
        next_cursor = encode_cursor([items[-1].tenant_id, items[-1].experience_id]) if len(found) > limit and items else None
        return Page([self._experience(i) for i in items], next_cursor)

    def count_by_status(self, tenant_id: str) -> dict[str, int]:
        with boundary("count experiences"):
            counts = {s.value: self.Item.by_status.count(compose(tenant_id, s.value)) for s in ExperienceStatus}
        return {status: n for status, n in counts.items() if n}
