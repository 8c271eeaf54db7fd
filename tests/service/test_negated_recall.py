"""A query that denies a situation does not recall the lesson of that situation first."""
from __future__ import annotations

import pytest

from chalicelib.domain.models import Experience, RecallQuery
from chalicelib.services import recall
from chalicelib.services.indexing import index_experiences
from tests.support.fakes import FakeClock, fake_deps

FINES = ("Renewing a loan failed with RENEWAL_DENIED: the patron owes overdue fines.",
         "Ask the patron to pay the fines with `ils_fine_pay` before `ils_renew`.")
HOLDS = ("Renewing a loan failed with RENEWAL_DENIED: another reader placed a hold on the book.",
         "A held book cannot be renewed: tell the patron the due date stands.")


def lessons(negation: bool):
    deps = fake_deps(FakeClock(), recall_negation=negation)
    now = deps.clock.now()
    for exp_id, (situation, lesson) in (("fines", FINES), ("holds", HOLDS)):
        exp = Experience(tenant_id="t1", experience_id=exp_id, situation=situation, action="", result="", lesson=lesson,
                         advice=lesson, created_at=now, updated_at=now, renewed_at=now, tools=["ils_renew"])
        deps.experiences.put(exp)
        index_experiences(deps, "t1", [exp])
    return deps


def ranked(deps, query: str) -> list[str]:
    hits, _ = recall.recall(deps, "t1", query, tools=["ils_renew"])
    return [h.experience.experience_id for h in hits]


QUERY = "renewal denied; no fines owed, no overdue fines on the card, maybe someone placed a hold"


def test_the_situation_a_query_denies_does_not_win_on_the_words_it_denies():
    # the words of the fines lesson are most of the query, but the query says there are none
    assert ranked(lessons(negation=False), QUERY)[0] == "fines"
    assert ranked(lessons(negation=True), QUERY)[0] == "holds"


def test_a_query_that_negates_nothing_is_embedded_as_it_is():
    deps = lessons(negation=True)
    seen: list[list[str]] = []
    embed = deps.embedder.embed
    deps.embedder.embed = lambda texts, **kw: seen.append(list(texts)) or embed(texts, **kw)
    assert ranked(deps, "renewal denied, the patron owes overdue fines")[0] == "fines"
    assert seen == [["renewal denied, the patron owes overdue fines"]]


def test_the_texts_embedded_for_a_negated_query_are_the_query_and_what_it_asserts():
    q = RecallQuery("t1", "renewal denied; the patron owes nothing", intent="renew a loan")
    assert recall.embedded_texts(q) == (
        "renewal denied; the patron owes nothing Intent: renew a loan.",
        "renewal denied; the patron Intent: renew a loan.",
    )
    assert recall.embedded_texts(q, negation=False) == ("renewal denied; the patron owes nothing Intent: renew a loan.",)


@pytest.mark.parametrize("negation", [False, True])
def test_the_vector_is_unit_length_either_way(negation):
    deps = lessons(negation)
    v = recall.query_vector(deps, RecallQuery("t1", QUERY))
    assert float(v @ v) == pytest.approx(1.0, abs=1e-5)
