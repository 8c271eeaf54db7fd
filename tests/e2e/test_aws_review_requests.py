"""What one review job costs the review function in round trips, on the local stack of
``test_aws_stack`` (moto server, a real OpenSearch node, the OpenAI-compatible stub): every DynamoDB
request of the stores and of the idempotency records goes through the stores' one botocore client
and is counted at its ``before-parameter-build`` event (once per call, retries aside); OpenSearch requests are counted at
the index client's connection pool. A cold review function pays each of them once per job, so their number is its cold
start as much as its imports are.
"""
from __future__ import annotations

from collections import Counter

import pytest

from chalicelib.adapters.opensearch.queries import index_body
from devtools.opensearch_node import RequestCounter

from .test_aws_stack import local_stack, record, status

pytestmark = [pytest.mark.e2e, pytest.mark.opensearch]

# the idempotency record (2), one claim (turns of 4 shards, the tenant's queue, the lease and the
# tenant's turn), the trajectory and its events, the lesson's retired copy, fingerprint and
# situation lookups, its write, the review, the job's completion (19); a successful run is kept in
# its scope's register of successful runs (a read and a write), and the scope's first is listed for
# the tenant's deletion (a read and a write)
MAX_DYNAMODB_REQUESTS = 23


def test_one_review_job_costs_one_claim_and_a_bounded_number_of_round_trips(monkeypatch):
    with local_stack(monkeypatch) as (api, poller, stub, deps):
        key = api.tenant()
        record(api, key, "t1")
        spec = deps.index.spec  # the index exists, as deployed; this function instance has not checked it yet
        deps.index.client.indices.create(index=spec.name, body=index_body(spec))
        client = deps.queue.tables.connection.client
        calls: list[tuple[str, str, str]] = []

        def counted(model, params, **_):
            values = params.get("ExpressionAttributeValues") or {}
            partition = next((v["S"] for v in values.values() if "S" in v), "") if params.get("IndexName") == "due" else ""
            calls.append((model.name, params.get("TableName", ""), partition))

        client.meta.events.register("before-parameter-build.dynamodb", counted, unique_id="review-requests")
        opensearch = RequestCounter(deps.index.client)
        try:
            assert poller.poll_once() >= 1
        finally:
            client.meta.events.unregister("before-parameter-build.dynamodb", unique_id="review-requests")
        assert status(api, key, "t1")["status"] == "reviewed"

        turn_reads = [c for c in calls if c[0] == "Query" and c[2].startswith("turns#")]
        assert len(turn_reads) == deps.queue.tables.config.shards  # one claim: it found the queue drained
        # the shared shard partitions of the earlier queue layout are the sweeper's to read
        assert not [c for c in calls if c[0] == "Query" and c[2] in deps.queue.tables.shards]
        assert len(calls) <= MAX_DYNAMODB_REQUESTS, Counter(c[0] for c in calls)
        ops = Counter(c[0] for c in calls)
        # the idempotency record, the lesson (conditional on its revision), the scope's register of
        # successful runs and, the scope's first, its listing
        assert ops["PutItem"] + ops["TransactWriteItems"] == 4, ops
        # the index checked in one request on first use, the near-duplicate search, the lesson's write
        assert opensearch.count == 3
