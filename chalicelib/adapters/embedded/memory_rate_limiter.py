"""``ports.RateLimiter`` in process: one ``tat`` per tenant in a dict behind a lock.

For the embedded server, one process with a pool of threads. Every instance keeps its own
buckets, so it is no limit across processes (the Lambda build uses ``dynamo_rate_limiter``).
"""
from __future__ import annotations

import threading
from datetime import datetime

from chalicelib.domain.ratelimit import RatePolicy, decide, epoch_us

PRUNE_ABOVE = 10_000  # tenants tracked before the ones with a full bucket are forgotten


class InProcessRateLimiter:
    def __init__(self, policy: RatePolicy) -> None:
        self.policy = policy
        self._tat: dict[str, int] = {}
        self._lock = threading.Lock()

    def acquire(self, tenant_id: str, now: datetime, cost: int = 1) -> float:
        if not self.policy.enabled:
            return 0.0
        now_us = epoch_us(now)
        with self._lock:
            decision = decide(self.policy, self._tat.get(tenant_id), now_us, cost)
            if not decision.admitted:
                return decision.wait_us / 1_000_000
            self._tat[tenant_id] = decision.tat_us
            if len(self._tat) > PRUNE_ABOVE:
                # a tat in the past is a full bucket, the same as no entry at all
                self._tat = {t: tat for t, tat in self._tat.items() if tat > now_us}
        return 0.0
