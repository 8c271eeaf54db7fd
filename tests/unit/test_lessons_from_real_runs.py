"""Lessons from runs of tools whose errors all share one class name (``Error: ...``), where a failed
call is often followed by a hand-off to a human or a note to self rather than a fix."""
from __future__ import annotations

import re
from dataclasses import replace

from chalicelib.domain.advise import Situation, evaluate
from chalicelib.domain.distill import draft_to_experience, merge_into
from chalicelib.domain.escape import ends_task, is_scratchpad
from chalicelib.domain.lesson import error_class
from chalicelib.domain.review import review_by_rules
from tests.support.builders import call, traj

CANCEL = "cancel_pending_order"


def _outside_quotes(text: str) -> str:
    return re.sub(r'"[^"]*"', " ", text)


def test_a_hand_off_after_a_failure_is_never_offered_as_the_fix():
    events = [
        call("get_order_details", {"order_id": "#W1"}, result={"status": "pending"}),
        call(CANCEL, {"order_id": "#W1", "reason": "changed my mind"}, ok=False, error="Error: invalid reason"),
        call("transfer_to_human_agents", {"summary": "The user wants to cancel."}, result="Transfer successful"),
    ]
    review = review_by_rules(traj(outcome="failure", tools=[CANCEL, "transfer_to_human_agents"]), events)
    for lesson in review.lessons:
        assert "transfer_to_human_agents" not in _outside_quotes(lesson.advice), lesson.advice
        assert "transfer_to_human_agents" not in lesson.tools


def test_a_note_to_self_between_the_failure_and_the_fix_is_not_the_fix():
    events = [
        call(CANCEL, {"order_id": "#W1", "reason": "changed my mind"}, ok=False, error="Error: invalid reason"),
        call("think", {"thought": "That failed; let me look at what I sent."}, result=""),
        call(CANCEL, {"order_id": "#W1", "reason": "no longer needed"}, result={"status": "cancelled"}),
    ]
    lessons = review_by_rules(traj(tools=[CANCEL, "think"]), events).lessons
    assert lessons and all("think" not in l.tools and "`think`" not in l.advice for l in lessons)
    assert any("`reason`" in l.advice for l in lessons)


def test_errors_that_share_a_generic_class_are_told_apart_by_their_template():
    def cls(error: str) -> str:
        return error_class(call(CANCEL, {}, ok=False, error=error))

    assert cls("Error: invalid reason") != cls("Error: order not found")
    assert cls("Error: 5426915165 not found") == cls("Error: 1075968781 not found")  # values masked
    assert cls("ValueError: airport code expected") == "ValueError"  # a real class name stays the key


def test_tools_that_end_the_task_or_only_think_are_known_by_their_names():
    assert all(ends_task(t) for t in ("transfer_to_human_agents", "escalate", "escalate_to_human", "handoff", "give_up"))
    assert all(is_scratchpad(t) for t in ("think", "reflect"))
    assert not any(ends_task(t) or is_scratchpad(t) for t in ("transfer_funds", "get_order_details", "rethink_plan_x"))


def _cancelled_after(reason_failed: str, reason_worked: str, order: str):
    return [
        call(CANCEL, {"order_id": order, "reason": reason_failed}, ok=False, error="Error: invalid reason"),
        call(CANCEL, {"order_id": order, "reason": reason_worked}, result={"status": "cancelled"}),
    ]


def test_values_that_worked_become_a_rule_only_once_runs_repeat_them():
    t = traj(tools=[CANCEL])
    runs = [("changed my mind", "no longer needed", "#W1"), ("too slow", "ordered by mistake", "#W2"),
            ("duplicate", "no longer needed", "#W3")]
    exps = [draft_to_experience(review_by_rules(replace_id(t, i), _cancelled_after(*r)).lessons[0], replace_id(t, i), t.created_at)
            for i, r in enumerate(runs)]
    assert "#W1" not in exps[0].advice and "`reason`" in exps[0].advice
    bad = Situation(CANCEL, {"order_id": "#W9", "reason": "found it cheaper"})
    assert evaluate(exps[0].rule, bad, exps[0].error_class, exps[0].support).violations == ()  # one run: no rule
    merged = merge_into(merge_into(exps[0], exps[1], t.created_at), exps[2], t.created_at)
    assert merged.support == 3 and set(merged.rule.arguments[0].keys) == {"no longer needed", "ordered by mistake"}
    assert "one of the values that worked: `no longer needed`, `ordered by mistake`" in merged.advice
    assert evaluate(merged.rule, bad, merged.error_class, merged.support).violations == ("`reason` is none of the values that worked",)
    good = Situation(CANCEL, {"order_id": "#W9", "reason": "ordered by mistake"})
    assert not evaluate(merged.rule, good, merged.error_class, merged.support).applies


def replace_id(t, i):
    return replace(t, trajectory_id=f"tr{i}")
