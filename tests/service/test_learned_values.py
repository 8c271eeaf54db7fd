"""Ingest -> review -> recall: the advice an agent gets names what the past task had to learn."""
from __future__ import annotations

from chalicelib.services import ingest, recall, review_jobs


def event(eid, clock, kind, **content) -> dict:
    return dict(event_id=eid, type=kind, timestamp=clock.now(), content=content)


def tool(eid, clock, name, params, error=None, result=None) -> dict:
    content = {"tool": name, "params": params, "status": "error" if error else "ok"}
    content |= {"error": error} if error else {"result": result} if result is not None else {}
    return event(eid, clock, "tool_call", **content)


def learn(deps, tid, goal, tools, events) -> None:
    ingest.start_trajectory(deps, tenant_id="t1", trajectory_id=tid, agent_id="a1", goal=goal, task_type="operation",
                            tools=tools)
    ingest.append_events(deps, "t1", tid, events)
    ingest.finalize(deps, "t1", tid, "success", None)
    while review_jobs.process_review_jobs(deps):
        pass


def test_the_advice_names_the_rule_the_agent_worked_out_not_the_past_tasks_values(deps, clock):
    tools = ["obs_schedule", "obs_resolve"]
    learn(deps, "tr1", "Schedule 300 s of the galaxy at RA 210.80 deg on T1", tools, [
        event("1", clock, "user_input", text="Tonight on T1: 300 s on the galaxy at RA 210.80 deg."),
        tool("2", clock, "obs_schedule", {"scope": "T1", "ra": 210.8, "exposure_s": 300},
             error="SCHEDULE_REJECTED (E-214): target below horizon limit"),
        tool("3", clock, "obs_resolve", {"coords": "210.80"}, result={"ra_hours": 14.0533}),
        event("4", clock, "llm_reasoning", text="RA was read as hours; the catalogue gives degrees: divide by 15, so 14.0533 h."),
        tool("5", clock, "obs_schedule", {"scope": "T1", "ra": 14.0533, "exposure_s": 300}, result={"id": "EXP-1"}),
    ])
    _, advice = recall.recall(deps, "t1", "expose 600 s on RA 187.70 deg with T2, rejected below the horizon",
                              agent_id="a1", tools=tools)
    assert "divide by 15" in advice and "E-214" in advice
    assert "210.8" not in advice and "14.0533" not in advice


PRINT_TOOLS = ["print_job_submit", "printer_status"]
MISMATCH = "JOB_HELD: media mismatch (requested media not loaded in selected source)"


def test_two_tasks_fixed_differently_after_the_same_failure_both_reach_the_advice(deps, clock):
    learn(deps, "us", "Print the A4 contract on NYC-PRN-12", PRINT_TOOLS, [
        tool("1", clock, "print_job_submit", {"printer": "NYC-PRN-12", "media_size": "A4"}, error=MISMATCH),
        tool("2", clock, "printer_status", {"printer": "NYC-PRN-12"}, result={"trays": [{"id": "tray1", "media": "letter"}]}),
        event("3", clock, "llm_reasoning", text="No A4 anywhere on a US printer. Print on letter and scale."),
        tool("4", clock, "print_job_submit", {"printer": "NYC-PRN-12", "media_size": "letter", "fit_to_page": True},
             result={"job": "J-1"}),
    ])
    learn(deps, "a3", "Print the A3 floor plan on MFP-3F-EAST", PRINT_TOOLS, [
        tool("1", clock, "print_job_submit", {"printer": "MFP-3F-EAST", "media_size": "A3"}, error=MISMATCH),
        tool("2", clock, "printer_status", {"printer": "MFP-3F-EAST"},
             result={"trays": [{"id": "tray1", "media": "A4"}, {"id": "tray2", "media": "A3"}]}),
        event("3", clock, "llm_reasoning", text="A3 sits in tray2 but the job goes to tray1 by default."),
        tool("4", clock, "print_job_submit", {"printer": "MFP-3F-EAST", "media_size": "A3", "source": "tray2"},
             result={"job": "J-2"}),
    ])
    hits, advice = recall.recall(deps, "t1", "A3 poster on MFP-5F-WEST, job held", agent_id="a1", tools=PRINT_TOOLS)
    (lesson,) = [h.experience for h in hits if h.experience.support == 2]  # one lesson, learned from both tasks
    assert "`source`" in lesson.advice and "`fit_to_page`" in lesson.advice
    assert "`source`" in advice and "Print on letter and scale" in advice and "tray1 by default" in advice
    assert advice.count("JOB_HELD") == 1
