from dataclasses import replace
from datetime import timedelta

import pytest

from chalicelib.domain.models import ExperienceStatus, RecallQuery, Signal
from chalicelib.domain.scoring import (
    DecayPolicy, ScoringWeights, apply_feedback, decay, freshness_at, recall_score, score_hit, tag_match,
)

from tests.support.builders import T0, experience

POLICY = DecayPolicy(half_life_days=30, archive_below=0.2, min_age_days=7)
WEIGHTS = ScoringWeights(semantic=0.55, lexical=0.15, tag_match=0.15, freshness=0.06, utility=0.05, confidence=0.04)


def test_freshness_halves_every_half_life():
    assert freshness_at(T0, T0, 30) == 1.0
    assert freshness_at(T0, T0 + timedelta(days=30), 30) == pytest.approx(0.5)
    assert freshness_at(T0, T0 + timedelta(days=90), 30) == pytest.approx(0.125)


def test_adoption_renews_freshness_and_raises_utility():
    old = experience(renewed_at=T0, freshness=0.1)
    now = T0 + timedelta(days=100)
    new = apply_feedback(old, Signal.ADOPTED, now, POLICY)
    assert new.freshness == 1.0 and new.renewed_at == now
    assert new.utility > old.utility


def test_failure_lowers_utility_and_confidence_without_renewing():
    old = experience()
    new = apply_feedback(old, Signal.FAILED, T0 + timedelta(days=1), POLICY)
    assert new.utility < old.utility and new.confidence < old.confidence
    assert new.renewed_at == old.renewed_at


def test_a_lesson_that_keeps_failing_is_archived():
    exp = experience()
    now = T0 + timedelta(days=60)
    for _ in range(10):
        exp = apply_feedback(exp, Signal.FAILED, now, POLICY)
    assert exp.status is ExperienceStatus.ARCHIVED
    assert exp.status_reason == "feedback:failed"


def test_decay_archives_old_unhelpful_lessons_but_keeps_useful_ones():
    now = T0 + timedelta(days=120)
    stale = decay(experience(utility=0.1, confidence=0.3), now, POLICY)
    useful = decay(experience(utility=0.95, confidence=0.9), now, POLICY)
    assert stale.status is ExperienceStatus.ARCHIVED and stale.status_reason == "decayed"
    assert useful.status is ExperienceStatus.ACTIVE
    assert useful.freshness == pytest.approx(0.0625)


def test_decay_spares_young_lessons():
    young = decay(experience(utility=0.0, confidence=0.0), T0 + timedelta(days=3), POLICY)
    assert young.status is ExperienceStatus.ACTIVE


def test_score_is_weighted_and_explained():
    q = RecallQuery(tenant_id="t1", query="weather", tools=("get_weather",), task_type="query")
    score, why = score_hit(experience(), 0.8, q, T0, WEIGHTS, POLICY)
    assert 0 < score <= 1
    assert why.semantic == 0.8 and why.tag_match == 1.0 and why.task_type_match is True
    assert why.matched_tools == ("get_weather",)


def test_tool_and_task_match_lift_the_score_at_equal_similarity():
    q = RecallQuery(tenant_id="t1", query="weather", tools=("get_weather",), task_type="query")
    matching, _ = score_hit(experience(), 0.6, q, T0, WEIGHTS, POLICY)
    other, _ = score_hit(experience(tools=["send_email"], task_type="operation"), 0.6, q, T0, WEIGHTS, POLICY)
    assert matching > other


def test_negative_similarity_counts_as_zero():
    q = RecallQuery(tenant_id="t1", query="x")
    _, why = score_hit(experience(), -0.4, q, T0, WEIGHTS, POLICY)
    assert why.semantic == 0.0


def test_a_fresher_lesson_wins_a_tie():
    q = RecallQuery(tenant_id="t1", query="x")
    now = T0 + timedelta(days=60)
    fresh, _ = score_hit(replace(experience(), renewed_at=now), 0.7, q, now, WEIGHTS, POLICY)
    stale, _ = score_hit(experience(), 0.7, q, now, WEIGHTS, POLICY)
    assert fresh > stale


def test_a_memory_without_agent_or_user_is_visible_to_every_reader_of_the_tenant():
    from chalicelib.domain.models import Scope

    assert Scope("t", None, None).visible_to("a1", "u1")
    assert Scope("t", "a1", None).visible_to("a1", None)
    assert not Scope("t", "a1", None).visible_to("a2", None)
    assert not Scope("t", "a1", "u1").visible_to("a1", None)
    assert not Scope("t", "a1", None).visible_to(None, None)


def test_a_query_that_names_none_of_a_lessons_anchors_matches_it_less():
    from chalicelib.domain.models import RecallQuery
    from chalicelib.domain.scoring import tag_match

    exp = experience(tools=["git_push"], task_type="operation", anchors=["main"])
    q = dict(tenant_id="t1", tools=("git_push",), task_type="operation")
    named = tag_match(exp, RecallQuery(query="Push the README fix to MAIN", **q))
    other = tag_match(exp, RecallQuery(query="Push feature/main-menu please", **q))
    assert named.score == 1.0 and named.anchors == ("main",)
    assert other.score == 2 / 3 and other.anchors == ()  # "main-menu" is another word
    assert tag_match(experience(anchors=["main"]), RecallQuery(tenant_id="t1", query="x")).score == 0.0


def test_a_lesson_naming_no_tool_weighs_its_words_with_the_untooled_lexical_weight():
    q = RecallQuery("t1", "what did Ana paint")
    note, tooled = replace(experience(), tools=()), replace(experience(), tools=("paint_tool",))
    heavy = replace(WEIGHTS, lexical_untooled=0.45)
    # same parts: only the lexical weight of the note differs
    base_note, _ = score_hit(note, 0.3, q, T0, WEIGHTS, POLICY, lexical=1.0)
    heavy_note, _ = score_hit(note, 0.3, q, T0, heavy, POLICY, lexical=1.0)
    assert heavy_note > base_note
    assert score_hit(tooled, 0.3, q, T0, heavy, POLICY, lexical=1.0) == score_hit(tooled, 0.3, q, T0, WEIGHTS, POLICY, lexical=1.0)
    # unset: every lesson takes ``lexical``
    assert WEIGHTS.lexical_for(note) == WEIGHTS.lexical_for(tooled) == 0.15 and heavy.lexical_for(note) == 0.45


@pytest.mark.parametrize("query", [
    RecallQuery(tenant_id="t1", query="weather"),
    RecallQuery(tenant_id="t1", query="weather in main", tools=("GET_WEATHER ", "ask_user"), tags=("ops",), task_type="query"),
    RecallQuery(tenant_id="t1", query="weather", tools=["get_weather"], intent="fix"),  # a list: not cached
])
@pytest.mark.parametrize("lesson", [
    {}, {"tools": [], "tags": ["OPS", "x"]}, {"anchors": ["main", "dev"], "intent": "fix", "task_type": "Query"},
    {"utility": 0.0, "confidence": 1.0, "freshness": 0.3, "renewed_at": T0 - timedelta(days=40)},
])
def test_the_ranking_score_is_the_explained_hits_score(query, lesson):
    """Recall ranks by ``recall_score`` and explains the returned hits with ``score_hit``: one score."""
    weights = replace(WEIGHTS, lexical_untooled=0.4)
    exp = experience(**lesson)
    for similarity, lexical in ((0.8, 0.0), (-0.3, 0.6), (1.2, 0.99)):
        score, _ = score_hit(exp, similarity, query, T0 + timedelta(days=3), weights, POLICY, lexical=lexical)
        assert recall_score(exp, similarity, query, T0 + timedelta(days=3), weights, POLICY, lexical=lexical) == score


def test_a_querys_tools_and_tags_match_alike_as_a_tuple_or_a_list():
    """The query's keys are made once per query when they are a tuple (a RecallQuery's): the same match."""
    exp = experience(tools=["get_weather", "ask_user", "geo.lookup"], tags=["ops", "Billing"])
    for tools, tags in ((("ASK_USER", "x", "get_weather "), ("billing", "y")), (("geo.lookup",), ()), ((), ("ops", "OPS"))):
        by_tuple = tag_match(exp, RecallQuery(tenant_id="t1", query="q", tools=tools, tags=tags))
        by_list = tag_match(exp, RecallQuery(tenant_id="t1", query="q", tools=list(tools), tags=list(tags)))
        assert by_tuple == by_list
        assert set(by_tuple.tools) == {t.strip().lower() for t in tools} & {"get_weather", "ask_user", "geo.lookup"}


def test_the_score_is_the_weighted_mean_of_its_parts_to_the_last_bit():
    """Random lessons and queries: the score is the mean of the parts weighed by their weights (the
    tag match left out when there is nothing to compare), summed in the parts' order, not rounded."""
    import random

    from chalicelib.domain.scoring import current_freshness

    rng = random.Random(3)
    weights = replace(WEIGHTS, lexical_untooled=0.4)
    for _ in range(300):
        exp = experience(tools=rng.sample(["a", "b", "C "], rng.randint(0, 2)), tags=rng.sample(["x", "y"], rng.randint(0, 2)),
                         task_type=rng.choice([None, "q", "Q"]), utility=rng.random(), confidence=rng.random(),
                         freshness=rng.random(), renewed_at=T0 - timedelta(days=rng.uniform(0, 90)))
        query = RecallQuery("t1", "q", tools=tuple(rng.sample(["a", "c"], rng.randint(0, 2))),
                            tags=tuple(rng.sample(["x", "z"], rng.randint(0, 1))), task_type=rng.choice([None, "q"]))
        similarity, lexical, now = rng.uniform(-0.2, 1.1), rng.random(), T0 + timedelta(days=rng.uniform(0, 9))
        parts = [(weights.semantic, min(1.0, max(0.0, similarity))), (weights.lexical_for(exp), lexical),
                 (weights.freshness, current_freshness(exp, now, POLICY.half_life_days)),
                 (weights.utility, exp.utility), (weights.confidence, exp.confidence)]
        tags = tag_match(exp, query).score
        if tags is not None:
            parts.append((weights.tag_match, tags))
        total = total_weight = 0.0
        for w, v in parts:  # left to right (sum() of 3.12 compensates: not the same last bit)
            total, total_weight = total + w * v, total_weight + w
        want = total / total_weight  # not rounded: a near tie is ranked by its scores, not by the lessons' ids
        assert score_hit(exp, similarity, query, now, weights, POLICY, lexical=lexical)[0] == want
        assert recall_score(exp, similarity, query, now, weights, POLICY, lexical=lexical) == want
