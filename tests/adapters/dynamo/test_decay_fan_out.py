"""The decay pass fanned out over an SQS queue, on the local moto server (DynamoDB and SQS).

The schedule's runs send one message per tenant (``fan_out_decay_pass``), a bounded batch at a
time from the pass's checkpoint; the decay worker's batches (``lambda_handlers.decay_worker``, fed
as the event source mapping would: up to ten messages received, the failed ones left for
redelivery, the others deleted) each decay one tenant within the invocation's time from the
tenant's own checkpoint, and send a tenant not finished back to the queue. Duplicate messages (SQS
delivers at least once; a scheduler run repeated sends a batch again) are dropped by the tenant's
checkpoint."""
from __future__ import annotations

import json
import uuid
from datetime import datetime, timedelta, timezone

import pytest

from chalicelib import lambda_handlers
from chalicelib.adapters.sqs_queue import SqsWorkQueue
from chalicelib.domain.models import Experience, Tenant
from chalicelib.services import maintenance
from chalicelib.settings import Settings
from tests.support.container import installed
from tests.support.dynamo import CREDENTIALS, REGION, dynamo_tables, moto_endpoint
from tests.support.fakes import FakeClock, InMemoryVectorIndex, fake_deps

NOW = datetime(2026, 6, 1, tzinfo=timezone.utc)
TENANTS, FAN_OUT_BATCH = 60, 30  # two schedule runs of one batch each (the cloud's batch is 100)
BIG = "tenant-big"
BIG_SIZE, SMALL_SIZE, PAGE = 75, 1, 5


class Invocation:
    """A Lambda context whose remaining time falls ``step`` seconds at each look (about a page's work)."""

    def __init__(self, start: float = 100.0, step: float = 7.0) -> None:
        self.left, self.step = start, step

    def get_remaining_time_in_millis(self) -> int:
        left, self.left = self.left, self.left - self.step
        return int(left * 1000)


def lesson(tenant: str, i: int) -> Experience:
    from tests.support.builders import experience

    stale = i % 5 == 0  # never renewed: due for archiving
    renewed = NOW - timedelta(days=120) if stale else NOW - timedelta(days=1)
    return experience(tenant_id=tenant, experience_id=f"x{i:04d}", created_at=NOW - timedelta(days=120),
                      renewed_at=renewed)


@pytest.fixture()
def world(request, monkeypatch):
    import boto3

    from chalicelib.adapters.dynamo.checkpoints import DynamoCheckpoints
    from chalicelib.adapters.dynamo.stores import DynamoExperienceStore, DynamoTenantStore

    monkeypatch.setattr(maintenance, "CONTINUE_DELAY_SECONDS", 0)
    monkeypatch.setattr(maintenance, "FAN_OUT_BATCH", FAN_OUT_BATCH)  # the local queue's delay would only slow the test
    tables = dynamo_tables()
    for group in ("tenants", "experiences", "checkpoints"):
        tables.create(group)
    sqs = boto3.client("sqs", region_name=REGION, endpoint_url=moto_endpoint(), **CREDENTIALS)
    url = sqs.create_queue(QueueName=f"decay-{uuid.uuid4().hex[:8]}")["QueueUrl"]
    clock = FakeClock(NOW)
    deps = fake_deps(clock, tenants=DynamoTenantStore(tables), experiences=DynamoExperienceStore(tables))
    deps.index = InMemoryVectorIndex(deps.embedder.dim)
    deps.checkpoints = DynamoCheckpoints(tables)
    deps.decay_queue = SqsWorkQueue(sqs, url)
    deps.recalls = None
    tenants, big = getattr(request, "param", (TENANTS, True))
    sizes = {f"tenant-{t:03d}": SMALL_SIZE for t in range(tenants - big)} | ({BIG: BIG_SIZE} if big else {})
    for n, (tenant, size) in enumerate(sizes.items()):
        deps.tenants.create_tenant(Tenant(tenant, tenant, NOW - timedelta(days=200, seconds=-n)), f"hash-{tenant}")
        for i in range(size):
            deps.experiences.put(lesson(tenant, i))
    settings = Settings(decay_page_size=PAGE, decay_reserve_seconds=30, decay_interval_seconds=3600,
                        decay_tenant_seconds=60, decay_queue_url=url)
    with installed(deps, settings):
        yield deps, sqs, url, sizes
    sqs.delete_queue(QueueUrl=url)


def drain(sqs, url: str, duplicate_first: bool = False) -> tuple[list[dict], list[list[dict]]]:
    """Feed the worker as the event source mapping would, until the queue is empty: the worker's
    answers and the messages of each batch."""
    answers, batches = [], []
    redelivered = False
    while True:
        got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=0,
                                  AttributeNames=["All"]).get("Messages", [])
        if not got:
            return answers, batches
        records = [{"messageId": m["MessageId"], "receiptHandle": m["ReceiptHandle"], "body": m["Body"]} for m in got]
        if duplicate_first and not redelivered:  # SQS delivers at least once: the first batch comes twice
            records = records + [dict(r, messageId=r["messageId"] + "-again") for r in records]
            redelivered = True
        answer = lambda_handlers.decay_worker({"Records": records}, Invocation())
        answers.append(answer)
        batches.append([json.loads(r["body"]) for r in records])
        failed = {f["itemIdentifier"] for f in answer["batchItemFailures"]}
        for m in got:
            if m["MessageId"] not in failed:
                sqs.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
            else:
                sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"], VisibilityTimeout=0)


def statuses(deps, tenant: str) -> dict[str, int]:
    return deps.experiences.count_by_status(tenant)


@pytest.mark.slow  # ~200 items seeded on moto
def test_a_pass_over_many_tenants_decays_each_once_and_a_big_tenant_spans_invocations(world):
    deps, sqs, url, sizes = world
    # the schedule: a first run sends one batch of tenants before its time runs short, the next the rest
    first = lambda_handlers.decay(Invocation(start=100, step=79))
    assert first == {"enqueued": FAN_OUT_BATCH, "complete": 0}
    again = lambda_handlers.decay(Invocation(start=100, step=79))
    assert again == {"enqueued": TENANTS - FAN_OUT_BATCH, "complete": 1}
    assert lambda_handlers.decay(Invocation()) == {"enqueued": 0, "complete": 1}  # the pass is all sent: none before its interval
    # a scheduler run repeated sends a batch again: those duplicates must be dropped
    state = deps.checkpoints.load(maintenance.DECAY_CHECKPOINT)
    deps.decay_queue.send([{"tenant_id": t, "pass": state["started_at"], "step": 0} for t in sorted(sizes)[:10]])

    answers, batches = drain(sqs, url, duplicate_first=True)

    assert all(a["batchItemFailures"] == [] for a in answers)
    for tenant, size in sizes.items():
        due = len(range(0, size, 5))
        assert statuses(deps, tenant) == {k: n for k, n in {"active": size - due, "archived": due}.items() if n}, tenant
        done = deps.checkpoints.load(maintenance.TENANT_CHECKPOINT.format(tenant_id=tenant))
        assert done["pass"] == state["started_at"] and done["done"] is True
        assert (done["examined"], done["archived"]) == (size, due), tenant  # every lesson read once in the pass
    big = deps.checkpoints.load(maintenance.TENANT_CHECKPOINT.format(tenant_id=BIG))
    assert big["runs"] > 1 and big["step"] == big["runs"]  # the big tenant's pass spanned invocations
    big_batches = [i for i, batch in enumerate(batches) if any(m["tenant_id"] == BIG for m in batch)]
    assert len(big_batches) == big["runs"]
    # the big tenant did not hold up the others: most tenants were done before its last step
    first_of_big = big_batches[0]
    assert len(batches) > first_of_big + 1
    processed = sum(a["tenants"] - a["skipped"] for a in answers)
    skipped = sum(a["skipped"] for a in answers)
    assert processed == (TENANTS - 1) + big["runs"]  # each small tenant once, the big one once per step
    assert skipped >= 10 + 10  # the repeated scheduler batch and the redelivered first batch
    examined = sum(a["examined"] for a in answers)
    assert examined == sum(sizes.values())


@pytest.mark.parametrize("world", [(12, False)], indirect=True)
def test_a_failed_message_is_reported_alone_and_goes_on_from_its_tenants_checkpoint(world, monkeypatch):
    deps, sqs, url, sizes = world
    lambda_handlers.decay(Invocation(start=1e6, step=1))
    broken = {"tenant-005"}
    original = maintenance._decay_page

    def failing(deps_, items, now, tally, dry_run):
        if items and items[0].tenant_id in broken:
            raise RuntimeError("the store is unreachable")
        return original(deps_, items, now, tally, dry_run)

    monkeypatch.setattr(maintenance, "_decay_page", failing)
    got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", [])
    records = [{"messageId": m["MessageId"], "body": m["Body"]} for m in got]
    target = [r for r in records if json.loads(r["body"])["tenant_id"] in broken]
    if not target:  # tenant-005 is among the first ten sent, but SQS gives no order: make it one of the batch
        state = deps.checkpoints.load(maintenance.DECAY_CHECKPOINT)
        target = [{"messageId": "m-broken", "body": json.dumps({"tenant_id": "tenant-005", "pass": state["started_at"],
                                                                 "step": 0})}]
        records = records[:9] + target
    answer = lambda_handlers.decay_worker({"Records": records}, Invocation())
    assert answer["batchItemFailures"] == [{"itemIdentifier": target[0]["messageId"]}]
    assert statuses(deps, "tenant-005") == {"active": SMALL_SIZE}
    monkeypatch.setattr(maintenance, "_decay_page", original)
    # delivered again, it goes on: the tenant's step was not advanced by the failure
    again = lambda_handlers.decay_worker({"Records": target}, Invocation())
    assert again["batchItemFailures"] == [] and again["archived"] == SMALL_SIZE and again["skipped"] == 0
    with pytest.raises(lambda_handlers.DecayBatchFailed):  # a batch whose every message failed is retried whole
        lambda_handlers.decay_worker({"Records": [{"messageId": "x", "body": "not json"}]}, Invocation())
