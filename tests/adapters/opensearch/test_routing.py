"""Tenant routing on a real node, on an index of three primary shards.

Every request about a tenant's documents carries ``routing=<tenant>`` (``queries.routing``): its
documents sit on the one shard the routing picks, its searches and counts visit that shard alone,
and a get or a delete routed alike finds what the write placed. Tenants that share a shard still
see only their own documents (the tenant filter of every query)."""
from __future__ import annotations

import uuid

import numpy as np
import pytest

from chalicelib.adapters.opensearch import queries as q
from chalicelib.adapters.opensearch.index import OpenSearchVectorIndex, build_client
from chalicelib.ports import IndexEntry, IndexFilter
from tests.support.opensearch import node_url

pytestmark = pytest.mark.opensearch

DIM = 8
SHARDS = 3
TENANTS = [f"tenant-{i}" for i in range(12)]  # enough for every shard to hold several tenants


def entry(tenant: str, i: int, rng: np.random.Generator) -> IndexEntry:
    return IndexEntry(f"{tenant}-e{i}", rng.normal(size=DIM).astype(np.float32), text=f"kubectl rollout case {i}",
                      tools=("kubectl",))


@pytest.fixture(scope="module")
def world():
    client = build_client(node_url(), service="none", timeout=30)
    spec = q.IndexSpec(f"hindsight-routing-{uuid.uuid4().hex[:12]}", DIM, replicas=0, shards=SHARDS)
    index = OpenSearchVectorIndex(client, spec, refresh=True)
    rng = np.random.default_rng(3)
    written = {t: [entry(t, i, rng) for i in range(6)] for t in TENANTS}
    for tenant, entries in written.items():
        index.upsert(tenant, entries)
    try:
        yield client, index, written
    finally:
        client.indices.delete(index=spec.name, ignore_unavailable=True)
        client.close()


def shard_of(client, index: OpenSearchVectorIndex, tenant: str) -> set[int]:
    """The shards holding the tenant's documents, as the node reports them (``_shard`` by explain)."""
    response = client.search(index=index.spec.name, body={"size": 100, "query": {"term": {"tenant_id": tenant}},
                                                           "explain": True, "_source": False})
    return {int(h["_shard"].strip("[]").split("][")[-1]) for h in response["hits"]["hits"]}


def test_the_index_has_the_shards_the_settings_say(world):
    client, index, _ = world
    settings = client.indices.get(index=index.spec.name)[index.spec.name]["settings"]["index"]
    assert int(settings["number_of_shards"]) == SHARDS


def test_a_tenants_documents_sit_on_one_shard_and_tenants_spread_over_all(world):
    client, index, _ = world
    placed = {t: shard_of(client, index, t) for t in TENANTS}
    assert all(len(shards) == 1 for shards in placed.values()), placed
    assert set().union(*placed.values()) == set(range(SHARDS))  # the tenants use every shard


def test_searches_and_counts_visit_one_shard_and_return_the_tenants_own_documents(world):
    client, index, written = world
    for tenant, entries in written.items():
        own = {e.experience_id for e in entries}
        vector = entries[0].vector
        hits = index.search(tenant, vector, IndexFilter(), 50)
        assert {i for i, _ in hits} == own
        assert hits[0][0] == entries[0].experience_id
        assert {i for i, _ in index.lexical_search(tenant, "kubectl rollout", IndexFilter(tools=("kubectl",)), 50)} == own
        semantic, lexical = index.hybrid_search(tenant, vector, "rollout", IndexFilter(), 50)
        assert set(semantic) == own and set(lexical) == own
        assert set(index.similarities(tenant, vector, [e.experience_id for e in written["tenant-0"]] + list(own))) == own
        assert index.count(tenant) == len(entries)
    # the requests the adapter makes visit the tenant's shard alone
    tenant = TENANTS[1]
    body = q.search_query(tenant, [1.0] + [0.0] * (DIM - 1), IndexFilter(), 5)
    routed = client.search(index=index.spec.name, body=body, routing=q.routing(index.spec, tenant))
    assert routed["_shards"]["total"] == 1
    scattered = client.search(index=index.spec.name, body=body)
    assert scattered["_shards"]["total"] == SHARDS  # what every search cost before routing


def test_a_get_finds_a_document_by_its_routing_and_a_write_without_it_is_refused(world):
    client, index, written = world
    tenant = TENANTS[2]
    doc = q.doc_id(tenant, written[tenant][0].experience_id)
    found = client.get(index=index.spec.name, id=doc, routing=q.routing(index.spec, tenant))
    assert found["found"] and found["_source"]["tenant_id"] == tenant
    with pytest.raises(Exception, match="routing"):  # the index refuses an unrouted write or get
        client.index(index=index.spec.name, id="1:x:y", body={"tenant_id": "x", "experience_id": "y", "text": "z"})


def test_deletes_and_replacements_find_what_the_writes_placed(world):
    client, index, written = world
    tenant, other = TENANTS[3], TENANTS[4]
    ids = [e.experience_id for e in written[tenant]]
    index.delete(tenant, ids[:2])
    index.delete(other, ids[2:])  # another tenant's delete of these ids removes nothing
    assert index.count(tenant) == len(ids) - 2
    assert {i for i, _ in index.search(tenant, written[tenant][3].vector, IndexFilter(), 50)} == set(ids[2:])
    # a replacement (same id) stays one document, on the tenant's shard
    replaced = IndexEntry(ids[3], written[tenant][3].vector, text="helm upgrade")
    index.upsert(tenant, [replaced])
    assert index.count(tenant) == len(ids) - 2
    assert {i for i, _ in index.lexical_search(tenant, "helm upgrade", IndexFilter(all_scopes=True), 50)} == {ids[3]}
    assert len(shard_of(client, index, tenant)) == 1


def test_a_bulk_write_of_many_tenants_documents_is_found_by_each(world):
    client, index, _ = world
    rng = np.random.default_rng(11)
    big = [entry("bulk-tenant", i, rng) for i in range(120)]
    small = OpenSearchVectorIndex(client, index.spec, refresh="wait_for", bulk_chunk=25)  # several bulk requests
    small.upsert("bulk-tenant", big)
    assert small.count("bulk-tenant") == 120
    assert len(shard_of(client, index, "bulk-tenant")) == 1
    small.delete("bulk-tenant", [e.experience_id for e in big[:100]])
    assert small.count("bulk-tenant") == 20
    assert {i for i, _ in small.search("bulk-tenant", big[110].vector, IndexFilter(), 200)} == {
        e.experience_id for e in big[100:]}
