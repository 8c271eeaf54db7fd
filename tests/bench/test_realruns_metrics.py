"""The real-runs figures: templates mask values, a warning is relevant only when its lesson cites
the error that followed, a fix speaks of the error only outside quoted text."""
from __future__ import annotations

from bench.realruns import metrics as m
from bench.realruns.env import Task
from bench.realruns.raw import RawErrors
from bench.realruns.runs import Call, Plan, Run

SUBJECTS = m.Subjects(((r"invalid reason", ("reason",)), (r"^<v> not found$", ("item_ids", "item id"))))


def test_a_template_masks_ids_numbers_and_placeholders():
    assert m.template("Error: 5426915165 not found") == "<v> not found"
    assert m.template("Error: <item_ids> not found") == "<v> not found"
    assert m.template("Error: new item 4772738468 not found or available") == "new item <v> not found or available"
    assert m.template("Error: order not found") == "order not found"


def test_a_lesson_cites_an_error_only_as_that_template_not_a_longer_one():
    known = {"<v> not found", "new item <v> not found or available"}
    longer = 'When you call `x`, ...: otherwise it fails with "Error: new item <n> not found or available".'
    assert m.cites(longer, "new item <v> not found or available", known)
    assert not m.cites(longer, "<v> not found", known)
    assert m.cites('fails with "Error: <item_ids> not found".', "<v> not found", known)
    assert m.cites('fails with "Error: the number of items to be…"', "the number of items to be exchanged should match", known)


def test_a_fix_speaks_of_the_error_only_outside_the_quoted_error():
    tmpl = "invalid reason"
    assert not SUBJECTS.spoken('Use `transfer_to_human_agents` instead: it fails with "Error: invalid reason".', tmpl)
    assert SUBJECTS.spoken('Set `reason` to one of the allowed values: otherwise "Error: invalid reason".', tmpl)


def _w(tools, lesson, message="", fix=""):
    return m.Warned(tuple(tools), lesson, message, fix)


def test_call_figures_count_relevant_warnings_false_warnings_and_precision():
    seen = {("cancel", "invalid reason")}
    right = _w(["cancel"], 'it fails with "Error: invalid reason"', "", "set `reason` to an allowed one")
    wrong = _w(["cancel"], 'it fails with "Error: order not found"', "", "use `handoff` instead")
    calls = [
        m.CallRecord("r1", "cancel", True, "invalid reason", [wrong, right]),
        m.CallRecord("r2", "cancel", True, "invalid reason", [wrong]),
        m.CallRecord("r3", "cancel", False, None, [wrong]),
        m.CallRecord("r4", "cancel", False, None, []),
        m.CallRecord("r5", "lookup", False, None, []),
    ]
    f = m.call_figures(calls, seen, {"cancel"}, SUBJECTS)
    assert f["warned_before_error"] == 0.5  # r2's warning is about another error
    assert f["fix_speaks"] == 1.0 and f["false_warnings"] == 0.5 and f["precision"] == round(2 / 3, 4)


def test_lessons_whose_fix_is_an_escape_tool_or_one_runs_literal_are_counted():
    lessons = [
        {"experience_id": "a", "advice": 'Use `transfer_to_human_agents` instead of `cancel`: "Error: invalid reason".'},
        {"experience_id": "b", "advice": "When you call `cancel`, set `order_id` to a value like `#W6067464`."},
        {"experience_id": "c", "advice": 'Set `reason` to "no longer needed" or "ordered by mistake".'},
        {"experience_id": "d", "advice": 'It fails with "Error: #W6067464 not found".'},  # quoted: the error, not the fix
    ]
    literals = m.one_run_literals({"r1": [{"order_id": "#W6067464"}], "r2": [{"order_id": "#W1"}], "r3": [{"order_id": "#W1"}]})
    f = m.lesson_figures(lessons, ("transfer_to_human_agents", "think"), literals)
    assert (f["escape_ids"], f["literal_ids"]) == (["a"], ["b"])


def _run(task_id: str, calls: list[Call], goal_tool: str = "cancel") -> Run:
    task = Task("train", int(task_id), "u", f"Cancel order {task_id} please.", ())
    r = Run(Plan(task, ()), calls, "success" if not any(c.failed for c in calls) else "failure")
    r.id = f"run{task_id}"
    return r


def test_raw_retrieval_warns_above_its_threshold_with_the_past_error_and_what_worked_next():
    bad = Call("cancel", {"order_id": "#W1", "reason": "changed my mind"}, "Error: invalid reason", True)
    good = Call("cancel", {"order_id": "#W1", "reason": "no longer needed"}, "{}", False)
    train = [_run(str(i), [Call(bad.tool, {**bad.params, "order_id": f"#W{i}"}, bad.answer, True),
                           Call(good.tool, {**good.params, "order_id": f"#W{i}"}, "{}", False)]) for i in range(1, 5)]
    raw = RawErrors(train)
    raw.fit_threshold(train)
    warned = raw.warn("Cancel order 9 please.", Call("cancel", {"order_id": "#W9", "reason": "changed my mind"}, "", True))
    assert warned and warned[0].message.endswith('"Error: invalid reason"')
    assert "reason=no longer needed" in warned[0].fix
    assert raw.warn("Cancel order 9 please.", Call("lookup", {"id": "x"}, "", False)) == []
