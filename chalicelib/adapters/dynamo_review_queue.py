"""``ports.ReviewQueue`` on DynamoDB: one item per (tenant, trajectory, kind), leased by conditional
updates.

A job that is pending or leased carries ``due_shard``/``due_sk``, which put it in the sparse
``due`` index; done and dead jobs drop them. ``claim`` reads due candidates from the index (oldest
first, merged over the shards) and leases each with an update conditional on the state, due time
and attempt count it read, so two workers never lease the same job: the slower one's condition
fails and it moves on. In the cloud the table's stream starts the review Lambda on each enqueue.

A dead job stays in the same sparse index under partitions of its own (``dead#<shard>``, sorted by
when it was given up), which ``claim`` and ``pending`` never read: an operator lists dead jobs
without a scan of the table and without another index to deploy.
"""
from __future__ import annotations

import heapq
from datetime import datetime, timedelta, timezone
from typing import Any, Sequence

from pynamodb.exceptions import DoesNotExist, UpdateError

from ..ports import DeadJob, ReviewJob
from .dynamo_errors import boundary, failed_condition
from .dynamo_items import compose, micros, shard_of, us_key, us_key_bound
from .dynamo_models import DynamoTables

PENDING, LEASED, DONE, DEAD = "pending", "leased", "done", "dead"
DEAD_SHARD = "dead#"  # prefix of the due index's partitions that hold dead jobs
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


class DynamoReviewQueue:
    def __init__(self, tables: DynamoTables) -> None:
        self.tables = tables
        self.Job = tables.jobs

    def _due(self, tenant_id: str, trajectory_id: str, kind: str, due_us: int) -> list:
        J = self.Job
        shard = shard_of(compose(tenant_id, trajectory_id, kind), self.tables.config.shards)
        return [J.due_us.set(due_us), J.due_shard.set(shard), J.due_sk.set(us_key(due_us, tenant_id, trajectory_id, kind))]

    def _not_due(self) -> list:
        return [self.Job.due_shard.remove(), self.Job.due_sk.remove()]

    def _update(self, item: Any, actions: list, condition: Any) -> bool:
        """True if the update was made, False if its condition did not hold."""
        try:
            item.update(actions=actions, condition=condition)
            return True
        except UpdateError as exc:
            if failed_condition(exc):
                return False
            raise

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

    def claim(self, now: datetime, lease_seconds: float, limit: int = 10) -> list[ReviewJob]:
        J = self.Job
        now_us = micros(now)
        until_us = now_us + int(lease_seconds * 1_000_000)
        jobs: list[ReviewJob] = []
        if limit <= 0:
            return jobs
        with boundary("claim"):
            due = [J.due.query(s, J.due_sk < us_key_bound(now_us), page_size=max(limit, 10)) for s in self.tables.shards]
            for job in heapq.merge(*due, key=lambda j: j.due_sk):
                leased = self._update(
                    job,
                    [J.state.set(LEASED), J.attempts.add(1), *self._due(job.tenant_id, job.trajectory_id, job.kind, until_us)],
                    # what was read still holds: no other worker leased it meanwhile
                    J.state.is_in(PENDING, LEASED) & (J.due_us <= now_us) & (J.attempts == job.attempts),
                )
                if leased:
                    jobs.append(ReviewJob(job.tenant_id, job.trajectory_id, job.kind, int(job.attempts)))
                    if len(jobs) == limit:
                        break
        return jobs

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
                redriven += self._update(
                    J(j.tenant_id, compose(j.trajectory_id, j.kind)),
                    [J.state.set(PENDING), J.attempts.set(0), *self._due(j.tenant_id, j.trajectory_id, j.kind, micros(now))],
                    J.state == DEAD,
                )
        return redriven

    def pending(self) -> int:
        with boundary("pending"):
            return sum(self.Job.due.count(s) for s in self.tables.shards)

    def release_leases(self, now: datetime) -> int:
        J = self.Job
        released = 0
        with boundary("release_leases"):
            for shard in self.tables.shards:
                for job in list(J.due.query(shard, filter_condition=J.state == LEASED)):
                    released += self._update(
                        job,
                        [J.state.set(PENDING), *self._due(job.tenant_id, job.trajectory_id, job.kind, micros(now))],
                        J.state == LEASED,
                    )
        return released
