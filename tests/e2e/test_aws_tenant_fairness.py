"""One tenant's flood cannot hold back another tenant's review on the aws stack (moto server as
DynamoDB, a real OpenSearch node, the review function fed by the review-jobs stream).

The stream is delivered once both trajectories are finalized, as when the event source mapping
lags behind a flood: tenant A's local review (its anomalies, coalesced) and A's full review of
thousands of events are then queued before B's 3-event review. Claimed first-come, B would wait
for both; in turns, B waits for one job at most and is reviewed before A's full review.
"""
from __future__ import annotations

import pytest

from devtools.aws_stack import aws_tenant, local_aws_stack, stream_delivery
from devtools.flood import flood
from tests.support.http_api import ADMIN
from tests.support.opensearch import node_url

pytestmark = [pytest.mark.e2e, pytest.mark.opensearch]

EVENTS = 1000  # 10 permitted calls of 100 events


def experiences(tenant) -> list[tuple]:
    items = tenant.get("/v1/experiences").json()["items"]
    return sorted((e["experience_id"], e["support"], e["version"], tuple(e["sources"])) for e in items)


def test_a_tenants_flood_delays_another_tenants_review_by_one_job_at_most_on_the_aws_stack():
    with local_aws_stack(ADMIN, node_url()) as stack:
        batches: list[dict] = []
        deliver = stack.poller.handler
        stack.poller.handler = lambda event: (batches.append(event), deliver(event))[1]
        a, b = aws_tenant(stack, "flooder"), aws_tenant(stack, "bystander")
        result = flood(a, b, events=EVENTS, wait=120, reviewing=lambda: stream_delivery(stack))
        print(f"\ntenant B reviewed {result.b_delay_seconds} s after its finalize, A after {result.a_reviewed_after_seconds} s; "
              f"A's {result.events} events took {result.flood_seconds:.1f} s to send")
        assert result.b_delay_seconds is not None and result.a_reviewed_after_seconds is not None
        # in turns, B waits for the job running when it came at most: it is reviewed before A's full
        # review, by the server's clock (the clients' polls see A's status change at their own pace)
        assert result.b_reviewed_first, "B's review waited for A's full review"

        # nothing lost, nothing run twice: every job done, and Lambda redelivering every record changes nothing
        assert stack.deps.queue.pending() == 0 and stack.poller.dead_letters == []
        learned = experiences(a), experiences(b)
        assert learned[0] and learned[1]
        for event in batches:
            assert deliver(event) == {"batchItemFailures": []}
        assert stack.deps.queue.pending() == 0
        assert (experiences(a), experiences(b)) == learned
