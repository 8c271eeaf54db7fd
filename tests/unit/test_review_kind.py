import pytest

from chalicelib.domain.models import FULL_REVIEW, LLMLessonFigures, RejectedLesson, ReviewKind, ReviewSummary
from tests.support.builders import T0, traj


def test_review_kinds_read_back_as_they_were_written():
    assert str(FULL_REVIEW) == "full" and ReviewKind.parse("full") == FULL_REVIEW
    local = ReviewKind.local("e7")
    assert (str(local), local.scope, local.is_full) == ("local:e7", "local", False)
    assert ReviewKind.parse("local:e7") == local and ReviewKind.parse("local:a:b").trigger == "a:b"
    assert (FULL_REVIEW.scope, FULL_REVIEW.is_full) == ("full", True)


@pytest.mark.parametrize("text", ["", "quick", "Full", "local", "full:e1"])
def test_anything_else_is_no_review_kind(text):
    with pytest.raises(ValueError, match="unknown review kind"):
        ReviewKind.parse(text)


def test_every_state_of_the_review_record_keeps_the_local_reviews():
    t = traj()
    t.review = ReviewSummary.with_local_review(None, {"kind": "local", "trigger": "e1"})
    local = ReviewSummary.local_reviews(t)
    assert local == [{"kind": "local", "trigger": "e1"}]
    assert ReviewSummary(kind="full", skipped="only 2 events", local=local).as_dict() == {
        "kind": "full", "skipped": "only 2 events", "local": local}
    failed = ReviewSummary(kind="full", error="E: x", attempts=5, failed_at=T0, local=local).as_dict()
    assert failed == {"kind": "full", "error": "E: x", "attempts": 5, "failed_at": T0.isoformat(), "local": local}
    t.review = failed
    assert ReviewSummary.redriven(t, T0).as_dict() == {
        "redriven": {"at": T0.isoformat(), "previous": {k: v for k, v in failed.items() if k != "local"}},
        "local": local}
    findings = {"kind": "local", "lessons": 1, "experience_ids": ["x"]}
    assert ReviewSummary(findings=findings, trigger="e2").as_dict() == {**findings, "trigger": "e2"}


def test_a_review_a_model_took_part_in_records_what_became_of_its_lessons():
    figures = LLMLessonFigures("ok", 812, proposed=2, accepted=1,
                               rejected=(RejectedLesson("quality_gate", "1,", "names no tool"),))
    findings = {"kind": "full", "lessons": 2}
    assert ReviewSummary(findings=findings, llm_lessons=figures).as_dict() == {**findings, "llm_lessons": {
        "outcome": "ok", "latency_ms": 812, "proposed": 2, "accepted": 1,
        "rejected": [{"reason": "quality_gate", "lesson": "1,", "detail": "names no tool"}]}}
    dropped = ReviewSummary(findings=findings, trigger="e2", llm_lessons=LLMLessonFigures("timeout", 30000)).as_dict()
    assert dropped["llm_lessons"] == {"outcome": "timeout", "latency_ms": 30000, "proposed": 0, "accepted": 0, "rejected": []}
    assert "llm_lessons" not in ReviewSummary(findings=findings).as_dict()  # the rules alone say nothing of a model
