"""Lessons from runs of tools whose errors all share one class name (``Error: ...``), where a failed
call is often followed by a hand-off to a human or a note to self rather than a fix."""
from __future__ import annotations

import re

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
