"""When to try a call again, and how long to wait first. Pure: no I/O, no clock, no sleeping."""
from __future__ import annotations

import random
from dataclasses import dataclass, field

import httpx

from .errors import retry_after_seconds

# Raised before a byte of the request left the machine: a retry cannot apply a write twice.
_NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff with jitter, honouring Retry-After.

    * 429 is retried for every call: the service refused it, so nothing was applied.
    * A connection that could not be opened is retried for every call, for the same reason.
    * 5xx and connections that broke mid-way are retried only for idempotent calls, since the
      service may have applied the write. Writes that carry client-chosen ids are idempotent.
    """

    max_attempts: int = 4
    base_delay: float = 0.25
    max_delay: float = 8.0
    # A Retry-After longer than this is not waited for: the caller gets RateLimited instead.
    max_retry_after: float = 30.0
    rng: random.Random = field(default_factory=random.Random, compare=False, repr=False)

    def backoff(self, attempt: int) -> float:
        """Delay before retry number ``attempt`` (0-based): half fixed, half random ("equal jitter").

        The random half spreads the retries of many agents that failed at the same moment.
        """
        ceiling = min(self.max_delay, self.base_delay * (2**attempt))
        return ceiling / 2 + self.rng.uniform(0, ceiling / 2)

    def delay(self, outcome: httpx.Response | httpx.TransportError, attempt: int, idempotent: bool) -> float | None:
        """Seconds to wait before the next attempt, or None to give up with this outcome."""
        if attempt + 1 >= self.max_attempts:
            return None
        if isinstance(outcome, httpx.Response):
            status = outcome.status_code
            if status == 429:
                retry_after = retry_after_seconds(outcome)
                if retry_after is None:
                    return self.backoff(attempt)
                return retry_after if retry_after <= self.max_retry_after else None
            if status >= 500 and idempotent:
                return self.backoff(attempt)
            return None
        if isinstance(outcome, _NOT_SENT) or idempotent:
            return self.backoff(attempt)
        return None


NO_RETRY = RetryPolicy(max_attempts=1)
