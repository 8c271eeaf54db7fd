"""Contract of ``ports.RateLimiter``: a token bucket per tenant, the same on every backend.

Time is passed in (``now``), so nothing here sleeps: refilling is a matter of moving ``now``.
"""
from __future__ import annotations

import threading
from datetime import timedelta

import pytest

from chalicelib.domain.ratelimit import RatePolicy

from .conftest import T0

POLICY = RatePolicy(per_second=10, burst=5)  # a token every 100 ms, five at most
INTERVAL = timedelta(milliseconds=100)


def take(limiter, tenant_id: str, n: int, now=T0) -> list[float]:
    return [limiter.acquire(tenant_id, now) for _ in range(n)]


def test_a_full_burst_is_admitted_at_once_and_the_next_request_is_refused(limiters):
    limiter = limiters.limiter(POLICY)
    assert take(limiter, "t1", 5) == [0.0] * 5
    wait = limiter.acquire("t1", T0)
    assert wait == pytest.approx(0.1)  # one token comes back in one interval


def test_the_wait_shrinks_as_time_passes(limiters):
    limiter = limiters.limiter(POLICY)
    take(limiter, "t1", 5)
    assert limiter.acquire("t1", T0 + timedelta(milliseconds=40)) == pytest.approx(0.06)


def test_a_refused_request_takes_nothing_and_waiting_as_told_is_enough(limiters):
    limiter = limiters.limiter(POLICY)
    take(limiter, "t1", 5)
    waits = take(limiter, "t1", 3)
    assert all(w == pytest.approx(0.1) for w in waits)  # three refusals did not dig the hole deeper
    later = T0 + timedelta(seconds=waits[0])
    assert limiter.acquire("t1", later) == 0.0
    assert limiter.acquire("t1", later) > 0  # exactly one token came back


def test_the_bucket_refills_at_the_rate(limiters):
    limiter = limiters.limiter(POLICY)
    take(limiter, "t1", 5)
    later = T0 + 3 * INTERVAL
    assert take(limiter, "t1", 3, later) == [0.0] * 3
    assert limiter.acquire("t1", later) > 0


def test_a_long_idle_refills_the_bucket_to_its_burst_and_no_further(limiters):
    limiter = limiters.limiter(POLICY)
    take(limiter, "t1", 5)
    later = T0 + timedelta(hours=1)
    assert take(limiter, "t1", 5, later) == [0.0] * 5
    assert limiter.acquire("t1", later) == pytest.approx(0.1)


def test_a_clock_that_went_back_costs_the_tenant_its_burst_and_never_locks_it_out(limiters):
    limiter = limiters.limiter(POLICY)
    ahead = T0 + timedelta(hours=1)  # another instance's clock, or this one before an NTP step back
    take(limiter, "t1", 5, ahead)
    assert limiter.acquire("t1", T0) == 0.0
    assert limiter.acquire("t1", T0) == pytest.approx(0.1)  # as if the burst had just been spent
    assert limiter.acquire("t1", T0 + INTERVAL) == 0.0


def test_steady_traffic_at_the_rate_is_never_refused(limiters):
    limiter = limiters.limiter(POLICY)
    assert all(limiter.acquire("t1", T0 + i * INTERVAL) == 0.0 for i in range(30))


def test_tenants_have_buckets_of_their_own(limiters):
    limiter = limiters.limiter(POLICY)
    take(limiter, "t1", 5)
    assert limiter.acquire("t1", T0) > 0
    assert take(limiter, "t2", 5) == [0.0] * 5
    assert limiter.acquire("t2", T0) > 0


@pytest.mark.parametrize("policy", [RatePolicy(per_second=0, burst=5), RatePolicy(per_second=10, burst=0)])
def test_a_rate_or_burst_of_zero_admits_everything(limiters, policy):
    limiter = limiters.limiter(policy)
    assert take(limiter, "t1", 50) == [0.0] * 50


def test_concurrent_requests_never_get_more_than_the_burst(limiters):
    limiter = limiters.limiter(POLICY)
    results: list[float] = []
    lock = threading.Lock()

    def one() -> None:
        wait = limiter.acquire("t1", T0)
        with lock:
            results.append(wait)

    threads = [threading.Thread(target=one) for _ in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results.count(0.0) == 5
    assert all(w > 0 for w in results if w != 0.0)


def test_instances_over_the_same_storage_share_a_tenants_bucket(limiters):
    if not limiters.shared:
        pytest.skip(f"{limiters.name} limiters keep their buckets per instance (per process)")
    first, second = limiters.limiter(POLICY), limiters.limiter(POLICY)
    assert take(first, "t1", 3) == [0.0] * 3
    assert take(second, "t1", 2) == [0.0] * 2
    assert first.acquire("t1", T0) > 0 and second.acquire("t1", T0) > 0


def test_a_request_takes_as_many_tokens_as_it_costs(limiters):
    limiter = limiters.limiter(POLICY)
    assert limiter.acquire("t1", T0, cost=3) == 0.0
    assert limiter.acquire("t1", T0, cost=3) == pytest.approx(0.1)  # 2 left: one more interval
    assert limiter.acquire("t1", T0, cost=2) == 0.0
    assert limiter.acquire("t1", T0) > 0
    assert limiter.acquire("t1", T0 + 4 * INTERVAL, cost=4) == 0.0  # four came back


def test_a_cost_above_the_burst_takes_a_full_bucket_and_never_waits_forever(limiters):
    limiter = limiters.limiter(POLICY)
    assert limiter.acquire("t1", T0, cost=50) == 0.0
    assert limiter.acquire("t1", T0) == pytest.approx(0.1)
    assert limiter.acquire("t1", T0 + 5 * INTERVAL, cost=50) == 0.0
