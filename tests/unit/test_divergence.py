"""Contrast across runs: the first decision where a failed run left the way successful runs of
similar tasks took, kept only when two of them show it and none contradicts it."""
from chalicelib.domain.call_rule import RuleKind
from chalicelib.domain.distill import passes_quality_gate
from chalicelib.domain.divergence import (
    REQUEST,
    contrast_across_runs,
    contrast_lesson,
    first_divergence,
    run_calls,
    worth_contrasting,
)
from tests.support.builders import call, traj

USER = {"user_id": "mia_lee_1"}


def cancel_run(run_id: str, goal: str, *, find: bool = True, reason: str = "no longer needed", order: str = "#W100"):
    calls = []
    if find:
        calls.append(call("find_user_id_by_email", {"email": f"{run_id}@example.com"}, result="mia_lee_1"))
    calls += [
        call("get_user_details", USER, result={"orders": [order]}),
        call("get_order_details", {"order_id": order}, result={"status": "pending"}),
        call("cancel_pending_order", {"order_id": order, "reason": reason}, result={"status": "cancelled"}),
    ]
    return run_calls(run_id, goal, calls)


def goal(order: str = "#W100", reason: str = "no longer needed") -> str:
    return f"Cancel order {order} because {reason}."


def test_a_skipped_lookup_before_a_write_is_the_divergence():
    failed = cancel_run("f", goal(), find=False)
    worked = cancel_run("s", goal("#W200"), order="#W200")
    d = first_divergence(failed, worked)
    assert d is not None and d.kind == "skipped" and d.tool == "find_user_id_by_email"
    assert d.before[-1] == "cancel_pending_order"


def test_an_argument_of_another_kind_is_the_divergence():
    # the run that worked passed the reason its request states; the failed one another reason
    failed = cancel_run("f", goal(reason="ordered by mistake"), reason="no longer needed")
    worked = cancel_run("s", goal("#W200", "ordered by mistake"), reason="ordered by mistake", order="#W200")
    d = first_divergence(failed, worked)
    assert d is not None and (d.kind, d.tool, d.param) == ("argument", "cancel_pending_order", "reason")
    assert d.worked == REQUEST and d.failed == "`no longer needed`"


def test_values_of_one_run_are_not_a_divergence():
    # other orders, other emails: the same kinds of arguments, the same calls
    assert first_divergence(cancel_run("f", goal()), cancel_run("s", goal("#W200"), order="#W200")) is None


def test_another_tool_in_the_place_of_the_one_that_worked_is_the_divergence():
    def run(run_id, write):
        return run_calls(run_id, "Exchange the lamp of order #W1 for a blue one", [
            call("get_order_details", {"order_id": "#W1"}, result={"items": ["1"]}),
            call(write, {"order_id": "#W1", "item_ids": ["1"]}, result="ok"),
        ])
    d = first_divergence(run("f", "return_delivered_order_items"), run("s", "exchange_delivered_order_items"))
    assert d is not None and (d.kind, d.tool, d.other) == ("tool", "exchange_delivered_order_items", "return_delivered_order_items")


def test_two_supporting_runs_make_a_lesson_that_names_the_decision_without_one_runs_values():
    failed_events = [
        call("get_user_details", USER, result={"orders": ["#W100"]}),
        call("get_order_details", {"order_id": "#W100"}, result={"status": "pending"}),
        call("cancel_pending_order", {"order_id": "#W100", "reason": "no longer needed"}, result={"status": "cancelled"}),
    ]
    failed = run_calls("f", goal(), failed_events)
    successes = [cancel_run("s1", goal("#W200"), order="#W200"), cancel_run("s2", goal("#W300"), order="#W300")]
    c = contrast_across_runs(failed, successes)
    assert c is not None and c.supporting == ("s1", "s2")
    draft = contrast_lesson(traj(goal=goal(), outcome="failure", tools=[]), failed_events, c)
    assert passes_quality_gate(draft) == (True, "")
    assert draft.rule is not None and draft.rule.kind is RuleKind.CALL_FIRST
    assert (draft.rule.tool, draft.rule.other_tool) == ("cancel_pending_order", "find_user_id_by_email")
    assert "`find_user_id_by_email`" in draft.advice and "`cancel_pending_order`" in draft.advice
    assert set(draft.tools) >= {"find_user_id_by_email", "cancel_pending_order"}
    text = " ".join((draft.situation, draft.lesson, draft.advice, draft.example))
    for literal in ("#W100", "#W200", "#W300", "s1@example.com", "mia_lee_1"):
        assert literal not in text


def test_one_supporting_run_is_not_enough():
    failed = cancel_run("f", goal(), find=False)
    assert contrast_across_runs(failed, [cancel_run("s1", goal("#W200"), order="#W200")]) is None


def test_a_successful_run_that_did_what_the_failed_run_did_vetoes_the_lesson():
    failed = cancel_run("f", goal(), find=False)
    supporting = [cancel_run("s1", goal("#W200"), order="#W200"), cancel_run("s2", goal("#W300"), order="#W300")]
    assert contrast_across_runs(failed, supporting) is not None
    # this one also cancelled without finding the user first, and it worked
    also_skipped = cancel_run("s3", goal("#W400"), find=False, order="#W400")
    assert contrast_across_runs(failed, [*supporting, also_skipped]) is None


def test_an_argument_veto_is_a_successful_run_with_the_failed_runs_kind_of_value():
    failed = cancel_run("f", goal(reason="ordered by mistake"), reason="no longer needed")
    supporting = [cancel_run(f"s{n}", goal(f"#W{n}00", "ordered by mistake"), reason="ordered by mistake", order=f"#W{n}00")
                  for n in (2, 3)]
    c = contrast_across_runs(failed, supporting)
    assert c is not None and c.divergence.param == "reason"
    # a run that passed the very reason its request did not state, and still worked
    odd = cancel_run("s4", goal("#W400", "ordered by mistake"), reason="no longer needed", order="#W400")
    assert contrast_across_runs(failed, [*supporting, odd]) is None


def test_the_failed_run_itself_never_supports_its_lesson():
    failed = cancel_run("f", goal(), find=False)
    assert contrast_across_runs(failed, [failed, cancel_run("s1", goal("#W200"), order="#W200")]) is None


def test_only_a_failed_run_without_any_tool_error_is_contrasted():
    ok = [call("cancel_pending_order", {"order_id": "#W1"}, result="ok")]
    err = [call("cancel_pending_order", {"order_id": "W1"}, ok=False, error="Error: order not found")]
    assert worth_contrasting("failure", ok)
    assert not worth_contrasting("failure", err + ok)
    assert not worth_contrasting("success", ok)
    assert not worth_contrasting("failure", [])


def test_a_run_is_remembered_without_its_values():
    run = cancel_run("s", goal())
    record = run.as_record()
    assert "#W100" not in str(record["steps"]) and "s@example.com" not in str(record["steps"])
    assert type(run).from_record(record) == run


def test_any_successful_run_of_the_scope_vetoes_what_is_said_of_a_tool():
    failed = cancel_run("f", goal(), find=False)
    similar = [cancel_run("s1", goal("#W200"), order="#W200"), cancel_run("s2", goal("#W300"), order="#W300")]
    # a task of another kind (not among the similar ones) that cancelled without finding the user
    elsewhere = cancel_run("o1", "Cancel everything pending for the account", find=False, order="#W500")
    assert contrast_across_runs(failed, similar, known=[*similar, elsewhere]) is None
    assert contrast_across_runs(failed, similar, known=similar) is not None
