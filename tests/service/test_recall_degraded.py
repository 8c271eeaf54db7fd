"""Recall answers from BM25 alone, and says so, when the query cannot be embedded."""
from __future__ import annotations

from chalicelib.services import recall, recall_ids
from tests.service.test_services import record_flight_lesson

QUERY = dict(query="search_flights failed with InvalidAirport for Paris", agent_id="a1", tools=["search_flights", "lookup_airport"])


class DownEmbedder:
    dim, similarity_floor = 64, 0.0

    def __init__(self) -> None:
        self.calls = 0

    def embed(self, texts, query=False):
        self.calls += 1
        raise TimeoutError("read timed out")


def test_a_failed_query_embedding_answers_from_the_words_marked_degraded(deps, clock):
    exp_id = record_flight_lesson(deps, clock).experience_ids[0]
    full = recall_ids.recall(deps, "t1", **QUERY)
    assert full.degraded is None and full.hits[0].experience.experience_id == exp_id
    deps.query_embedder = down = DownEmbedder()
    got = recall_ids.recall(deps, "t1", **QUERY)
    assert down.calls == 1
    assert got.degraded == recall.LEXICAL_ONLY
    assert [h.experience.experience_id for h in got.hits] == [exp_id]
    assert got.hits[0].explanation.semantic == 0.0 and got.hits[0].explanation.lexical > 0
    assert "lookup_airport" in got.advice
    assert got.hits[0].score < full.hits[0].score  # the same lesson, without its semantic part


def test_the_query_embedder_is_the_one_recall_uses_and_the_lessons_keep_theirs(deps, clock):
    record_flight_lesson(deps, clock)
    deps.query_embedder = DownEmbedder()
    record_flight_lesson(deps, clock, "tr2")  # a review embeds its lessons with ``embedder``, untouched
    assert recall.recall(deps, "t1", **QUERY)[0]
