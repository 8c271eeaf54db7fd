"""Table binding, key limits and the queue's leases on DynamoDB (moto server)."""
from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta, timezone

import pytest

pytest.importorskip("pynamodb")
boto3 = pytest.importorskip("boto3")

from chalicelib.adapters.dynamo.stores import (  # noqa: E402
    DynamoExperienceStore,
    DynamoReviewQueue,
    DynamoTenantStore,
    DynamoTrajectoryStore,
)
from chalicelib.domain.errors import InvalidInput, PayloadTooLarge  # noqa: E402
from chalicelib.domain.models import Experience, ExperienceStatus, Tenant, Trajectory  # noqa: E402
from tests.support.dynamo import CREDENTIALS, REGION, dynamo_tables, moto_endpoint  # noqa: E402

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)


@pytest.fixture
def make_tables():
    made = []

    def make(*groups: str, **config):
        t = dynamo_tables(**config)
        t.create(*groups)
        made.append(t)
        return t

    yield make
    for t in made:
        t.delete()


def exp(experience_id: str, tenant_id: str = "t1", **kw) -> Experience:
    fields = dict(situation="s", action="a", result="r", lesson="l", advice="adv", created_at=T0, updated_at=T0, renewed_at=T0)
    return Experience(tenant_id, experience_id, **{**fields, **kw})


def test_table_names_come_from_the_prefix(make_tables):
    tables = make_tables(prefix="hindsight-test-" + str(id(make_tables))[-6:] + "-")
    client = boto3.client("dynamodb", endpoint_url=moto_endpoint(), region_name=REGION, **CREDENTIALS)
    names = {n for page in client.get_paginator("list_tables").paginate() for n in page["TableNames"]}  # 100 a page
    prefix = tables.config.prefix
    expected = {prefix + n for n in ("tenants", "trajectories", "events", "experiences", "review-jobs")}
    assert expected <= names


def test_two_prefixes_are_two_deployments_that_share_nothing(make_tables):
    a, b = make_tables("tenants", "experiences"), make_tables("tenants", "experiences")
    DynamoTenantStore(a).create_tenant(Tenant("t1", "in a", T0), "hash-1")
    DynamoTenantStore(b).create_tenant(Tenant("t1", "in b", T0), "hash-1")  # no conflict across prefixes
    DynamoExperienceStore(a).put(exp("x1", status=ExperienceStatus.ACTIVE))
    assert [t.name for t in DynamoTenantStore(b).list_tenants()] == ["in b"]
    assert DynamoExperienceStore(b).list("t1").items == []
    assert DynamoExperienceStore(b).scan_active().items == []  # the indexes are bound per prefix too


def test_an_experience_too_big_for_an_item_is_refused_not_cut(make_tables):
    store = DynamoExperienceStore(make_tables("experiences"))
    with pytest.raises(PayloadTooLarge):
        store.put(exp("x1", lesson="s" * 400_000))
    store.put(exp("x1", lesson="s" * 100_000))  # big but fits: stored whole
    assert len(store.get("t1", "x1").lesson) == 100_000


@pytest.mark.parametrize("bad_id", ["a#b", "a b"])
def test_an_id_the_keys_cannot_hold_is_invalid_input(make_tables, bad_id):
    tables = make_tables("trajectories", "experiences")
    with pytest.raises(InvalidInput):
        DynamoExperienceStore(tables).put(exp(bad_id))
    with pytest.raises(InvalidInput):
        DynamoTrajectoryStore(tables).events("t1", bad_id)


def test_a_cursor_of_another_listing_or_tenant_is_invalid_input(make_tables):
    store = DynamoExperienceStore(make_tables("experiences"))
    for i in range(3):
        store.put(exp(f"x{i}", agent_id="a1"))
        store.put(exp(f"x{i}", tenant_id="t2", agent_id="a1"))
    cursor = store.list("t1", limit=1).cursor
    assert cursor is not None
    with pytest.raises(InvalidInput):
        store.list("t2", limit=1, cursor=cursor)
    with pytest.raises(InvalidInput):
        store.list("t1", agent_id="a1", limit=1, cursor=cursor)


def test_scan_active_and_the_queue_give_the_same_answers_whatever_the_shard_count(make_tables):
    answers = []
    for shards in (1, 7):
        tables = make_tables("experiences", "queue", shards=shards)
        store, queue = DynamoExperienceStore(tables), DynamoReviewQueue(tables)
        for t in ("t3", "t1", "t2"):
            for i in range(4):
                store.put(exp(f"x{i}", tenant_id=t))
                queue.enqueue(t, f"tr{i}", "full", T0 + timedelta(seconds=i))
        seen, cursor = [], None
        while True:
            page = store.scan_active(limit=5, cursor=cursor)
            seen += [(e.tenant_id, e.experience_id) for e in page.items]
            if page.cursor is None:
                break
            cursor = page.cursor
        claimed = [j.trajectory_id for j in queue.claim(T0 + timedelta(seconds=2), 60, limit=8)]
        answers.append((seen, queue.pending(), claimed[:6]))
    assert answers[0][0] == sorted(answers[0][0]) and len(answers[0][0]) == 12
    assert answers[0][1] == 12
    assert sorted(answers[0][2]) == ["tr0"] * 3 + ["tr1"] * 3  # the longest due first
    assert answers[0][0] == answers[1][0] and answers[0][1] == answers[1][1]
    assert sorted(answers[0][2]) == sorted(answers[1][2])


def test_workers_claiming_at_once_never_lease_the_same_job(make_tables):
    queue = DynamoReviewQueue(make_tables("queue"))
    for i in range(24):
        queue.enqueue("t1", f"tr{i}", "full", T0)
    start = threading.Barrier(4)

    def work(_: int) -> list[str]:
        start.wait()
        got: list[str] = []
        while batch := queue.claim(T0, 60, limit=3):
            got += [j.trajectory_id for j in batch]
        return got

    with ThreadPoolExecutor(4) as pool:
        claimed = [t for ids in pool.map(work, range(4)) for t in ids]
    assert sorted(claimed) == sorted(f"tr{i}" for i in range(24))  # each once, none lost
    assert queue.pending() == 24  # leased, not finished


def test_jobs_of_the_earlier_shared_shard_layout_are_claimed_once_the_sweep_moved_them(make_tables):
    from chalicelib.adapters.dynamo.items import compose, micros, shard_of, us_key
    from chalicelib.services.review_jobs import requeue_unreviewed
    from tests.support.fakes import fake_deps

    tables = make_tables("queue")
    queue, J = DynamoReviewQueue(tables), tables.jobs
    for trajectory_id, state, attempts in (("old-pending", "pending", 0), ("old-lease-ran-out", "leased", 1)):
        due_us = micros(T0)
        J("t1", compose(trajectory_id, "full"), trajectory_id=trajectory_id, kind="full", state=state, attempts=attempts,
          due_us=due_us, due_shard=shard_of(compose("t1", trajectory_id, "full"), tables.config.shards),
          due_sk=us_key(due_us, "t1", trajectory_id, "full")).save()  # as the earlier version queued them
    queue.enqueue("t2", "new", "full", T0)
    later = T0 + timedelta(seconds=1)
    assert queue.pending() == 3  # counted where they are
    assert [j.trajectory_id for j in queue.claim(later, 60, limit=10)] == ["new"]  # claims read tenants' partitions
    requeue_unreviewed(fake_deps(queue=queue))  # the outbox sweep (every minute in the cloud) moves them
    assert queue.adopt_earlier_jobs() == 0
    claimed = sorted((j.trajectory_id, j.attempts) for j in queue.claim(later, 60, limit=10))
    assert claimed == [("old-lease-ran-out", 2), ("old-pending", 1)]
    assert queue.pending() == 3 and queue.claim(later, 60, limit=10) == []


def test_a_trajectory_created_twice_at_once_is_created_once(make_tables):
    store = DynamoTrajectoryStore(make_tables("trajectories"))
    start = threading.Barrier(4)

    def create(n: int) -> bool:
        start.wait()
        return store.create(Trajectory("t1", "tr1", "agent", f"goal {n}", T0, T0))[1]

    with ThreadPoolExecutor(4) as pool:
        created = list(pool.map(create, range(4)))
    assert created.count(True) == 1


def test_a_look_alike_of_a_name_reserved_before_names_had_keys_is_refused(make_tables):
    """A tenant an earlier version made reserved its name as given ("name#Acme Corp"): a look-alike
    reserves another item, so the listing is what finds it."""
    from chalicelib.adapters.dynamo.items import time_key
    from chalicelib.adapters.dynamo.tenants import LISTING, NAME_SK, TENANT_SK, name_pk, tenant_pk
    from chalicelib.domain.errors import TenantNameTaken

    tables = make_tables("tenants")
    Item = tables.tenants
    Item(tenant_pk("t1"), TENANT_SK, tenant_id="t1", name="Acme Corp", created_at=T0.isoformat(), listing=LISTING,
         created_sk=time_key(T0, "t1")).save()
    Item(name_pk("Acme Corp"), NAME_SK, tenant_id="t1", created_at=T0.isoformat()).save()
    store = DynamoTenantStore(tables)
    for name in ("acme corp", "ACME\u200b Corp"):
        with pytest.raises(TenantNameTaken) as refused:
            store.create_tenant(Tenant("t2", name, T0), "hash-2")
        assert refused.value.tenant_id == "t1" and refused.value.existing_name == "Acme Corp"
    assert [t.tenant_id for t in store.list_tenants()] == ["t1"]
