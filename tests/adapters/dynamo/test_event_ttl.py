"""Event retention on DynamoDB (moto server): every event item and its idempotency marker carry the
trajectory's expiry in the TTL attribute (epoch seconds); moto does not run TTL, so what is
asserted is the attribute DynamoDB deletes by, and that an append past it stores nothing."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

pytest.importorskip("pynamodb")
boto3 = pytest.importorskip("boto3")

from chalicelib.adapters.dynamo.stores import DynamoTrajectoryStore  # noqa: E402
from chalicelib.domain.errors import Conflict  # noqa: E402
from chalicelib.domain.models import Event, Trajectory  # noqa: E402
from tests.support.dynamo import CREDENTIALS, REGION, dynamo_tables, moto_endpoint  # noqa: E402

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
EXPIRY = T0 + timedelta(days=30)


@pytest.fixture
def tables():
    t = dynamo_tables()
    t.create("trajectories")
    yield t
    t.delete()


def _raw_events(tables) -> list[dict]:
    client = boto3.client("dynamodb", endpoint_url=moto_endpoint(), region_name=REGION, **CREDENTIALS)
    return client.scan(TableName=tables.config.prefix + "events")["Items"]


def _event(event_id: str) -> Event:
    return Event(event_id=event_id, type="tool_call", timestamp=T0, content={"tool": "git", "status": "ok"})


def test_events_and_their_markers_carry_the_trajectorys_expiry_as_epoch_seconds(tables):
    store = DynamoTrajectoryStore(tables)
    store.create(Trajectory("t1", "tr1", "agent", "goal", T0, T0, events_expire_at=EXPIRY))
    store.create(Trajectory("t1", "kept", "agent", "goal", T0, T0))
    store.append_events("t1", "tr1", [_event("e1"), _event("e2")], T0)
    store.append_events("t1", "kept", [_event("e1")], T0)
    items = _raw_events(tables)
    expiring = [i for i in items if i["pk"]["S"].endswith("#tr1")]
    assert len(expiring) == 4  # two events, two markers
    assert {i["expires"]["N"] for i in expiring} == {str(int(EXPIRY.timestamp()))}
    assert all("expires" not in i for i in items if i["pk"]["S"].endswith("#kept"))


def test_an_append_past_the_expiry_stores_no_item(tables):
    store = DynamoTrajectoryStore(tables)
    store.create(Trajectory("t1", "tr1", "agent", "goal", T0, T0, events_expire_at=EXPIRY))
    with pytest.raises(Conflict):
        store.append_events("t1", "tr1", [_event("e1")], EXPIRY + timedelta(seconds=1))
    assert _raw_events(tables) == []
