"""Hybrid recall: lexical evidence breaks semantic ties; rule filters decide who is a candidate."""
from __future__ import annotations

import numpy as np
import pytest

from chalicelib.domain.models import Experience
from chalicelib.services import recall
from chalicelib.services.indexing import index_experiences
from tests.support.fakes import FakeClock, fake_deps


class FlatEmbedder:
    """Every text means the same: only the lexical side can tell lessons apart."""

    dim, similarity_floor = 8, 0.0

    def embed(self, texts, query=False):
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        out[:, 0] = 1.0
        return out


_n = iter(range(1, 10_000))


def write(deps, advice, **kw):
    """A stored and indexed lesson; ``kw`` may set what only a review sets (intent, fingerprint)."""
    now = deps.clock.now()
    exp = Experience(
        tenant_id="t1", experience_id=f"exp_{next(_n)}", situation=kw.pop("situation", "A tool call failed."),
        action="", result="", lesson=advice, advice=advice, created_at=now, updated_at=now, renewed_at=now, **kw,
    )
    deps.experiences.put(exp)
    index_experiences(deps, "t1", [exp])
    return exp.experience_id


@pytest.fixture()
def deps():
    return fake_deps(FakeClock(), embedder=FlatEmbedder())


def test_the_lesson_naming_the_error_and_tool_wins_a_semantic_tie(deps):
    write(deps, "Quote column names that contain spaces when you call `sql_query`.", tools=["sql_query"])
    target = write(deps, "Add a LIMIT to `sql_query` on the events table: QueryTimeout otherwise.", tools=["sql_query"])
    hits, _ = recall.recall(deps, "t1", "sql_query on events keeps hitting QueryTimeout")
    assert hits[0].experience.experience_id == target
    assert hits[0].explanation.lexical > hits[1].explanation.lexical
    assert hits[0].explanation.semantic == hits[1].explanation.semantic


def test_lexical_only_candidates_get_their_semantic_score_too(deps):
    deps.recall_candidates = 1  # the vector side returns a single candidate
    ids = [write(deps, f"Unrelated lesson number {i} about billing exports.") for i in range(5)]
    target = write(deps, "Pass `namespace` to `kubectl_rollout`; it fails with NotFound otherwise.")
    hits, _ = recall.recall(deps, "t1", "kubectl_rollout NotFound namespace", top_k=1)
    assert hits[0].experience.experience_id == target
    assert hits[0].explanation.semantic == pytest.approx(1.0)
    assert target not in ids


def test_another_task_type_is_not_a_candidate_unless_the_filter_is_off(deps):
    op = write(deps, "Drain the node before `kubectl_upgrade`.", task_type="operation")
    write(deps, "Use `kubectl_get` with -o wide to see node versions.", task_type="query")
    hits, _ = recall.recall(deps, "t1", "upgrade the node", task_type="operation", top_k=5)
    assert [h.experience.experience_id for h in hits] == [op]
    deps.recall_filter_task_type = False
    hits, _ = recall.recall(deps, "t1", "upgrade the node", task_type="operation", top_k=5)
    assert len(hits) == 2 and hits[0].experience.experience_id == op  # task match still scores


def test_a_lesson_of_another_intent_is_not_a_candidate_unless_the_filter_is_off(deps):
    book = write(deps, "Check the fare class before `book_flight`.", intent="book a flight")
    cancel = write(deps, "Check the refund rules before `cancel_flight`.", intent="cancel a booking")
    anyone = write(deps, "Check the passport expiry before `issue_ticket`.")
    q = dict(tenant_id="t1", query="a flight to Rome", intent=" Book a Flight", top_k=5)
    hits, _ = recall.recall(deps, **q)
    assert sorted(h.experience.experience_id for h in hits) == sorted([book, anyone])
    deps.recall_filter_intent = False
    by_id = {h.experience.experience_id: h for h in recall.recall(deps, **q)[0]}
    assert set(by_id) == {book, cancel, anyone}
    assert by_id[cancel].explanation.tag_match == 0.0 and by_id[book].explanation.tag_match == 1.0
    assert by_id[cancel].score < by_id[book].score  # the intent still scores


def test_the_same_lesson_in_two_scopes_is_returned_once(deps):
    shared = write(deps, "Pass `namespace` to `kubectl_rollout`.", fingerprint="fp-ns")
    write(deps, "Pass `namespace` to `kubectl_rollout`.", agent_id="a1", fingerprint="fp-ns")
    other = write(deps, "Drain the node before `kubectl_upgrade`.")
    hits, advice = recall.recall(deps, "t1", "kubectl_rollout namespace", agent_id="a1", top_k=5)
    ids = [h.experience.experience_id for h in hits]
    assert len(ids) == 2 and other in ids
    assert advice.count("Pass `namespace`") == 1


def test_lessons_ranked_above_as_copies_of_one_leave_top_k_to_distinct_ones(deps):
    copies = [write(deps, "Pass `namespace` to `kubectl_rollout`.", fingerprint="fp-ns") for _ in range(3)]
    label = write(deps, "Label the pod before `kubectl_rollout` restarts it.")
    write(deps, "Drain the node before `kubectl_upgrade`.")
    hits, advice = recall.recall(deps, "t1", "kubectl_rollout namespace", top_k=2)
    ids = [h.experience.experience_id for h in hits]
    assert len(ids) == 2 and ids[0] in copies and ids[1] == label
    assert advice.count("Pass `namespace`") == 1


class SidedEmbedder:
    """A model whose unrelated texts sit at cosine 0.7 (as e5's do) and that embeds a query
    otherwise than a document: every document is at cosine 0.85 of every query."""

    dim = 8
    similarity_floor = 0.7

    def __init__(self) -> None:
        self.sides: list[bool] = []

    def embed(self, texts, query=False):
        self.sides.append(query)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        out[:, 0] = 1.0 if query else 0.85
        out[:, 1] = 0.0 if query else (1 - 0.85**2) ** 0.5
        return out


def test_the_query_is_embedded_as_a_query_and_its_cosine_rebased_on_the_models_floor():
    deps = fake_deps(FakeClock(), embedder=SidedEmbedder())
    write(deps, "Pass `namespace` to `kubectl_rollout`.")
    deps.embedder.sides.clear()
    hits, _ = recall.recall(deps, "t1", "kubectl_rollout fails")
    assert deps.embedder.sides == [True]
    assert hits[0].explanation.semantic == pytest.approx((0.85 - 0.7) / (1 - 0.7), abs=1e-3)


@pytest.mark.parametrize("floor, merged", [(0.0, True), (0.7, False)])
def test_the_merge_threshold_applies_to_the_cosine_on_the_models_scale(floor, merged):
    """Two lessons at cosine 0.95: nearly the same text for a model whose unrelated texts sit at
    0, only somewhat alike (0.83 rebased) for one whose unrelated texts sit at 0.7."""
    from chalicelib.services.learning import _near_duplicate

    class TwoPoints(FlatEmbedder):
        similarity_floor = floor

        def embed(self, texts, query=False):
            out = np.zeros((len(texts), self.dim), dtype=np.float32)
            for row, text in enumerate(texts):
                second = "second" in text
                out[row, 0], out[row, 1] = (0.95, (1 - 0.95**2) ** 0.5) if second else (1.0, 0.0)
            return out

    deps = fake_deps(FakeClock(), embedder=TwoPoints())
    assert deps.merge_threshold == 0.92
    first = write(deps, "Pass `namespace` to `kubectl_rollout` (first).", agent_id="a1")
    second = Experience(tenant_id="t1", experience_id="exp_second", situation="A tool call failed.", action="",
                        result="", lesson="second", advice="second", agent_id="a1", created_at=deps.clock.now(),
                        updated_at=deps.clock.now(), renewed_at=deps.clock.now())
    found = _near_duplicate(deps, second, deps.embedder.embed(["second"])[0])
    assert (found is not None and found.experience_id == first) is merged
