"""The token bucket as one number per tenant (GCRA): admission, waits, Retry-After."""
from __future__ import annotations

from datetime import datetime, timezone

import pytest

from chalicelib.domain.ratelimit import RatePolicy, decide, epoch_us, retry_after_seconds

POLICY = RatePolicy(per_second=4, burst=2)  # a token every 250 ms, two at most
S = 1_000_000


def test_an_unknown_tenant_has_a_full_bucket():
    d = decide(POLICY, None, 10 * S)
    assert (d.admitted, d.tat_us, d.wait_us) == (True, 10 * S + S // 4, 0)


def test_the_burst_is_admitted_then_the_wait_is_until_the_next_token():
    first = decide(POLICY, None, 0)
    second = decide(POLICY, first.tat_us, 0)
    third = decide(POLICY, second.tat_us, 0)
    assert (first.admitted, second.admitted, third.admitted) == (True, True, False)
    assert third.wait_us == S // 4 and third.tat_us == second.tat_us  # a refusal changes nothing


def test_a_tat_in_the_past_counts_as_a_full_bucket_not_as_saved_credit():
    d = decide(POLICY, 0, 3600 * S)
    assert d.tat_us == 3600 * S + S // 4


def test_a_tat_beyond_a_full_bucket_means_the_clock_went_back_and_is_pulled_in():
    d = decide(POLICY, 3600 * S, 0)  # tat an hour ahead: only a clock stepping back does that
    assert (d.admitted, d.tat_us) == (True, POLICY.horizon_us)
    assert not decide(POLICY, d.tat_us, 0).admitted


def test_zero_rate_or_burst_disables_and_negative_values_are_refused():
    assert not RatePolicy(0, 5).enabled and not RatePolicy(5, 0).enabled and POLICY.enabled
    with pytest.raises(ValueError):
        RatePolicy(-1, 5)


@pytest.mark.parametrize(("wait", "header"), [(0.001, 1), (0.5, 1), (1.0, 1), (1.01, 2), (3.9, 4)])
def test_retry_after_is_whole_seconds_rounded_up_and_at_least_one(wait, header):
    assert retry_after_seconds(wait) == header


def test_epoch_microseconds_are_exact():
    assert epoch_us(datetime(1970, 1, 1, 0, 0, 1, 5, tzinfo=timezone.utc)) == S + 5
