"""Contract of ``ports.TenantData`` (a tenant's record, its trajectories by id, the purge of all it
owns), of ``VectorIndex.purge_tenant`` and of ``ports.ExportStore``, on every backend: nothing of
the purged tenant is left where any port can see it; another tenant's data is untouched."""
from __future__ import annotations

import uuid
from datetime import timedelta

import numpy as np
import pytest

from chalicelib.domain.errors import NotFound
from chalicelib.domain.models import Event, Experience, ExperienceStatus, Tenant, Trajectory
from chalicelib.ports import IndexEntry, IndexFilter, ReviewJob, ServedRecall
from tests.contract.conftest import DIM, T0


@pytest.fixture
def tenant_data(backend, tenant_store, trajectory_store, experience_store, review_queue, recall_ledger):
    """The backend's ``TenantData`` over the same storage as the stores the test writes through."""
    if backend.name == "memory":
        from tests.support.fakes import InMemoryTenantData

        return InMemoryTenantData(tenant_store, trajectory_store, experience_store, review_queue, recall_ledger)
    if backend.name == "sqlite":
        from chalicelib.adapters.embedded.tenant_data import SqliteTenantData

        return SqliteTenantData(backend.db)
    if backend.name == "dynamo":
        from chalicelib.adapters.dynamo.tenant_data import DynamoTenantData

        return DynamoTenantData(backend._shared.ensure("rate_limits"))
    pytest.skip(f"no TenantData on the {backend.name} backend")


def seed(stores, name: str, trajectories: int = 3, events: int = 4) -> str:
    tenant_store, trajectory_store, experience_store, review_queue, recall_ledger = stores
    tenant_id = f"t_{name}_{uuid.uuid4().hex[:6]}"
    tenant_store.create_tenant(Tenant(tenant_id, name, T0), f"hash-{tenant_id}-1")
    tenant_store.add_key(tenant_id, f"hash-{tenant_id}-2", T0)
    for i in range(trajectories):
        trajectory_store.create(Trajectory(tenant_id=tenant_id, trajectory_id=f"tr{i}", agent_id="bot", goal=f"{name} goal",
                                           created_at=T0, updated_at=T0))
        trajectory_store.append_events(tenant_id, f"tr{i}", [
            Event(event_id=f"e{j}", type="user_input", timestamp=T0, content={"text": f"{name} {j}"}) for j in range(events)], T0)
    for i in range(3):
        experience_store.put(Experience(tenant_id=tenant_id, experience_id=f"x{i}", situation=f"{name} situation {i}",
                                        action="act", result="res", lesson="l", advice="a", created_at=T0, updated_at=T0,
                                        renewed_at=T0, status=ExperienceStatus.ACTIVE))
    review_queue.enqueue(tenant_id, "tr0", "full", T0)
    review_queue.enqueue(tenant_id, "tr1", "full", T0)
    review_queue.dead(ReviewJob(tenant_id, "tr1", "full", 3), "boom", T0)
    recall_ledger.record(ServedRecall(tenant_id, "r1", ("x0",), T0, T0 + timedelta(days=3)))
    recall_ledger.mark_credited(tenant_id, "tr0", "x0", T0 + timedelta(days=3))
    return tenant_id


@pytest.fixture
def stores(tenant_store, trajectory_store, experience_store, review_queue, recall_ledger):
    return tenant_store, trajectory_store, experience_store, review_queue, recall_ledger


def held(stores, tenant_id: str) -> dict:
    """What the ports can see of the tenant."""
    tenant_store, trajectory_store, experience_store, review_queue, recall_ledger = stores
    found = {}
    for i in range(3):
        try:
            trajectory_store.get(tenant_id, f"tr{i}")
            found.setdefault("trajectories", 0)
            found["trajectories"] += 1
        except NotFound:
            pass
        if trajectory_store.events_page(tenant_id, f"tr{i}", 0, 100):
            found["events"] = found.get("events", 0) + 1
    found["experiences"] = sum(experience_store.count_by_status(tenant_id).values())
    found["keys"] = sum(tenant_store.tenant_for_key(f"hash-{tenant_id}-{n}") is not None for n in (1, 2))
    found["dead"] = len(review_queue.dead_jobs(tenant_id))
    found["recalls"] = len(recall_ledger.served(tenant_id, ["r1"], T0))
    found["credited"] = int(recall_ledger.is_credited(tenant_id, "tr0", "x0"))
    return {k: v for k, v in found.items() if v}


def test_the_record_and_trajectory_ids_of_a_tenant(tenant_data, stores):
    a = seed(stores, "alpha", trajectories=5, events=1)
    seed(stores, "beta", trajectories=2, events=1)
    tenant = tenant_data.tenant(a)
    assert tenant is not None and tenant.tenant_id == a and tenant.name == "alpha"
    assert tenant_data.tenant("t_never") is None
    assert tenant_data.trajectory_ids(a, None, 2) == ["tr0", "tr1"]
    assert tenant_data.trajectory_ids(a, "tr1", 2) == ["tr2", "tr3"]
    assert tenant_data.trajectory_ids(a, "tr3", 10) == ["tr4"]
    assert tenant_data.trajectory_ids(a, "tr4", 10) == []
    assert tenant_data.trajectory_ids("t_never", None, 10) == []


def test_a_purge_in_bounded_steps_leaves_nothing_of_the_tenant_and_all_of_another(tenant_data, stores):
    a = seed(stores, "alpha")
    b = seed(stores, "beta")
    before_b = held(stores, b)
    assert held(stores, a) == before_b and before_b["experiences"] == 3
    steps, total = 0, 0
    while (n := tenant_data.purge(a, 5)) > 0:
        assert n <= 5 + 4  # bounded (a store may take a trajectory with its events as one)
        total += n
        steps += 1
        assert steps < 200
    assert steps > 3 and total >= 3 + 3 + 12 + 3
    assert held(stores, a) == {}
    assert tenant_data.tenant(a) is None and tenant_data.trajectory_ids(a, None, 10) == []
    assert tenant_data.purge(a, 5) == 0  # idempotent
    assert held(stores, b) == before_b and tenant_data.tenant(b) is not None
    assert tenant_data.trajectory_ids(b, None, 10) == ["tr0", "tr1", "tr2"]


def test_the_record_goes_last_and_frees_the_name(tenant_data, stores):
    tenant_store = stores[0]
    a = seed(stores, "gamma", trajectories=1, events=1)
    tenant_data.purge(a, 1)
    assert tenant_data.tenant(a) is not None  # not before everything else of it is gone
    while tenant_data.purge(a, 1):
        pass
    assert tenant_data.tenant(a) is None
    tenant_store.create_tenant(Tenant("t_gamma_again", "Gamma", T0), "hash-gamma-again")  # the name is free again
    assert tenant_store.tenant_for_key("hash-gamma-again") == "t_gamma_again"


def _entries(prefix: str, n: int) -> list[IndexEntry]:
    rng = np.random.default_rng(len(prefix))
    return [IndexEntry(f"{prefix}{i}", rng.normal(size=DIM).astype(np.float32), text=f"{prefix} lesson {i}") for i in range(n)]


def _settle(index) -> None:
    settle = getattr(index, "_settle", None)  # the serverless harness: a write shows once refreshed
    if settle is not None:
        settle()


def test_an_index_purge_removes_the_tenants_entries_only(vector_index):
    vector_index.upsert("ta", _entries("a", 7))
    vector_index.upsert("tb", _entries("b", 3))
    _settle(vector_index)
    total, steps = 0, 0
    while True:
        n = vector_index.purge_tenant("ta", 3)
        _settle(vector_index)
        assert n <= 3
        if n == 0:
            break
        total, steps = total + n, steps + 1
        assert steps < 50
    assert total == 7 and vector_index.count("ta") == 0
    q = np.ones(DIM, dtype=np.float32)
    assert vector_index.search("ta", q, IndexFilter(), 10) == []
    assert vector_index.count("tb") == 3 and len(vector_index.search("tb", q, IndexFilter(), 10)) == 3
    assert vector_index.purge_tenant("t_never", 3) == 0


# --- export stores -------------------------------------------------------------------------------


@pytest.fixture(params=["memory", "files", "s3"])
def export_store(request, tmp_path):
    if request.param == "memory":
        from tests.support.fakes import InMemoryExportStore

        yield InMemoryExportStore()
    elif request.param == "files":
        from chalicelib.adapters.embedded.tenant_data import FileExportStore

        yield FileExportStore(tmp_path / "exports")
    else:
        import botocore.session

        from chalicelib.adapters.s3_exports import S3ExportStore
        from tests.support.dynamo import CREDENTIALS, REGION, moto_endpoint

        client = botocore.session.get_session().create_client("s3", region_name=REGION, endpoint_url=moto_endpoint(),
                                                              **CREDENTIALS)
        bucket = f"exports-{uuid.uuid4().hex[:12]}"
        client.create_bucket(Bucket=bucket)
        yield S3ExportStore(bucket, client=client)


def test_parts_are_written_read_and_deleted_by_tenant(export_store):
    export_store.write("ta/x1/part-00001.jsonl", b'{"type":"tenant"}\n')
    export_store.write("ta/x1/part-00002.jsonl", b'{"type":"event"}\n')
    export_store.write("ta/x2/part-00001.jsonl", b"1\n")
    export_store.write("tb/x3/part-00001.jsonl", b"2\n")
    export_store.write("ta/x2/part-00001.jsonl", b"3\n")  # replaced
    assert export_store.read("ta/x1/part-00002.jsonl") == b'{"type":"event"}\n'
    assert export_store.read("ta/x2/part-00001.jsonl") == b"3\n"
    with pytest.raises(NotFound):
        export_store.read("ta/x1/part-00009.jsonl")
    assert export_store.location("ta/x1/part-00001.jsonl").endswith("ta/x1/part-00001.jsonl")
    assert export_store.delete_prefix("ta/") == 3
    assert export_store.delete_prefix("ta/") == 0
    for key in ("ta/x1/part-00001.jsonl", "ta/x2/part-00001.jsonl"):
        with pytest.raises(NotFound):
            export_store.read(key)
    assert export_store.read("tb/x3/part-00001.jsonl") == b"2\n"
