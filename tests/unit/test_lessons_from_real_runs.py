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


EXCHANGE = "exchange_delivered_order_items"
ORDER = "get_order_details"


def test_one_runs_values_are_never_in_the_fix_when_a_value_or_an_item_was_swapped():
    swapped_item = [
        call(EXCHANGE, {"order_id": "#W1", "item_ids": ["1111111111"], "new_item_ids": ["2222222222"],
                        "payment_method_id": "paypal_1234567"}, ok=False, error="Error: new item 2222222222 not found or available"),
        call(EXCHANGE, {"order_id": "#W1", "item_ids": ["1111111111"], "new_item_ids": ["3333333333"],
                        "payment_method_id": "paypal_1234567"}, result={"status": "exchange requested"}),
    ]
    swapped_method = [
        call("modify_pending_order_payment", {"order_id": "#W1", "payment_method_id": "gift_card_7794233"}, ok=False,
             error="Error: insufficient gift card balance to pay for the order"),
        call("modify_pending_order_payment", {"order_id": "#W1", "payment_method_id": "paypal_8049766"}, result={"status": "pending"}),
    ]
    for events, values in ((swapped_item, ("2222222222", "3333333333")), (swapped_method, ("7794233", "8049766"))):
        (lesson,) = review_by_rules(traj(tools=[EXCHANGE, "modify_pending_order_payment"]), events).lessons
        assert not any(v in _outside_quotes(lesson.advice) for v in values), lesson.advice
    (lesson,) = review_by_rules(traj(tools=["modify_pending_order_payment"]), swapped_method).lessons
    assert "`gift_card_<n>`" in lesson.advice and "`paypal_<n>`" in lesson.advice  # the kinds of value, not the values


def _product_for_item() -> list:
    """The agent read another order, passed a product's id where the item's id goes, then read the
    right order and passed the item's id it returned."""
    return [
        call(ORDER, {"order_id": "#W2"}, result={"order_id": "#W2", "items": [{"item_id": "5555555555", "product_id": "6666"}]}),
        call(EXCHANGE, {"order_id": "#W1", "item_ids": ["7777777777"], "new_item_ids": ["8888888888"],
                        "payment_method_id": "paypal_1"}, ok=False, error="Error: 7777777777 not found"),
        call(ORDER, {"order_id": "#W1"}, result={"order_id": "#W1", "items": [{"item_id": "9999999999", "product_id": "7777777777"}]}),
        call(EXCHANGE, {"order_id": "#W1", "item_ids": ["9999999999"], "new_item_ids": ["8888888888"],
                        "payment_method_id": "paypal_1"}, result={"status": "exchange requested"}),
    ]


def test_a_lookup_called_again_for_another_id_teaches_where_the_value_comes_from_not_the_two_ids():
    (lesson,) = review_by_rules(traj(tools=[EXCHANGE, ORDER]), _product_for_item()).lessons
    assert "#W2" not in lesson.advice and "#W1" not in _outside_quotes(lesson.advice), lesson.advice
    exp = draft_to_experience(lesson, traj(), traj().created_at)
    # an item id the order's details returned passes; a product's id, which they never returned, does not
    read = call(ORDER, {"order_id": "#W5"}, result={"order_id": "#W5", "items": [{"item_id": "1212121212", "product_id": "3434"}]})
    good = Situation(EXCHANGE, {"order_id": "#W5", "item_ids": ["1212121212"], "new_item_ids": ["1"]}, recent=[read])
    bad = Situation(EXCHANGE, {"order_id": "#W5", "item_ids": ["3434343434"], "new_item_ids": ["1"]}, recent=[read])
    assert evaluate(exp.rule, good, exp.error_class, exp.support).violations == ()
    assert evaluate(exp.rule, bad, exp.error_class, exp.support).violations


def test_a_value_taken_from_another_calls_result_than_the_lessons_is_as_good():
    # learned: the payment method was made up; the one that worked came from the order's details
    events = [
        call("get_user_details", {"user_id": "u1"}, result={"payment_methods": {"paypal_1111111": {}, "credit_card_2222222": {}}}),
        call(ORDER, {"order_id": "#W1"}, result={"order_id": "#W1", "payment_history": [{"payment_method_id": "paypal_1111111"}]}),
        call("modify_pending_order_payment", {"order_id": "#W1", "payment_method_id": "paypal_9999999"}, ok=False,
             error="Error: payment method not found"),
        call("modify_pending_order_payment", {"order_id": "#W1", "payment_method_id": "paypal_1111111"}, result={"status": "pending"}),
    ]
    (lesson,) = review_by_rules(traj(tools=["modify_pending_order_payment", ORDER, "get_user_details"]), events).lessons
    exp = draft_to_experience(lesson, traj(), traj().created_at)
    profile = call("get_user_details", {"user_id": "u2"}, result={"payment_methods": {"credit_card_3333333": {"id": "credit_card_3333333"}}})
    order = call(ORDER, {"order_id": "#W7"}, result={"order_id": "#W7", "payment_history": [{"payment_method_id": "paypal_4444444"}]})
    from_profile = Situation("modify_pending_order_payment", {"order_id": "#W7", "payment_method_id": "credit_card_3333333"},
                             recent=[profile, order])
    made_up = Situation("modify_pending_order_payment", {"order_id": "#W7", "payment_method_id": "credit_card_5555555"},
                        recent=[profile, order])
    assert evaluate(exp.rule, from_profile, exp.error_class, exp.support).violations == ()
    assert evaluate(exp.rule, made_up, exp.error_class, exp.support).violations
