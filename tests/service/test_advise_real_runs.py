"""Advise on lessons learned from runs whose errors share one class name: a warning names the error
it risks, fires only when the call meets the condition under which that error happened, and holds
a tool to call first against the whole trajectory, not its last events."""
from __future__ import annotations

from chalicelib.domain.advise import MAX_RECENT_EVENTS
from chalicelib.services import advise as advise_service
from chalicelib.services import experiences, ingest, review_jobs

AGENT = "shop-bot"
CANCEL = "cancel_pending_order"
LOOKUP = "get_order_details"
TOOLS = [CANCEL, LOOKUP, "get_user_details"]


def call(eid: str, tool: str, params: dict, clock, ok: bool = True, error: str | None = None, result=None) -> dict:
    content = {"tool": tool, "params": params, "status": "ok" if ok else "error"}
    if error:
        content["error"] = error
    if result is not None:
        content["result"] = result
    return dict(event_id=eid, type="tool_call", timestamp=clock.now(), content=content)


def run(deps, tid: str, events: list[dict], outcome: str = "success") -> list[str]:
    ingest.start_trajectory(deps, "t1", AGENT, "Cancel my order please", trajectory_id=tid, tools=TOOLS)
    ingest.append_events(deps, "t1", tid, events)
    ingest.finalize(deps, "t1", tid, outcome, None)
    while review_jobs.process_review_jobs(deps):
        pass
    return ingest.get_trajectory(deps, "t1", tid).experience_ids


def test_a_warning_fires_only_on_a_call_that_meets_the_failures_condition(deps, clock):
    # the order id without its "#" was not found; with it, the same call worked
    run(deps, "learn", [
        call("1", CANCEL, {"order_id": "W100", "reason": "no longer needed"}, clock, ok=False, error="Error: order not found"),
        call("2", CANCEL, {"order_id": "#W100", "reason": "no longer needed"}, clock, result={"status": "cancelled"}),
    ])
    good = advise_service.advise(deps, "t1", CANCEL, {"order_id": "#W777", "reason": "ordered by mistake"}, agent_id=AGENT)
    assert good.warnings == []
    bad = advise_service.advise(deps, "t1", CANCEL, {"order_id": "W777", "reason": "ordered by mistake"}, agent_id=AGENT)
    (warning,) = bad.warnings
    assert '"Error: order not found"' in warning.message and "`order_id` does not start with `#`" in warning.message
    assert "W100" not in warning.fix  # one run's value is no part of the rule


def test_a_tool_to_call_first_counts_when_it_was_called_long_before(deps, clock):
    # calling the cancel before reading the order picked an order that was not pending
    (exp_id,) = run(deps, "learn", [
        call("1", CANCEL, {"order_id": "#W2", "reason": "no longer needed"}, clock, ok=False,
             error="Error: non-pending order cannot be cancelled"),
        call("2", LOOKUP, {"order_id": "#W1"}, clock, result={"order_id": "#W1", "status": "pending"}),
        call("3", CANCEL, {"order_id": "#W1", "reason": "no longer needed"}, clock, result={"status": "cancelled"}),
    ])
    assert experiences.get_experience(deps, "t1", exp_id).rule.other_tool == LOOKUP
    # a new run: the order read first, then more than 20 other events, then the cancel
    ingest.start_trajectory(deps, "t1", AGENT, "Cancel my order please", trajectory_id="now", tools=TOOLS)
    events = [call("a0", LOOKUP, {"order_id": "#W9"}, clock, result={"order_id": "#W9", "status": "pending"})]
    events += [call(f"a{i}", "get_user_details", {"user_id": "u1"}, clock, result={"orders": ["#W9"]})
               for i in range(1, MAX_RECENT_EVENTS + 6)]
    ingest.append_events(deps, "t1", "now", events)
    answer = advise_service.advise(deps, "t1", CANCEL, {"order_id": "#W9", "reason": "no longer needed"},
                                   agent_id=AGENT, trajectory_id="now")
    assert answer.warnings == []
    # a run that never read an order is warned, with the error it risks
    ingest.start_trajectory(deps, "t1", AGENT, "Cancel my order please", trajectory_id="skipped", tools=TOOLS)
    ingest.append_events(deps, "t1", "skipped", events[1:])
    (warning,) = advise_service.advise(deps, "t1", CANCEL, {"order_id": "#W9", "reason": "no longer needed"},
                                       agent_id=AGENT, trajectory_id="skipped").warnings
    assert "non-pending order cannot be cancelled" in warning.message and f"`{LOOKUP}` has not been called" in warning.message


def test_a_tool_to_call_first_is_taught_with_the_state_the_error_names(deps, clock):
    (exp_id,) = run(deps, "learn", [
        call("1", CANCEL, {"order_id": "#W2", "reason": "no longer needed"}, clock, ok=False,
             error="Error: non-pending order cannot be cancelled"),
        call("2", LOOKUP, {"order_id": "#W1"}, clock, result={"order_id": "#W1", "status": "pending", "items": []}),
        call("3", CANCEL, {"order_id": "#W1", "reason": "no longer needed"}, clock, result={"status": "cancelled"}),
    ])
    advice = experiences.get_experience(deps, "t1", exp_id).advice
    assert advice.startswith(f"Call `{LOOKUP}` before `{CANCEL}` and pass what it returns as `order_id`; "
                             "go on once it shows `status` `pending`: calling")


def test_a_lesson_to_use_another_tool_warns_only_once_the_tool_failed_that_way_in_this_run(deps, clock):
    by_email, by_zip = "find_user_id_by_email", "find_user_id_by_name_zip"
    run(deps, "learn", [
        call("1", by_email, {"email": "ana.lima@example.com"}, clock, ok=False, error="Error: user not found"),
        call("2", by_zip, {"first_name": "Ana", "last_name": "Lima", "zip": "10001"}, clock, result="ana_lima_1"),
    ])
    ingest.start_trajectory(deps, "t1", AGENT, "Cancel my order please", trajectory_id="now", tools=[by_email, by_zip])
    first = advise_service.advise(deps, "t1", by_email, {"email": "bo.chen@example.com"}, agent_id=AGENT, trajectory_id="now")
    assert first.warnings == [] and len(first.hits) == 1  # shown as a hint, not a warning: nothing failed yet
    ingest.append_events(deps, "t1", "now", [
        call("a1", by_email, {"email": "bo.chen@example.com"}, clock, ok=False, error="Error: user not found")])
    (warning,) = advise_service.advise(deps, "t1", by_email, {"email": "bo.chen@example.com"}, agent_id=AGENT,
                                       trajectory_id="now").warnings
    assert '"Error: user not found"' in warning.message and f"`{by_zip}` worked in its place" in warning.message
