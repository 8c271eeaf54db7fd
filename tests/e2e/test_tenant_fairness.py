"""One tenant's flood cannot hold back another tenant's review (issue 12: 23 minutes)."""
from __future__ import annotations

import pytest

from devtools.flood import tenant_b_delay

pytestmark = pytest.mark.e2e


def test_a_tenants_flood_delays_another_tenants_review_by_a_few_seconds_at_most(server):
    result = tenant_b_delay(server.url, server.admin_key, events=6000, wait=60)
    print(f"\ntenant B reviewed {result.b_delay_seconds} s after its finalize; A's flood of {result.events} events "
          f"took {result.flood_seconds:.1f} s to send, A reviewed after {result.a_reviewed_after_seconds} s")
    assert result.b_delay_seconds is not None and result.b_delay_seconds < 10, server.log_tail()
