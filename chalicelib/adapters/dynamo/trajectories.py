"""``ports.TrajectoryStore`` on DynamoDB.

A trajectory is one item; its events live in the events table under ``<tenant>#<trajectory>``,
one item per event (``seq#<seq>``) plus an idempotency marker per event id (``evt#<event_id>``).
An append is one TransactWriteItems: the events, their markers (each conditional on not existing)
and the trajectory's ``event_count`` update, conditional on ``status = open`` and on the count read
before. So seqs stay unique and dense under concurrent appends (the loser re-reads and retries),
a finalize that commits first turns the append into a Conflict, and a retried request stores
nothing twice.
"""
from __future__ import annotations

import json
import random
import time
from dataclasses import replace
from datetime import datetime
from typing import Any, Iterator, Sequence

from pynamodb.exceptions import TransactWriteError, UpdateError
from pynamodb.expressions.condition import Condition
from pynamodb.expressions.update import Action
from pynamodb.transactions import TransactWrite

from chalicelib.adapters.codec import event_from_doc, to_doc, trajectory_from_doc
from chalicelib.adapters.cursors import decode_parts, encode_cursor
from chalicelib.adapters.dynamo.errors import CONDITION_FAILED, StoreUnavailable, boundary, cancellation_codes, failed_condition, written_if
from chalicelib.adapters.dynamo.items import (
    ITEM_DOC_BUDGET,
    TRANSACTION_MAX_BYTES,
    TRANSACTION_MAX_ITEMS,
    compose,
    dumps,
    fit,
    fit_fields,
    shard_of,
    size_of,
    time_key,
)
from chalicelib.adapters.dynamo.models import DynamoTables
from chalicelib.domain.anomaly import seq_windows
from chalicelib.domain.errors import Conflict, InvalidInput, NotFound, TrajectoryFull, expired_message
from chalicelib.domain.models import Event, ReviewSummary, Trajectory, TrajectoryStatus
from chalicelib.ports import AppendResult, TrajectorySummary, tools_that_worked

# kept on the item as attributes of their own (conditions and updates touch them); the rest of the
# trajectory is fixed at creation and kept as one JSON document
MUTABLE = ("status", "event_count", "updated_at", "outcome", "feedback", "finalized_at", "experience_ids", "review")
SEQ_WIDTH = 12
MAX_ATTEMPTS = 40  # of an optimistic write that lost a race


def events_pk(tenant_id: str, trajectory_id: str) -> str:
    return compose(tenant_id, trajectory_id)


def seq_sk(seq: int) -> str:
    return f"seq#{seq:0{SEQ_WIDTH}d}"


def marker_sk(event_id: str) -> str:
    return f"evt#{event_id}"


def _backoff(attempt: int) -> None:
    time.sleep(random.uniform(0, min(0.1, 0.005 * 2 ** attempt)))


class DynamoTrajectoryStore:
    def __init__(self, tables: DynamoTables) -> None:
        self.tables = tables
        self.Traj = tables.trajectories
        self.Event = tables.events

    # --- items <-> domain -----------------------------------------------------------------------

    def _status_attrs(self, tenant_id: str, trajectory_id: str, status: TrajectoryStatus, at: datetime) -> list:
        """SET/REMOVE actions that keep the index attributes in step with ``status``."""
        T = self.Traj
        actions = [T.status.set(status.value), T.tenant_status.set(compose(tenant_id, status.value))]
        if status is TrajectoryStatus.FINALIZED:  # in the outbox only while finalized
            key = compose(tenant_id, trajectory_id)
            actions += [T.outbox_shard.set(shard_of(key, self.tables.config.shards)), T.outbox_sk.set(time_key(at, tenant_id, trajectory_id))]
        else:
            actions += [T.outbox_shard.remove(), T.outbox_sk.remove()]
        return actions

    @staticmethod
    def _trajectory(item: Any) -> Trajectory:
        doc = json.loads(item.doc)
        doc.update(
            status=item.status,
            event_count=int(item.event_count),
            updated_at=item.updated_at,
            outcome=item.outcome,
            feedback=item.feedback,
            finalized_at=item.finalized_at,
            experience_ids=json.loads(item.experience_ids) if item.experience_ids else [],
            review=json.loads(item.review) if item.review else None,
        )
        return trajectory_from_doc(doc)

    def _item(self, tenant_id: str, trajectory_id: str) -> Any:
        try:
            return self.Traj.get(tenant_id, trajectory_id, consistent_read=True)
        except self.Traj.DoesNotExist as exc:
            raise NotFound(f"trajectory {trajectory_id} not found") from exc

    # --- the port -------------------------------------------------------------------------------

    def create(self, traj: Trajectory) -> tuple[Trajectory, bool]:
        traj = replace(traj, event_count=0)
        doc = {k: v for k, v in to_doc(traj).items() if k not in MUTABLE}
        doc = fit_fields(doc, ("metadata",), ITEM_DOC_BUDGET // 4)
        item = self.Traj(
            traj.tenant_id,
            traj.trajectory_id,
            doc=dumps(doc),
            status=traj.status.value,
            event_count=0,
            updated_at=traj.updated_at.isoformat(),
            outcome=traj.outcome,
            feedback=traj.feedback,
            finalized_at=traj.finalized_at.isoformat() if traj.finalized_at else None,
            experience_ids=dumps(traj.experience_ids),
            review=dumps(fit(traj.review, ITEM_DOC_BUDGET // 2)) if traj.review is not None else None,
            rev=0,
            tenant_status=compose(traj.tenant_id, traj.status.value),
        )
        with boundary("create trajectory"):
            if not written_if(lambda: item.save(condition=self.Traj.tenant_id.does_not_exist())):
                return self._trajectory(self._item(traj.tenant_id, traj.trajectory_id)), False
        return self._trajectory(item), True

    def get(self, tenant_id: str, trajectory_id: str) -> Trajectory:
        with boundary("get trajectory"):
            return self._trajectory(self._item(tenant_id, trajectory_id))

    def append_events(
        self, tenant_id: str, trajectory_id: str, events: Sequence[Event], now: datetime, max_events: int | None = None
    ) -> AppendResult:
        """Atomic per transaction. A batch too big for one (over 49 events or about 3.5 MB) goes in
        several, in order: if one of them fails, the ones before it stay stored, and the client's
        retry of the whole batch counts them as duplicates. ``max_events`` is checked for the whole
        batch first, then by each transaction (a concurrent append may have taken the room)."""
        with boundary("append_events"):
            first: dict[str, Event] = {}
            for event in events:  # a repeat inside the batch is a duplicate of its first copy
                first.setdefault(event.event_id, event)
            unique = list(first.values())
            accepted: list[str] = []
            if not unique:
                self._open_item(tenant_id, trajectory_id)
            elif max_events is not None:
                count = int(self._open_item(tenant_id, trajectory_id).event_count)
                if count + len(unique) > max_events:
                    new = len(first) - len(self._stored_ids(tenant_id, trajectory_id, list(first)))
                    if count + new > max_events:
                        raise TrajectoryFull(trajectory_id, count, new, max_events)
            for chunk in _chunks(unique, [_event_doc(e) for e in unique]):
                accepted += self._append_chunk(tenant_id, trajectory_id, chunk, now, max_events)
        return AppendResult(accepted=len(accepted), duplicates=len(events) - len(accepted), accepted_ids=tuple(accepted))

    def _open_item(self, tenant_id: str, trajectory_id: str) -> Any:
        item = self._item(tenant_id, trajectory_id)
        if item.status != TrajectoryStatus.OPEN.value:
            raise Conflict(f"trajectory {trajectory_id} is {item.status}; it takes no more events")
        return item

    def _stored_ids(self, tenant_id: str, trajectory_id: str, event_ids: list[str]) -> set[str]:
        return set(self._seqs(tenant_id, trajectory_id, event_ids))

    def _seqs(self, tenant_id: str, trajectory_id: str, event_ids: list[str]) -> dict[str, int]:
        """event id -> seq of the listed events that are stored (from their idempotency markers)."""
        pk = events_pk(tenant_id, trajectory_id)
        keys = [(pk, marker_sk(i)) for i in dict.fromkeys(event_ids)]
        return {m.event_id: int(m.seq) for m in self.Event.batch_get(keys, consistent_read=True)}

    def events_around(self, tenant_id: str, trajectory_id: str, event_ids: Sequence[str], before: int) -> list[Event]:
        pk = events_pk(tenant_id, trajectory_id)
        with boundary("events_around"):
            seqs = self._seqs(tenant_id, trajectory_id, list(event_ids)).values()
            out: list[Event] = []
            for lo, hi in seq_windows(list(seqs), before):
                items = self.Event.query(pk, self.Event.sk.between(seq_sk(lo), seq_sk(hi)), consistent_read=True)
                out += [event_from_doc(json.loads(i.doc)) for i in items]
            return out

    def events_page(self, tenant_id: str, trajectory_id: str, after_seq: int, limit: int) -> list[Event]:
        with boundary("events_page"):
            if limit < 1:
                return []
            # seqs run 1..event_count without a gap: the page is one range of sort keys
            items = self.Event.query(events_pk(tenant_id, trajectory_id),
                                     self.Event.sk.between(seq_sk(max(0, after_seq) + 1), seq_sk(max(0, after_seq) + limit)),
                                     consistent_read=True)
            return [event_from_doc(json.loads(i.doc)) for i in items]

    def trajectory_summary(self, tenant_id: str, trajectory_id: str, tail: int) -> TrajectorySummary:
        with boundary("trajectory_summary"):
            item = self._item(tenant_id, trajectory_id)
            count = int(item.event_count)
            recent: tuple[Event, ...] = ()
            if tail > 0 and count:
                lo = max(1, count - tail + 1)
                items = self.Event.query(events_pk(tenant_id, trajectory_id), self.Event.sk.between(seq_sk(lo), seq_sk(count)),
                                         consistent_read=True)
                recent = tuple(event_from_doc(json.loads(i.doc)) for i in items)
            return TrajectorySummary(frozenset(item.tools_ok or ()), recent, count)

    def _append_chunk(
        self, tenant_id: str, trajectory_id: str, chunk: list[tuple[Event, dict[str, Any]]], now: datetime,
        max_events: int | None = None,
    ) -> list[str]:
        pk = events_pk(tenant_id, trajectory_id)
        E, T = self.Event, self.Traj
        for attempt in range(MAX_ATTEMPTS):
            item = self._open_item(tenant_id, trajectory_id)
            expires = _expiry(item)
            if expires is not None and expires <= now:
                raise Conflict(expired_message(trajectory_id, expires.isoformat()))
            stored = self._stored_ids(tenant_id, trajectory_id, [e.event_id for e, _ in chunk])
            new = [(e, doc) for e, doc in chunk if e.event_id not in stored]
            if not new:
                return []
            count = int(item.event_count)
            if max_events is not None and count + len(new) > max_events:
                raise TrajectoryFull(trajectory_id, count, len(new), max_events)
            try:
                with TransactWrite(connection=self.tables.connection) as tx:
                    for offset, (event, doc) in enumerate(new, start=1):
                        seq = count + offset
                        doc = {**doc, "seq": seq}
                        common: dict[str, Any] = dict(tenant_id=tenant_id, trajectory_id=trajectory_id, event_id=event.event_id, seq=seq,
                                                      expires=expires)
                        tx.save(E(pk, seq_sk(seq), doc=dumps(doc), **common), condition=E.pk.does_not_exist())
                        tx.save(E(pk, marker_sk(event.event_id), **common), condition=E.pk.does_not_exist())
                    actions: list[Action] = [T.event_count.set(count + len(new)), T.updated_at.set(now.isoformat()), T.rev.add(1)]
                    worked = tools_that_worked(e for e, _ in new)
                    if worked:  # the tools that worked so far, for advise to read without the events
                        actions.append(T.tools_ok.add(worked))
                    tx.update(
                        T(tenant_id, trajectory_id),
                        actions=actions,
                        condition=(T.status == TrajectoryStatus.OPEN.value) & (T.event_count == count),
                    )
                return [e.event_id for e, _ in new]
            except TransactWriteError as exc:
                codes = cancellation_codes(exc)
                if CONDITION_FAILED not in codes and "TransactionConflict" not in codes:
                    raise
                # a concurrent append or finalize won: the next round re-reads status, count and markers
                _backoff(attempt)
        raise StoreUnavailable(f"append to trajectory {trajectory_id}: too much contention, gave up after {MAX_ATTEMPTS} tries")

    def events(self, tenant_id: str, trajectory_id: str) -> list[Event]:
        with boundary("events"):
            items = self.Event.query(events_pk(tenant_id, trajectory_id), self.Event.sk.startswith("seq#"), consistent_read=True)
            return [event_from_doc(json.loads(i.doc)) for i in items]

    def _set_status(self, tenant_id: str, trajectory_id: str, status: TrajectoryStatus, now: datetime,
                    actions: list[Action], condition: Condition) -> Any:
        """The trajectory's item moved to ``status`` with ``actions`` (its updated time and version
        too) when ``condition`` holds; UpdateError when it does not."""
        T = self.Traj
        item = T(tenant_id, trajectory_id)
        item.update(
            actions=[*self._status_attrs(tenant_id, trajectory_id, status, now), *actions,
                     T.updated_at.set(now.isoformat()), T.rev.add(1)],
            condition=condition,
        )
        return item

    def finalize(self, tenant_id: str, trajectory_id: str, outcome: str, feedback: str | None, now: datetime) -> Trajectory:
        T = self.Traj
        with boundary("finalize"):
            try:
                item = self._set_status(
                    tenant_id, trajectory_id, TrajectoryStatus.FINALIZED, now,
                    [T.outcome.set(outcome), T.feedback.set(feedback) if feedback is not None else T.feedback.remove(),
                     T.finalized_at.set(now.isoformat())],
                    T.status == TrajectoryStatus.OPEN.value,
                )
            except UpdateError as exc:
                if not failed_condition(exc):
                    raise
                current = self._item(tenant_id, trajectory_id)  # NotFound when there is none
                raise Conflict(f"trajectory {trajectory_id} is already {current.status}") from exc
            return self._trajectory(item)

    def save_review(
        self, tenant_id: str, trajectory_id: str, status: str, experience_ids: list[str], review: dict, now: datetime
    ) -> Trajectory:
        T = self.Traj
        with boundary("save_review"):
            try:
                item = self._set_status(
                    tenant_id, trajectory_id, TrajectoryStatus(status), now,
                    [T.experience_ids.set(dumps(list(experience_ids))), T.review.set(dumps(fit(review, ITEM_DOC_BUDGET // 2)))],
                    T.tenant_id.exists(),
                )
            except UpdateError as exc:
                if failed_condition(exc):
                    raise NotFound(f"trajectory {trajectory_id} not found") from exc
                raise
            return self._trajectory(item)

    def add_local_review(
        self, tenant_id: str, trajectory_id: str, experience_ids: list[str], summary: dict, now: datetime
    ) -> Trajectory:
        T = self.Traj
        with boundary("add_local_review"):
            for attempt in range(MAX_ATTEMPTS):
                current = self._item(tenant_id, trajectory_id)
                traj = self._trajectory(current)
                review = ReviewSummary.with_local_review(traj.review, summary)
                ids = list(dict.fromkeys([*traj.experience_ids, *experience_ids]))
                item = T(tenant_id, trajectory_id)
                actions: list[Action] = [
                    T.review.set(dumps(fit(review, ITEM_DOC_BUDGET // 2))),
                    T.experience_ids.set(dumps(ids)),
                    T.updated_at.set(now.isoformat()),
                    T.rev.add(1),
                ]
                if written_if(lambda: item.update(actions=actions, condition=T.rev == current.rev)):  # nobody wrote since the read
                    return self._trajectory(item)
                _backoff(attempt)
        raise StoreUnavailable(f"local review of {trajectory_id}: too much contention")

    def purge_expired_events(self, now: datetime, limit: int) -> int:
        return 0  # TTL on each event's ``expires`` deletes them, at no charge

    def finalized_unreviewed(self, limit: int = 1000) -> list[tuple[str, str]]:
        with boundary("finalized_unreviewed"):
            out: list[tuple[str, str]] = []
            for shard in self.tables.shards:  # the outbox is swept whole; order across shards does not matter
                for item in self.Traj.outbox.query(shard, limit=limit - len(out)):
                    out.append((item.tenant_id, item.trajectory_id))
                if len(out) >= limit:
                    break
            return out

    def statuses_page(self, tenant_id: str, limit: int, cursor: str | None = None) -> tuple[dict[str, int], str | None]:
        T = self.Traj
        after = decode_parts(cursor, (str,))[0] if cursor else None
        if after is not None and not after:
            raise InvalidInput("invalid cursor")
        with boundary("statuses_page"):
            # the tenant's partition in id order, Limit bounding what the one query reads
            found = list(T.query(tenant_id, T.trajectory_id > after if after else None, limit=limit + 1, page_size=limit + 1,
                                 attributes_to_get=["tenant_id", "trajectory_id", "status"]))
        counts: dict[str, int] = {}
        for item in found[:limit]:
            counts[item.status] = counts.get(item.status, 0) + 1
        return counts, encode_cursor([found[limit - 1].trajectory_id]) if len(found) > limit else None

    def count_by_status(self, tenant_id: str) -> dict[str, int]:
        with boundary("count_by_status"):
            counts = {s.value: self.Traj.by_status.count(compose(tenant_id, s.value)) for s in TrajectoryStatus}
        return {status: n for status, n in counts.items() if n}


def _expiry(item: Any) -> datetime | None:
    """The trajectory item's ``events_expire_at`` (kept in its doc, fixed at creation)."""
    value = json.loads(item.doc).get("events_expire_at")
    return datetime.fromisoformat(value) if value else None


def _event_doc(event: Event) -> dict[str, Any]:
    """The stored document of an event: its content and context cut to fit an item, marked if cut."""
    return fit_fields(to_doc(event), ("content", "context"), ITEM_DOC_BUDGET)


def _chunks(events: list[Event], docs: list[dict[str, Any]]) -> Iterator[list[tuple[Event, dict[str, Any]]]]:
    """Groups that fit one transaction: two items per event plus the trajectory update, under 4 MB."""
    chunk: list[tuple[Event, dict[str, Any]]] = []
    size = 0
    for event, doc in zip(events, docs):
        doc_size = size_of(doc) + 200  # keys and attribute names beside the doc
        if chunk and (2 * (len(chunk) + 1) + 1 > TRANSACTION_MAX_ITEMS or size + doc_size > TRANSACTION_MAX_BYTES):
            yield chunk
            chunk, size = [], 0
        chunk.append((event, doc))
        size += doc_size
    if chunk:
        yield chunk
