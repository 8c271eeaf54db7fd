"""The aws backend's k-NN under filters that few entries pass, on the real node, against the exact
answer of the embedded index (numpy) over the same entries and the same ``IndexFilter``.

Lucene searches each segment on its own: when fewer entries of a segment pass the filter than k,
or its graph search visits more nodes than pass, it scores every passing entry of that segment
instead. The index here has several segments (one per refreshed write) and two tenants whose
vectors sit in the same clusters, so a filter applied after the k-NN, or one segment's answer
missing, shows as a missing or a foreign id. The stored document keeps no vector in ``_source``;
the cosines still come from the node (the script reads the indexed vector)."""
from __future__ import annotations

import uuid

import numpy as np
import pytest

from chalicelib.adapters.embedded.index import NumpyVectorIndex
from chalicelib.adapters.opensearch.index import OpenSearchVectorIndex, build_client
from chalicelib.adapters.opensearch.queries import IndexSpec, doc_id, routing
from chalicelib.adapters.embedded.db import SqliteDatabase
from chalicelib.ports import IndexEntry, IndexFilter
from tests.support.opensearch import node_url

pytestmark = pytest.mark.opensearch

DIM = 32
K = 25
WRITES = 5  # refreshed writes per tenant: one segment each


def scopes(i: int) -> dict:
    """Scopes spread so that the filters below let through from a quarter of the entries to a few."""
    return dict(
        agent_id=None if i % 6 == 0 else ("a1", "a2")[i % 2],
        user_id=None if i % 4 == 0 else ("u1", "u2", "u3")[i % 3],
        tools=() if i % 10 == 0 else ("kubectl",) if i % 7 == 0 else (("git",), ("psql", "git"))[i % 2],
        task_type=None if i % 11 == 0 else ("deploy", "debug")[(i // 3) % 2],
    )


def entries(tenant: str, count: int, rng: np.random.Generator, centres: np.ndarray) -> list[IndexEntry]:
    out = []
    for i in range(count):
        vec = centres[i % len(centres)] + rng.normal(0, 0.15, DIM)
        out.append(IndexEntry(f"{tenant}-{i}", (vec / np.linalg.norm(vec)).astype(np.float32), text=f"case {i}",
                              **scopes(i)))
    return out


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    client = build_client(node_url(), service="none", timeout=30)
    spec = IndexSpec(f"hindsight-filtered-{uuid.uuid4().hex[:12]}", DIM, replicas=0)
    node = OpenSearchVectorIndex(client, spec, refresh=True)
    node.ensure_index()
    # the merge policy would join such small segments in the background: kept apart, the searches
    # meet several, as on an index that lives
    client.indices.put_settings(index=spec.name, body={"index": {"merge.policy.segments_per_tier": 50}})
    exact = NumpyVectorIndex(SqliteDatabase(str(tmp_path_factory.mktemp("np") / "v.db")), DIM)
    rng = np.random.default_rng(5)
    centres = rng.normal(0, 1, (8, DIM))
    for tenant, count in (("t1", 600), ("t2", 300)):
        batch = entries(tenant, count, rng, centres)
        step = len(batch) // WRITES
        for start in range(0, len(batch), step):
            node.upsert(tenant, batch[start : start + step])
            exact.upsert(tenant, batch[start : start + step])
    yield node, exact, client, spec.name, centres
    client.indices.delete(index=spec.name, ignore_unavailable=True)
    client.close()


FILTERS = {
    "shared only": IndexFilter(),
    "agent": IndexFilter(agent_id="a1"),
    "tools and task type": IndexFilter(agent_id="a2", tools=("git",), task_type="deploy"),
    "user, tools and task type": IndexFilter(agent_id="a1", user_id="u1", tools=("kubectl",), task_type="debug"),
}


def test_the_index_has_several_segments(world):
    _, _, client, name, _ = world
    segments = client.indices.segments(index=name)["indices"][name]["shards"]["0"][0]["segments"]
    assert len(segments) >= 3, "one segment would not exercise the per-segment searches"


@pytest.mark.parametrize("name", FILTERS)
def test_the_knn_under_a_filter_finds_the_exact_answer(world, name):
    node, exact, _, _, centres = world
    flt = FILTERS[name]
    for c in range(3):
        query = centres[c] + np.random.default_rng(c).normal(0, 0.1, DIM)
        want = exact.search("t1", query, flt, K)
        got = node.search("t1", query, flt, K)
        assert len(want) >= 5, "the filter must let some entries through to mean anything"
        assert [i for i, _ in got] == [i for i, _ in want]
        assert [s for _, s in got] == pytest.approx([s for _, s in want], abs=1e-5)


def test_few_passing_entries_are_all_found_even_below_k(world):
    node, exact, _, _, centres = world
    flt = FILTERS["user, tools and task type"]
    passing = exact.search("t1", centres[0], flt, 10_000)
    assert len(passing) < K, "the case is a filter that fewer than k entries pass"
    assert sorted(i for i, _ in node.search("t1", centres[0], flt, K)) == sorted(i for i, _ in passing)


def test_a_stored_document_keeps_no_vector_but_its_cosine_is_still_served(world):
    node, exact, client, name, centres = world
    stored = client.get(index=name, id=doc_id("t1", "t1-7"), routing=routing(node.spec, "t1"))["_source"]
    assert "embedding" not in stored and stored["experience_id"] == "t1-7"
    ids = ["t1-7", "t1-8", "t1-9"]
    assert node.similarities("t1", centres[1], ids) == pytest.approx(exact.similarities("t1", centres[1], ids), abs=1e-5)
