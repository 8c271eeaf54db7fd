"""What one DynamoDB claim reads of the tenants' turns: at most TENANTS_PER_CLAIM per shard.

The turns of every tenant with queued jobs live in a few shard partitions; a claim takes the
TENANTS_PER_CLAIM least recently served of them. Each shard's query used to read a whole page (up to
1 MB: every tenant's turn at 10k tenants) for the 32 the merge takes."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

from chalicelib.adapters.dynamo.review_queue import TENANTS_PER_CLAIM
from tests.contract.dynamo_backend import DynamoBackend

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)


def test_a_claim_reads_at_most_its_tenants_per_claim_turns_of_each_shard_and_serves_the_oldest(tmp_path):
    backend = DynamoBackend(tmp_path)
    try:
        queue = backend.queue()
        tenants = [f"t{i:03d}" for i in range(6 * TENANTS_PER_CLAIM)]  # ~48 a shard
        for i, tenant in enumerate(tenants):  # the oldest first
            queue.enqueue(tenant, "traj", "full", T0 + timedelta(seconds=i))
        client = queue.tables.connection.client
        sent: list[dict] = []
        reads: list[tuple[int | None, int]] = []  # each turn query: (its Limit, the items it answered)

        def on_params(params, **_):
            sent.append(params)

        def on_answer(parsed, **_):
            params = sent.pop()
            values = params.get("ExpressionAttributeValues") or {}
            if params.get("IndexName") == "due" and any(str(v.get("S", "")).startswith("turns#") for v in values.values()):
                reads.append((params.get("Limit"), len(parsed.get("Items", []))))

        client.meta.events.register("provide-client-params.dynamodb.Query", on_params, unique_id="claim-reads-params")
        client.meta.events.register("after-call.dynamodb.Query", on_answer, unique_id="claim-reads-answers")
        jobs = queue.claim(T0 + timedelta(hours=1), lease_seconds=60, limit=8)
        assert len(reads) == len(queue.tables.shards)
        assert all(limit == TENANTS_PER_CLAIM and items <= TENANTS_PER_CLAIM for limit, items in reads), reads
        assert sum(items for _, items in reads) < len(tenants)  # the old queries read every turn
        assert [j.tenant_id for j in jobs] == tenants[:8]  # the least recently served, as before
    finally:
        backend.close()


def test_tenants_whose_jobs_are_not_due_yet_do_not_hold_back_a_due_job_past_them(tmp_path):
    """A job queued for later (an OpenTelemetry trace's idle timeout, a retry's back-off) kept its
    tenant's turn first in line, never served: TENANTS_PER_CLAIM such tenants hid every other
    tenant's due job from every claim until theirs came due. A claim now sends such a turn back."""
    backend = DynamoBackend(tmp_path)
    try:
        queue = backend.queue()
        waiting = [f"w{i:03d}" for i in range(3 * TENANTS_PER_CLAIM)]
        for tenant in waiting:
            queue.enqueue(tenant, "trace", "otlp_idle", T0 + timedelta(minutes=15))  # due later
        queue.enqueue("z-ready", "traj", "full", T0 + timedelta(seconds=1))  # sorts after the others
        now = T0 + timedelta(seconds=2)
        claimed = []
        for _ in range(len(queue.tables.shards) * 4):  # a few claims, as the sweeper's minutes make them
            claimed += queue.claim(now, lease_seconds=60, limit=8)
            if claimed:
                break
        assert [(j.tenant_id, j.kind) for j in claimed] == [("z-ready", "full")]
        queue.complete(claimed[0])
        later: list = []
        while batch := queue.claim(T0 + timedelta(minutes=16), lease_seconds=60, limit=500):
            later += batch  # at most TENANTS_PER_CLAIM tenants a claim
        assert sorted(j.tenant_id for j in later) == waiting  # and theirs are claimed once due
    finally:
        backend.close()
