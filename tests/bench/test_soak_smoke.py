"""The soak benchmark in its CI size: a few seconds of concurrent ingest and recall against the real
embedded server (bench/soak.py). It asserts correctness only, never a speed."""
from __future__ import annotations

import pytest

from bench import soak

pytestmark = pytest.mark.e2e


def test_a_short_soak_has_no_errors_and_stores_every_accepted_event(capsys):
    (result,) = soak.main(["--backend", "embedded", "--clients", "8", "--duration", "3", "--tenants", "2",
                           "--baseline-duration", "1", "--seed-per-tenant", "3", "--drain-timeout", "20",
                           "--reviews", "8:4096:2"])
    load, base = result["load"], result["base"]
    assert dict(load.errors) == {} and dict(base.errors) == {}, capsys.readouterr().out[-3000:]
    assert load.events > 0 and load.lat["recall"] and load.recall_hits > 0  # the mix really ran
    check = result["check"]
    assert check["checked"] == len(load.accepted) + len(base.accepted) + 2 * 3
    assert (check["missing_events"], check["extra_events"], check["unreadable"]) == (0, 0, 0)
    assert result["alive"] and "request failed (500)" not in result["log"]
    assert result["drained"].get("finalized", 0) == 0 and result["drained"].get("review_failed", 0) == 0
    # every trajectory finalized under load was reviewed, and its review latency read back
    assert load.finalized and check["unreviewed"] == 0 and len(check["latency_s"]) == len(load.finalized)
    assert all(-1 < s < 60 for s in check["latency_s"])  # -1: the server's clock rounds to the ms
