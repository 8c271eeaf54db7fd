"""The review of a failed run without any tool error learns where it left the way that successful
runs of similar tasks in its scope took; another scope's runs are never used."""
from __future__ import annotations

from chalicelib.services import experiences, ingest, review_jobs
from chalicelib.services.contrast import register_name

GOAL = "Cancel order #W100 because no longer needed."
TOOLS = ["find_user_id_by_email", "get_user_details", "get_order_details", "cancel_pending_order"]


def _call(clock, eid, name, params, result):
    return dict(event_id=eid, type="tool_call", timestamp=clock.now(),
                content={"tool": name, "params": params, "status": "ok", "result": result})


def record(deps, clock, tid, outcome, *, tenant="t1", agent="a1", find=True, goal=GOAL):
    ingest.start_trajectory(deps, tenant_id=tenant, trajectory_id=tid, agent_id=agent, goal=goal, tools=TOOLS)
    events = []
    if find:
        events.append(_call(clock, "1", "find_user_id_by_email", {"email": f"{tid}@example.com"}, "mia_lee_1"))
    events += [
        _call(clock, "2", "get_user_details", {"user_id": "mia_lee_1"}, {"orders": ["#W100"]}),
        _call(clock, "3", "get_order_details", {"order_id": "#W100"}, {"status": "pending"}),
        _call(clock, "4", "cancel_pending_order", {"order_id": "#W100", "reason": "no longer needed"}, {"status": "cancelled"}),
    ]
    ingest.append_events(deps, tenant, tid, events)
    ingest.finalize(deps, tenant, tid, outcome, None)
    while review_jobs.process_review_jobs(deps):
        pass
    return ingest.get_trajectory(deps, tenant, tid)


def _contrast_lessons(deps, tenant, traj):
    found = [experiences.get_experience(deps, tenant, i) for i in traj.experience_ids]
    return [e for e in found if "successful runs of look-alike tasks" in e.advice]


def test_a_failed_run_with_two_similar_successes_learns_the_skipped_lookup(deps, clock):
    record(deps, clock, "ok1", "success")
    record(deps, clock, "ok2", "success")
    failed = record(deps, clock, "bad", "failure", find=False)
    assert failed.review["across_runs"]["supporting"] == ["ok1", "ok2"]
    lessons = _contrast_lessons(deps, "t1", failed)
    assert len(lessons) == 1
    advice = lessons[0].advice
    assert "Call `find_user_id_by_email` before `cancel_pending_order`" in advice
    assert "ok1@example.com" not in advice and "#W100" not in advice


def test_one_similar_success_teaches_nothing_two_do(deps, clock):
    record(deps, clock, "ok1", "success")
    assert _contrast_lessons(deps, "t1", record(deps, clock, "bad1", "failure", find=False)) == []
    record(deps, clock, "ok2", "success")
    assert len(_contrast_lessons(deps, "t1", record(deps, clock, "bad2", "failure", find=False))) == 1


def test_another_tenants_runs_neither_support_nor_veto(deps, clock):
    record(deps, clock, "ok1", "success", tenant="t2")
    record(deps, clock, "ok2", "success", tenant="t2")
    failed = record(deps, clock, "bad1", "failure", find=False)
    assert _contrast_lessons(deps, "t1", failed) == []
    assert failed.review["across_runs"]["remembered"] == 0
    # two successes of its own support it; another tenant's run that skipped the lookup vetoes nothing
    record(deps, clock, "ok3", "success")
    record(deps, clock, "ok4", "success")
    record(deps, clock, "ok5", "success", tenant="t2", find=False)
    failed = record(deps, clock, "bad2", "failure", find=False)
    assert failed.review["across_runs"]["supporting"] == ["ok3", "ok4"]
    assert len(_contrast_lessons(deps, "t1", failed)) == 1
    assert "ok1" not in str(deps.checkpoints.load(register_name(failed)))


def test_another_agents_runs_neither_support_nor_veto(deps, clock):
    record(deps, clock, "ok1", "success", agent="a2")
    record(deps, clock, "ok2", "success", agent="a2")
    assert _contrast_lessons(deps, "t1", record(deps, clock, "bad1", "failure", find=False)) == []
    record(deps, clock, "ok3", "success")
    record(deps, clock, "ok4", "success")
    record(deps, clock, "ok5", "success", agent="a2", find=False)
    assert len(_contrast_lessons(deps, "t1", record(deps, clock, "bad2", "failure", find=False))) == 1


def test_a_successful_run_that_skipped_the_lookup_too_vetoes_the_lesson(deps, clock):
    record(deps, clock, "ok1", "success")
    record(deps, clock, "ok2", "success")
    assert len(_contrast_lessons(deps, "t1", record(deps, clock, "bad1", "failure", find=False))) == 1
    record(deps, clock, "ok3", "success", find=False)
    failed = record(deps, clock, "bad2", "failure", find=False)
    assert _contrast_lessons(deps, "t1", failed) == []
    assert "divergence" not in failed.review["across_runs"]


def test_a_failed_run_with_a_tool_error_is_not_contrasted(deps, clock):
    record(deps, clock, "ok1", "success")
    record(deps, clock, "ok2", "success")
    ingest.start_trajectory(deps, tenant_id="t1", trajectory_id="bad", agent_id="a1", goal=GOAL, tools=TOOLS)
    ingest.append_events(deps, "t1", "bad", [
        dict(event_id="1", type="tool_call", timestamp=clock.now(),
             content={"tool": "cancel_pending_order", "params": {"order_id": "W100"}, "status": "error", "error": "Error: order not found"}),
    ])
    ingest.finalize(deps, "t1", "bad", "failure", None)
    while review_jobs.process_review_jobs(deps):
        pass
    failed = ingest.get_trajectory(deps, "t1", "bad")
    assert "across_runs" not in failed.review
    # the same runs teach the contrast to a failed run that shows no error
    assert len(_contrast_lessons(deps, "t1", record(deps, clock, "quiet", "failure", find=False))) == 1
