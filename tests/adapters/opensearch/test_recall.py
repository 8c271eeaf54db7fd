"""The aws backend's recall on the real node: one HTTP request per recall, counted at the client's
connections, and the same hits as the two-request shape it replaced (the k-NN by ids for the
cosines of BM25 hits the k-NN missed)."""
from __future__ import annotations

import uuid
from dataclasses import replace

import numpy as np
import pytest

from chalicelib.adapters.embedders.hash import HashEmbedder
from chalicelib.adapters.opensearch.index import OpenSearchVectorIndex, build_client
from chalicelib.adapters.opensearch.queries import IndexSpec
from chalicelib.ports import IndexFilter
from chalicelib.services.indexing import index_experiences
from chalicelib.services.recall import recall
from devtools.opensearch_node import RequestCounter
from tests.support.builders import experience
from tests.support.fakes import fake_deps
from tests.support.opensearch import node_url

pytestmark = pytest.mark.opensearch

TOOLS = ("kubectl", "git", "terraform", "psql")
WORDS = ("rollout", "namespace", "NotFound", "timeout", "billing", "export", "migration", "lock", "branch", "rebase")


def lessons(tenant_id: str, count: int, seed: int) -> list:
    """Lessons whose words and scopes vary, so BM25 and the k-NN disagree on the candidates."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(count):
        words = " ".join(rng.choice(WORDS, 3, replace=False))
        tool = TOOLS[i % len(TOOLS)]
        out.append(experience(
            tenant_id=tenant_id, experience_id=f"{tenant_id}-x{i}",
            situation=f"{tool} {words} case {i}", lesson=f"When {words} happens check {tool} first.",
            advice=f"Check {tool} {words}.", tools=[tool] if i % 3 else [],
            task_type=("operation", "query", None)[i % 3],
            agent_id=("a1", None)[i % 2], user_id=(None, "u1", "u2")[i % 3],
        ))
    return out


@pytest.fixture
def world():
    client = build_client(node_url(), service="none", timeout=30)
    spec = IndexSpec(f"hindsight-recall-{uuid.uuid4().hex[:12]}", HashEmbedder().dim, replicas=0)
    one = OpenSearchVectorIndex(client, spec, refresh=True)
    two = OpenSearchVectorIndex(client, spec, refresh=True, node_cosines=False)
    # candidates (k) below the number of lessons, so BM25 finds lessons the k-NN does not return
    deps = fake_deps(index=one, recall_candidates=8)
    for tenant_id, seed in (("t1", 1), ("t2", 2)):
        batch = lessons(tenant_id, 60, seed)
        for exp in batch:
            deps.experiences.put(exp)
        index_experiences(deps, tenant_id, batch)
    two.ensure_index()  # its existence check is not part of a recall
    counter = RequestCounter(client)
    yield deps, one, two, counter
    client.indices.delete(index=spec.name, ignore_unavailable=True)
    client.close()


QUERIES = [
    dict(query="kubectl rollout NotFound in the namespace", agent_id="a1", user_id="u1", tools=("kubectl",),
         task_type="operation", top_k=2),
    dict(query="git rebase lock on a branch", agent_id="a1", top_k=3),
    dict(query="terraform migration timeout billing export", user_id="u2", tools=("terraform", "psql"), top_k=2),
    dict(query="psql lock", agent_id="a1", user_id="u2", task_type="query", top_k=1),
]


@pytest.mark.parametrize("query", QUERIES, ids=[q["query"] for q in QUERIES])
def test_a_recall_is_one_request_and_finds_what_two_requests_found(world, query):
    deps, one, two, counter = world
    vector = deps.embedder.embed([query["query"]])[0]
    k = max(deps.recall_candidates, query["top_k"] * 4)
    flt = IndexFilter(agent_id=query.get("agent_id"), user_id=query.get("user_id"), tools=query.get("tools", ()),
                      task_type=query.get("task_type") if deps.recall_filter_task_type else None)
    knn, lexical = one.search("t1", vector, flt, k), one.lexical_search("t1", query["query"], flt, k)
    assert {i for i, _ in lexical} - {i for i, _ in knn}, "the case must have BM25 hits outside the k-NN to mean anything"

    before = counter.count
    hits, advice = recall(deps, "t1", **query)
    assert counter.count - before == 1

    before = counter.count
    old_hits, old_advice = recall(replace(deps, index=two), "t1", **query)
    assert counter.count - before == 2
    assert [h.experience.experience_id for h in hits] == [h.experience.experience_id for h in old_hits]
    assert [h.score for h in hits] == pytest.approx([h.score for h in old_hits], abs=1e-6)
    assert advice == old_advice
    assert hits and all(h.experience.tenant_id == "t1" for h in hits)

