"""The DynamoDB streams the cloud deployment consumes: read back through boto3 from the moto server."""
from __future__ import annotations

from datetime import datetime, timezone

import pytest

pytest.importorskip("pynamodb")
boto3 = pytest.importorskip("boto3")

from chalicelib.adapters.dynamo.stores import DynamoReviewQueue, DynamoTrajectoryStore  # noqa: E402
from chalicelib.domain.models import Event, Trajectory  # noqa: E402
from chalicelib.lambda_handlers import _wakes_reviewer  # noqa: E402
from tests.support.dynamo import CREDENTIALS, REGION, dynamo_tables, moto_endpoint  # noqa: E402

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)


@pytest.fixture
def tables():
    t = dynamo_tables()
    t.create()
    yield t
    t.delete()


def client(service: str):
    return boto3.client(service, endpoint_url=moto_endpoint(), region_name=REGION, **CREDENTIALS)


def stream_records(model) -> list[dict]:
    """Every record of the table's stream so far, oldest first."""
    arn = client("dynamodb").describe_table(TableName=model.Meta.table_name)["Table"]["LatestStreamArn"]
    streams = client("dynamodbstreams")
    records = []
    for shard in streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"]:
        iterator = streams.get_shard_iterator(StreamArn=arn, ShardId=shard["ShardId"], ShardIteratorType="TRIM_HORIZON")
        records += streams.get_records(ShardIterator=iterator["ShardIterator"])["Records"]
    return records


def test_streams_are_on_trajectories_events_and_jobs_only(tables):
    ddb = client("dynamodb")
    for model, streamed in [
        (tables.trajectories, True),
        (tables.events, True),
        (tables.jobs, True),
        (tables.tenants, False),
        (tables.experiences, False),
    ]:
        spec = ddb.describe_table(TableName=model.Meta.table_name)["Table"].get("StreamSpecification", {})
        assert spec.get("StreamEnabled", False) is streamed, model.Meta.table_name
        if streamed:
            assert spec["StreamViewType"] == "NEW_AND_OLD_IMAGES"


def test_finalize_appears_on_the_trajectories_stream_with_both_images(tables):
    store = DynamoTrajectoryStore(tables)
    store.create(Trajectory("t1", "tr1", "agent-1", "deploy", T0, T0))
    store.append_events("t1", "tr1", [Event("e1", "tool_call", T0, {"tool": "git"})], T0)
    store.finalize("t1", "tr1", "success", None, T0)

    records = stream_records(tables.trajectories)
    assert [r["eventName"] for r in records] == ["INSERT", "MODIFY", "MODIFY"]  # create, append, finalize
    final = records[-1]["dynamodb"]
    assert final["Keys"] == {"tenant_id": {"S": "t1"}, "trajectory_id": {"S": "tr1"}}
    assert final["OldImage"]["status"] == {"S": "open"}
    assert final["NewImage"]["status"] == {"S": "finalized"}
    assert final["NewImage"]["outcome"] == {"S": "success"}
    assert "outbox_sk" in final["NewImage"] and "outbox_sk" not in final["OldImage"]


def test_appended_events_appear_on_the_events_stream_with_their_markers(tables):
    store = DynamoTrajectoryStore(tables)
    store.create(Trajectory("t1", "tr1", "agent-1", "deploy", T0, T0))
    store.append_events("t1", "tr1", [Event("e1", "tool_call", T0), Event("e2", "tool_call", T0)], T0)

    records = stream_records(tables.events)
    assert {r["eventName"] for r in records} == {"INSERT"}
    keys = sorted(r["dynamodb"]["Keys"]["sk"]["S"] for r in records)
    assert keys == ["evt#e1", "evt#e2", "seq#000000000001", "seq#000000000002"]
    assert {r["dynamodb"]["Keys"]["pk"]["S"] for r in records} == {"t1#tr1"}


def test_an_enqueued_review_job_appears_on_the_jobs_stream_once(tables):
    queue = DynamoReviewQueue(tables)
    queue.enqueue("t1", "tr1", "full", T0)
    queue.enqueue("t1", "tr1", "full", T0)  # idempotent while pending: no second record

    # moto (5.2.5) writes an UpdateItem that creates an item as two INSERTs, the first holding only
    # the keys; DynamoDB writes one. The failed second enqueue writes none on either.
    records = [r for r in stream_records(tables.jobs) if "state" in r["dynamodb"]["NewImage"]]
    # the tenant's turn (fair claims) is written beside the job: bookkeeping that wakes nobody
    turns = [r for r in records if r["dynamodb"]["Keys"]["job"]["S"] == "~turn"]
    assert turns and not any(_wakes_reviewer(r) for r in turns)
    (record,) = [r for r in records if r not in turns]
    assert record["eventName"] == "INSERT"
    image = record["dynamodb"]["NewImage"]
    assert (image["tenant_id"]["S"], image["trajectory_id"]["S"], image["kind"]["S"]) == ("t1", "tr1", "full")
    assert image["state"] == {"S": "pending"}
