"""``ports.ReviewQueue`` on DynamoDB: one item per (tenant, trajectory, kind), leased by conditional
updates.

A job that is pending or leased carries ``due_shard``/``due_sk``, which put it in the sparse
``due`` index, in its tenant's partition (``q#<tenant>``, by due time); done and dead jobs drop
them. Tenants take turns: each tenant with queued jobs has a turn item (``~turn``) in the same
index under ``turns#<shard>``, sorted by when the tenant was last served. ``claim`` reads the
least recently served tenants' turns, the oldest due jobs of each, and leases them in turns
(``fair_claim.in_turns``), each with an update conditional on the state, due time and attempt
count it read, so two workers never lease the same job. A tenant's turn goes once its partition
is empty (conditional on no enqueue since). So one tenant's thousands of jobs never stand in
front of another tenant's job. In the cloud the table's stream starts the review Lambda on each
enqueue.

A dead job stays in the same sparse index under partitions of its own (``dead#<shard>``, sorted by
when it was given up), which ``claim`` and ``pending`` never read: an operator lists dead jobs
without a scan of the table and without another index to deploy. Jobs queued by an earlier
version in the shared shard partitions (``<shard>``) are counted and released where they are, and
moved into their tenant's partition by ``adopt_earlier_jobs`` (the sweeper's, every minute): a
claim does not read those partitions, four queries on every review invocation for jobs nothing
writes any more.
"""
from __future__ import annotations

import heapq
import json
from datetime import datetime, timedelta, timezone
from itertools import islice
from typing import Any, Sequence

from pynamodb.exceptions import DoesNotExist

from chalicelib.adapters.dynamo.errors import boundary, written_if
from chalicelib.adapters.dynamo.items import compose, micros, shard_of, us_key, us_key_bound
from chalicelib.adapters.dynamo.models import DynamoTables
from chalicelib.adapters.fair_claim import in_turns
from chalicelib.ports import MAX_TRIGGERS, DeadJob, ReviewJob

PENDING, LEASED, DONE, DEAD = "pending", "leased", "done", "dead"
DEAD_SHARD = "dead#"  # prefix of the due index's partitions that hold dead jobs
QUEUE = "q#"  # prefix of a tenant's partition of due jobs
TURNS = "turns#"  # prefix of the partitions of tenants' turns
TURN = "~turn"  # the range key of a tenant's turn item (a job key always holds a '#')
TURN_STATE = "turn"
TENANTS_PER_CLAIM = 32  # turns read by one claim, the least recently served first
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


class DynamoReviewQueue:
    def __init__(self, tables: DynamoTables) -> None:
        self.tables = tables
        self.Job = tables.jobs

    def _due(self, tenant_id: str, trajectory_id: str, kind: str, due_us: int) -> list:
        J = self.Job
        return [J.due_us.set(due_us), J.due_shard.set(QUEUE + tenant_id), J.due_sk.set(us_key(due_us, tenant_id, trajectory_id, kind))]

    def _touch_turn(self, tenant_id: str, served_us: int | None = None) -> None:
        """The tenant has queued jobs: its turn exists (a new one sorts first, never served;
        ``served_us``: it goes to the back) and its version moves, so a claim that saw the queue
        empty does not remove it."""
        J = self.Job
        key = us_key(served_us, tenant_id, TURN) if served_us is not None else J.due_sk | us_key(0, tenant_id, TURN)
        J(tenant_id, TURN).update(actions=[
            J.trajectory_id.set(J.trajectory_id | ""), J.kind.set(TURN), J.state.set(TURN_STATE), J.due_us.set(J.due_us | 0),
            J.due_shard.set(TURNS + shard_of(tenant_id, self.tables.config.shards)), J.due_sk.set(key), J.attempts.add(1),
        ])

    def _legacy_shards(self) -> list[str]:
        return list(self.tables.shards)

    def _queues(self) -> list[str]:
        """Every partition that may hold pending or leased jobs: each queued tenant's, and the
        shared shards of an earlier version."""
        J = self.Job
        turns = [t.tenant_id for s in self.tables.shards for t in J.due.query(TURNS + s)]
        return [QUEUE + t for t in turns] + self._legacy_shards()

    def _not_due(self) -> list:
        return [self.Job.due_shard.remove(), self.Job.due_sk.remove()]

    def _update(self, item: Any, actions: list, condition: Any) -> bool:
        """True if the update was made, False if its condition did not hold."""
        return written_if(lambda: item.update(actions=actions, condition=condition))

    def enqueue(self, tenant_id: str, trajectory_id: str, kind: str, now: datetime) -> None:
        J = self.Job
        with boundary("enqueue"):
            # new, or a finished job sent round again; a pending or leased one stays as it is
            self._update(
                J(tenant_id, compose(trajectory_id, kind)),
                [
                    J.trajectory_id.set(trajectory_id),
                    J.kind.set(kind),
                    J.state.set(PENDING),
                    J.attempts.set(0),
                    *self._due(tenant_id, trajectory_id, kind, micros(now)),
                ],
                J.tenant_id.does_not_exist() | J.state.is_in(DONE, DEAD),
            )
            self._touch_turn(tenant_id)

    def enqueue_local(
        self, tenant_id: str, trajectory_id: str, triggers: Sequence[str], now: datetime, max_jobs: int,
        max_triggers: int = MAX_TRIGGERS,
    ) -> bool:
        if not triggers:
            return False
        J = self.Job
        with boundary("enqueue_local"):
            for _ in range(20):  # a claim or another append may win the race: read again
                local = list(J.query(tenant_id, J.job.startswith(compose(trajectory_id, "local:")), consistent_read=True))
                pending = next((j for j in local if j.state == PENDING and int(j.attempts) == 0), None)
                if pending is not None:  # not claimed yet: the new triggers join it
                    known = json.loads(pending.triggers or "[]")
                    merged = list(dict.fromkeys([*known, *triggers]))[:max_triggers]
                    if len(merged) == len(known):
                        return False
                    if self._update(
                        pending, [J.triggers.set(json.dumps(merged))],
                        (J.state == PENDING) & (J.attempts == 0) & (J.triggers == pending.triggers),
                    ):
                        return True
                    continue
                if len(local) >= max_jobs:
                    return False
                kind = f"local:{triggers[0]}"
                if self._update(
                    J(tenant_id, compose(trajectory_id, kind)),
                    [
                        J.trajectory_id.set(trajectory_id), J.kind.set(kind), J.state.set(PENDING), J.attempts.set(0),
                        J.triggers.set(json.dumps(list(dict.fromkeys(triggers))[:max_triggers])),
                        *self._due(tenant_id, trajectory_id, kind, micros(now)),
                    ],
                    J.tenant_id.does_not_exist(),
                ):
                    self._touch_turn(tenant_id)
                    return True
                if any(j.kind == kind for j in local):  # this trigger's job already ran
                    return False
        return False

    def claim(self, now: datetime, lease_seconds: float, limit: int = 10) -> list[ReviewJob]:
        J = self.Job
        now_us = micros(now)
        until_us = now_us + int(lease_seconds * 1_000_000)
        jobs: list[ReviewJob] = []
        if limit <= 0:
            return jobs
        bound = us_key_bound(now_us)
        with boundary("claim"):
            # each shard's first TENANTS_PER_CLAIM turns hold the merge's first TENANTS_PER_CLAIM; without
            # the limit each query read a page of up to 1 MB (every tenant's turn, at 10k tenants)
            turns = list(islice(heapq.merge(*[J.due.query(TURNS + s, limit=TENANTS_PER_CLAIM) for s in self.tables.shards],
                                            key=lambda t: t.due_sk),
                                TENANTS_PER_CLAIM))
            due: dict[str, list] = {}
            served: dict[str, int] = {}
            for turn in turns:
                queued = list(J.due.query(QUEUE + turn.tenant_id, J.due_sk < bound, limit=limit))
                if queued:
                    due[turn.tenant_id] = queued
                    served[turn.tenant_id] = int(turn.due_sk.split("#", 1)[0])
                elif next(iter(J.due.query(QUEUE + turn.tenant_id, limit=1)), None) is None:
                    # nothing queued: the turn goes, unless an enqueue touched it since it was read
                    self._delete_turn(turn)
                else:
                    # queued, none due yet (a trace's idle timeout, a retry's back-off): the turn goes
                    # to the back, or TENANTS_PER_CLAIM such tenants would hide every tenant past them
                    self._served(turn.tenant_id, now_us)
            last_served: dict[str, int] = {}
            for job in in_turns(due, served, limit):
                leased = self._update(
                    job,
                    [J.state.set(LEASED), J.attempts.add(1), *self._due(job.tenant_id, job.trajectory_id, job.kind, until_us)],
                    # what was read still holds: no other worker leased it meanwhile
                    J.state.is_in(PENDING, LEASED) & (J.due_us <= now_us) & (J.attempts == job.attempts),
                )
                if leased:
                    triggers = tuple(json.loads(job.triggers)) if job.triggers else ()
                    jobs.append(ReviewJob(job.tenant_id, job.trajectory_id, job.kind, int(job.attempts), triggers))
                    last_served[job.tenant_id] = now_us + len(jobs)
            # each tenant's turn goes to the back once, at the position of its last job of the claim
            for tenant_id, at_us in last_served.items():
                self._served(tenant_id, at_us)
        return jobs

    def adopt_earlier_jobs(self) -> int:
        """Jobs an earlier version queued in the shared shard partitions move to their tenant's
        partition, due when they were, and their tenant gets a turn: from then on claims see them."""
        J = self.Job
        moved = 0
        with boundary("adopt_earlier_jobs"):
            for shard in self._legacy_shards():
                for job in list(J.due.query(shard)):
                    if self._update(
                        job, self._due(job.tenant_id, job.trajectory_id, job.kind, int(job.due_us)),
                        # not claimed, retried or finished meanwhile (by a worker of the earlier version)
                        (J.due_shard == shard) & (J.attempts == job.attempts) & (J.state == job.state),
                    ):
                        moved += 1
                        self._touch_turn(job.tenant_id)
        return moved

    def _served(self, tenant_id: str, at_us: int) -> None:
        """The tenant's turn goes to the back: it was served at ``at_us``."""
        self._touch_turn(tenant_id, at_us)

    def _delete_turn(self, turn: Any) -> None:
        J = self.Job
        written_if(lambda: turn.delete(condition=J.attempts == turn.attempts))

    def _finish(self, job: ReviewJob, actions: list, operation: str) -> None:
        J = self.Job
        with boundary(operation):
            self._update(J(job.tenant_id, compose(job.trajectory_id, job.kind)), actions, J.tenant_id.exists())

    def complete(self, job: ReviewJob) -> None:
        self._finish(job, [self.Job.state.set(DONE), self.Job.last_error.remove(), *self._not_due()], "complete")

    def retry_later(self, job: ReviewJob, error: str, now: datetime, delay_seconds: float) -> None:
        due_us = micros(now) + int(delay_seconds * 1_000_000)
        J = self.Job
        actions = [J.state.set(PENDING), J.last_error.set(error), *self._due(job.tenant_id, job.trajectory_id, job.kind, due_us)]
        self._finish(job, actions, "retry_later")
        with boundary("retry_later"):
            self._touch_turn(job.tenant_id)

    def _dead_at(self, tenant_id: str, trajectory_id: str, kind: str, failed_us: int) -> list:
        J = self.Job
        shard = DEAD_SHARD + shard_of(compose(tenant_id, trajectory_id, kind), self.tables.config.shards)
        return [J.due_us.set(failed_us), J.due_shard.set(shard), J.due_sk.set(us_key(failed_us, tenant_id, trajectory_id, kind))]

    def dead(self, job: ReviewJob, error: str, now: datetime | None = None) -> None:
        J = self.Job
        if now is None:  # the end of its last lease, which the item still holds
            with boundary("dead"):
                try:
                    failed_us = int(J.get(job.tenant_id, compose(job.trajectory_id, job.kind)).due_us)
                except DoesNotExist:
                    return
        else:
            failed_us = micros(now)
        actions = [J.state.set(DEAD), J.last_error.set(error), *self._dead_at(job.tenant_id, job.trajectory_id, job.kind, failed_us)]
        self._finish(job, actions, "dead")

    def dead_jobs(self, tenant_id: str | None = None, limit: int = 100) -> list[DeadJob]:
        J = self.Job
        if limit <= 0:
            return []
        only = (J.tenant_id == tenant_id) if tenant_id is not None else None
        with boundary("dead_jobs"):
            shards = [J.due.query(DEAD_SHARD + s, filter_condition=only, page_size=max(limit, 10)) for s in self.tables.shards]
            out = []
            for job in heapq.merge(*shards, key=lambda j: j.due_sk):
                out.append(DeadJob(job.tenant_id, job.trajectory_id, job.kind, int(job.attempts), job.last_error,
                                   _EPOCH + timedelta(microseconds=int(job.due_us))))
                if len(out) == limit:
                    break
        return out

    def redrive(self, jobs: Sequence[DeadJob], now: datetime) -> int:
        J = self.Job
        redriven = 0
        with boundary("redrive"):
            for j in jobs:
                if self._update(
                    J(j.tenant_id, compose(j.trajectory_id, j.kind)),
                    [J.state.set(PENDING), J.attempts.set(0), *self._due(j.tenant_id, j.trajectory_id, j.kind, micros(now))],
                    J.state == DEAD,
                ):
                    redriven += 1
                    self._touch_turn(j.tenant_id)
        return redriven

    def pending(self) -> int:
        with boundary("pending"):
            return sum(self.Job.due.count(q) for q in self._queues())

    def release_leases(self, now: datetime) -> int:
        J = self.Job
        released = 0
        with boundary("release_leases"):
            for queue in self._queues():
                for job in list(J.due.query(queue, filter_condition=J.state == LEASED)):
                    released += self._update(
                        job,
                        [J.state.set(PENDING), *self._due(job.tenant_id, job.trajectory_id, job.kind, micros(now))],
                        J.state == LEASED,
                    )
        return released
