"""Every store and queue operation translates what pynamodb and botocore raise, at the boundary."""
from __future__ import annotations

import socket
from datetime import datetime, timezone

import pytest

pytest.importorskip("pynamodb")

from botocore.exceptions import BotoCoreError, ClientError  # noqa: E402
from pynamodb.exceptions import PynamoDBException  # noqa: E402

from chalicelib.adapters.dynamo.stores import (  # noqa: E402
    DynamoConfig,
    DynamoExperienceStore,
    DynamoReviewQueue,
    DynamoTables,
    DynamoTenantStore,
    DynamoTrajectoryStore,
    StoreUnavailable,
)
from chalicelib.domain.models import Event, Experience, Tenant, Trajectory  # noqa: E402
from chalicelib.ports import ReviewJob  # noqa: E402
from tests.support.dynamo import CREDENTIALS, REGION, dynamo_tables  # noqa: E402

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
EXP = Experience("t1", "x1", "s", "a", "r", "l", "adv", T0, T0, T0)
JOB = ReviewJob("t1", "tr1", "full", 1)

OPERATIONS = {
    "create_tenant": lambda s: s["tenants"].create_tenant(Tenant("t1", "n", T0), "h"),
    "tenant_for_key": lambda s: s["tenants"].tenant_for_key("h"),
    "add_key": lambda s: s["tenants"].add_key("t1", "h", T0),
    "revoke_keys": lambda s: s["tenants"].revoke_keys("t1"),
    "list_tenants": lambda s: s["tenants"].list_tenants(),
    "create": lambda s: s["trajectories"].create(Trajectory("t1", "tr1", "a", "g", T0, T0)),
    "get": lambda s: s["trajectories"].get("t1", "tr1"),
    "append_events": lambda s: s["trajectories"].append_events("t1", "tr1", [Event("e1", "x", T0)], T0),
    "events": lambda s: s["trajectories"].events("t1", "tr1"),
    "finalize": lambda s: s["trajectories"].finalize("t1", "tr1", "success", None, T0),
    "save_review": lambda s: s["trajectories"].save_review("t1", "tr1", "reviewed", [], {}, T0),
    "add_local_review": lambda s: s["trajectories"].add_local_review("t1", "tr1", [], {}, T0),
    "finalized_unreviewed": lambda s: s["trajectories"].finalized_unreviewed(),
    "trajectory count_by_status": lambda s: s["trajectories"].count_by_status("t1"),
    "put": lambda s: s["experiences"].put(EXP),
    "get experience": lambda s: s["experiences"].get("t1", "x1"),
    "get_many": lambda s: s["experiences"].get_many("t1", ["x1"]),
    "list": lambda s: s["experiences"].list("t1"),
    "find_active_by_fingerprint": lambda s: s["experiences"].find_active_by_fingerprint("t1", "fp", None, None),
    "find_active_by_situation": lambda s: s["experiences"].find_active_by_situation("t1", "sk", None, None),
    "scan_active": lambda s: s["experiences"].scan_active(),
    "experience count_by_status": lambda s: s["experiences"].count_by_status("t1"),
    "enqueue": lambda s: s["queue"].enqueue("t1", "tr1", "full", T0),
    "claim": lambda s: s["queue"].claim(T0, 60),
    "complete": lambda s: s["queue"].complete(JOB),
    "retry_later": lambda s: s["queue"].retry_later(JOB, "e", T0, 1),
    "dead": lambda s: s["queue"].dead(JOB, "e"),
    "pending": lambda s: s["queue"].pending(),
    "release_leases": lambda s: s["queue"].release_leases(T0),
    "adopt_earlier_jobs": lambda s: s["queue"].adopt_earlier_jobs(),
}


def stores(tables: DynamoTables) -> dict:
    return {
        "tenants": DynamoTenantStore(tables),
        "trajectories": DynamoTrajectoryStore(tables),
        "experiences": DynamoExperienceStore(tables),
        "queue": DynamoReviewQueue(tables),
    }


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def unreachable() -> dict:
    config = DynamoConfig(
        prefix="nowhere-",
        region=REGION,
        host=f"http://127.0.0.1:{closed_port()}",
        connect_timeout_seconds=0.5,
        read_timeout_seconds=0.5,
        max_retry_attempts=0,
        **CREDENTIALS,
    )
    return stores(DynamoTables(config))


@pytest.fixture(scope="module")
def without_tables() -> dict:
    return stores(dynamo_tables(max_retry_attempts=0))  # a live endpoint, but nothing created


def assert_translated(excinfo: pytest.ExceptionInfo) -> None:
    cause = excinfo.value.__cause__
    assert isinstance(cause, (PynamoDBException, BotoCoreError, ClientError)), repr(cause)


@pytest.mark.parametrize("operation", list(OPERATIONS))
def test_an_unreachable_endpoint_raises_store_unavailable_from_the_sdk_error(unreachable, operation):
    with pytest.raises(StoreUnavailable) as excinfo:
        OPERATIONS[operation](unreachable)
    assert_translated(excinfo)


@pytest.mark.parametrize("operation", list(OPERATIONS))
def test_a_missing_table_raises_store_unavailable_from_the_sdk_error(without_tables, operation):
    with pytest.raises(StoreUnavailable) as excinfo:
        OPERATIONS[operation](without_tables)
    assert_translated(excinfo)


def test_creating_tables_on_an_unreachable_endpoint_raises_store_unavailable(unreachable):
    with pytest.raises(StoreUnavailable) as excinfo:
        unreachable["tenants"].tables.create("tenants")
    assert_translated(excinfo)
