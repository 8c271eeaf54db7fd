"""``ports.RateLimiter`` on DynamoDB: one bucket per tenant, shared by every Lambda instance.

The bucket is the tenant's ``tat_us`` (``domain.ratelimit``), moved by conditional updates, so
concurrent instances never admit more than the bucket holds:

1. the bucket is not full (``now <= tat <= now + horizon - interval``): ``ADD tat interval``.
   Under load this one UpdateItem is all a request costs.
2. else, a full bucket (no item, or ``tat`` in the past): ``SET tat = now + interval``.
3. neither condition held: ``tat`` is beyond the horizon (refused: a consistent read says how
   long to wait), another instance moved it between 1 and 2 (try again), or it is further
   ahead than a full bucket allows because this clock is behind (rewritten, conditionally, as
   ``domain.ratelimit.decide`` says).

Each write sets ``expires`` (the table's TTL attribute) past the moment the bucket is full
again, so idle tenants' items go away by themselves.
"""
from __future__ import annotations

from datetime import datetime, timedelta

from chalicelib.adapters.dynamo.errors import boundary, written_if
from chalicelib.adapters.dynamo.models import DynamoTables
from chalicelib.domain.ratelimit import RatePolicy, charged, decide, epoch_us

ATTEMPTS = 4  # rounds of the three steps before a request that keeps racing is refused
KEEP = timedelta(hours=1)  # an item outlives its full-bucket moment by this, for TTL's lag


def bucket_key(tenant_id: str) -> str:
    return f"tenant#{tenant_id}"


class DynamoRateLimiter:
    def __init__(self, tables: DynamoTables, policy: RatePolicy) -> None:
        self.Item = tables.rate_limits
        self.policy = policy

    def acquire(self, tenant_id: str, now: datetime, cost: int = 1) -> float:
        if not self.policy.enabled:
            return 0.0
        now_us, horizon = epoch_us(now), self.policy.horizon_us
        interval = charged(self.policy, cost) * self.policy.interval_us  # what this request moves tat by
        expires = now + timedelta(microseconds=horizon) + KEEP
        item, tat = self.Item(bucket_key(tenant_id)), self.Item.tat_us
        with boundary("rate_limit"):
            for _ in range(ATTEMPTS):
                if self._update(item, [tat.add(interval)], tat.between(now_us, now_us + horizon - interval), expires):
                    return 0.0
                if self._update(item, [tat.set(now_us + interval)], tat.does_not_exist() | (tat < now_us), expires):
                    return 0.0
                try:
                    stored = self.Item.get(bucket_key(tenant_id), consistent_read=True).tat_us
                except self.Item.DoesNotExist:
                    continue  # expired and deleted between the writes and this read: start again
                stored = None if stored is None else int(stored)
                decision = decide(self.policy, stored, now_us, cost)
                if not decision.admitted:
                    return decision.wait_us / 1_000_000
                if stored is not None and stored > now_us + horizon:  # our clock is behind the bucket's
                    if self._update(item, [tat.set(decision.tat_us)], tat == stored, expires):
                        return 0.0
        # still racing after every round: this tenant is very busy right now; one interval's wait
        return self.policy.interval_us / 1_000_000

    def _update(self, item, actions: list, condition, expires: datetime) -> bool:
        return written_if(lambda: item.update(actions=[*actions, self.Item.expires.set(expires)], condition=condition))
