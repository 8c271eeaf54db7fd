"""The rate limiter the embedded server's processes share (its contract is in tests/contract):
buckets held across real processes, and what happens when tenants crowd one window of its table."""
from __future__ import annotations

import subprocess
import sys
import textwrap
from datetime import timedelta
from pathlib import Path

import pytest

from chalicelib.adapters.embedded.rate_limiter import SLOTS, WINDOW, SharedFileRateLimiter, tenant_hash
from chalicelib.domain.ratelimit import RatePolicy

from tests.contract.conftest import T0

ROOT = Path(__file__).resolve().parents[3]
# tenant ids whose hashes share one home slot (found by search): more than a window holds
CROWD = ['t_28196', 't_307882', 't_344962', 't_441685', 't_538214', 't_678540', 't_750946', 't_776479',
         't_837250', 't_878713', 't_884030', 't_919551', 't_977233', 't_985967', 't_1077737', 't_1104166',
         't_1104213']
POLICY = RatePolicy(per_second=10, burst=5)


def test_the_crowd_shares_one_home_slot():
    assert len({tenant_hash(t) % SLOTS for t in CROWD}) == 1 and len(CROWD) == WINDOW + 1


def test_processes_mapping_one_file_never_grant_more_than_the_burst_between_them(tmp_path):
    """Three processes race for one tenant's bucket (a burst of 50, nothing refills): 50 admitted."""
    path = tmp_path / "rate-limits"
    script = textwrap.dedent(f"""
        import sys
        from datetime import datetime, timezone
        sys.path.insert(0, {str(ROOT)!r})
        from chalicelib.adapters.embedded.rate_limiter import SharedFileRateLimiter
        from chalicelib.domain.ratelimit import RatePolicy
        limiter = SharedFileRateLimiter(RatePolicy(per_second=0.001, burst=50), {str(path)!r})
        now = datetime(2026, 1, 1, tzinfo=timezone.utc)
        sys.stdin.read()  # all start together
        print(sum(limiter.acquire("t1", now) == 0.0 for _ in range(400)))
    """)
    procs = [subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
             for _ in range(3)]
    outs = [p.communicate("go", timeout=60)[0] for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert sum(int(o) for o in outs) == 50


def test_a_tenant_whose_bucket_is_full_again_gives_up_its_slot_and_loses_nothing(tmp_path):
    limiter = SharedFileRateLimiter(POLICY, str(tmp_path / "rl"))
    for tenant in CROWD[:WINDOW]:  # the window full of limited tenants
        assert limiter.acquire(tenant, T0, cost=5) == 0.0
    later = T0 + timedelta(seconds=1)  # every bucket has refilled: each slot is free to take
    assert limiter.acquire(CROWD[WINDOW], later, cost=5) == 0.0
    assert limiter.acquire(CROWD[WINDOW], later) == pytest.approx(0.1)  # its own bucket, kept
    for tenant in CROWD[:WINDOW]:  # and every other still finds a full bucket
        assert limiter.acquire(tenant, later, cost=5) == 0.0
        assert limiter.acquire(tenant, later) > 0


def test_a_crowded_window_gives_up_the_bucket_closest_to_full_and_never_locks_anyone_out(tmp_path):
    limiter = SharedFileRateLimiter(POLICY, str(tmp_path / "rl"))
    for i, tenant in enumerate(CROWD[:WINDOW]):  # spent at 0, 1, 2... ms: the first is nearest full
        assert limiter.acquire(tenant, T0 + timedelta(milliseconds=i), cost=5) == 0.0
    now = T0 + timedelta(milliseconds=WINDOW)  # none has a token back yet (one takes 100 ms)
    newcomer = CROWD[WINDOW]
    assert limiter.acquire(newcomer, now, cost=5) == 0.0  # admitted: there is no room, but it is not refused
    assert limiter.acquire(newcomer, now) > 0  # and limited from then on
    assert limiter.acquire(CROWD[0], now, cost=5) == 0.0  # the given-up bucket starts full again
    for tenant in CROWD[2:WINDOW]:  # the others keep theirs
        assert limiter.acquire(tenant, now) > 0


def test_limiting_off_writes_nothing(tmp_path):
    path = tmp_path / "rl"
    limiter = SharedFileRateLimiter(RatePolicy(per_second=0, burst=5), str(path))
    assert all(limiter.acquire("t1", T0) == 0.0 for _ in range(20))
    limiter.close()
    assert path.read_bytes().count(0) == path.stat().st_size
