"""``bench.eval.rerank``: a model's choice among close lessons, applied to a finished run."""
from __future__ import annotations

import json

import pytest

from bench.eval import compare, rerank
from devtools.openai_stub import OpenAIStub


def hit(fams, score, advice):
    return {"families": fams, "score": score, "advice": advice}


def families_file(tmp_path):
    fams = [{"id": f"f{i}", "tools": ["t"], "sibling": f"f{i ^ 1}", "fix": "x", "fix_terms": ["x"],
             "train": [{"goal": "g", "events": []}], "tests": [{"query": f"q{i}"}]} for i in range(4)]
    path = tmp_path / "families.json"
    path.write_text(json.dumps({"version": 1, "families": fams}))
    return path


def a_run(path):
    """f0: its sibling's lesson first by a hair; f1: its own first by a hair; f2: its own first by
    far (not asked); f3: two lessons of one family only (not asked)."""
    recs = [
        {"family": "f0", "query": "q0", "top": [hit(["f1"], 0.70, "A1"), hit(["f1"], 0.69, "A1"), hit(["f0"], 0.68, "A0")]},
        {"family": "f1", "query": "q1", "top": [hit(["f1"], 0.70, "B1"), hit(["f0"], 0.69, "B0")]},
        {"family": "f2", "query": "q2", "top": [hit(["f2"], 0.90, "C2"), hit(["f3"], 0.60, "C3")]},
        {"family": "f3", "query": "q3", "top": [hit(["f3"], 0.70, "D3"), hit(["f3"], 0.70, "D3b")]},
    ]
    for r in recs:
        r["ranked"] = [h["families"] for h in r["top"]]
    return {"sets": {"blind2": {"path": str(path), "tasks": {"known": recs}}}}


def test_only_close_lessons_of_different_families_are_asked_about():
    top = [hit(["a"], 0.70, "x"), hit(["a"], 0.69, "x"), hit(["b"], 0.68, "y"), hit(["c"], 0.60, "z")]
    assert rerank.ambiguous(top, 3, 0.05) == [0, 2, 3]  # the repeated advice is one lesson
    assert rerank.ambiguous(top, 2, 0.05) == [0, 2]
    assert rerank.ambiguous([hit(["a"], 0.9, "x"), hit(["b"], 0.8, "y")], 3, 0.05) is None  # not close
    assert rerank.ambiguous([hit(["a"], 0.7, "x"), hit(["a"], 0.7, "y")], 3, 0.05) is None  # one family
    assert rerank.ambiguous([hit(["a"], 0.7, "x")], 3, 0.05) is None


def test_an_answer_is_a_lesson_number_in_range_or_nothing():
    assert rerank.parse_choice('{"reason": "r", "best": 2}', 3) == 1
    for bad in ('{"best": 4}', '{"best": 0}', '{"best": true}', '{"best": "2"}', "2", "", None, '{"reason": "r"}'):
        assert rerank.parse_choice(bad, 3) is None, bad


def test_the_choice_leads_and_the_rest_keep_their_order(tmp_path):
    run = a_run(families_file(tmp_path))
    asked = []

    def choose(query, lessons):
        asked.append((query, list(lessons)))
        return len(lessons) - 1  # always the last one shown

    out, tally = rerank.rerun(run, choose, log=lambda *_: None)
    assert asked == [("q0", ["A1", "A0"]), ("q1", ["B1", "B0"])]
    recs = out["sets"]["blind2"]["tasks"]["known"]
    assert recs[0]["ranked"] == [["f0"], ["f1"], ["f1"]] and recs[0]["top"][0]["advice"] == "A0"
    assert recs[1]["ranked"] == [["f0"], ["f1"]]
    assert recs[2]["ranked"] == [["f2"], ["f3"]]
    assert (tally["ambiguous"], tally["asked"], tally["moved"], tally["fixed"], tally["broken"]) == (2, 2, 2, 1, 1)
    assert run["sets"]["blind2"]["tasks"]["known"][0]["ranked"][0] == ["f1"]  # the input is not changed
    rows, _ = compare.compare(run, out, resamples=200)
    hit1 = next(r for r in rows if r.metric == "hit@1")
    assert (hit1.won, hit1.lost) == (1, 1)


def test_both_orders_must_name_the_same_lesson(tmp_path):
    run = a_run(families_file(tmp_path))
    first = lambda query, lessons: 0  # noqa: E731 - position bias: always the first shown
    out, tally = rerank.rerun(run, first, both_orders=True, log=lambda *_: None)
    assert tally["moved"] == 0 and tally["disagreed"] == 2 and tally["no_answer"] == 0
    assert out["sets"]["blind2"]["tasks"]["known"][0]["ranked"][0] == ["f1"]
    by_text = lambda query, lessons: lessons.index("A0") if "A0" in lessons else None  # noqa: E731
    out, tally = rerank.rerun(run, by_text, both_orders=True, log=lambda *_: None)
    assert tally["no_answer"] == 1 and tally["disagreed"] == 0  # q1 shows no A0: no answer
    assert tally["moved"] == 1 and out["sets"]["blind2"]["tasks"]["known"][0]["ranked"][0] == ["f0"]


def test_the_cli_asks_a_real_openai_client_through_an_endpoint(tmp_path, capsys):
    path = families_file(tmp_path)
    src, dst = tmp_path / "run.json", tmp_path / "after.json"
    src.write_text(json.dumps(a_run(path)))
    with OpenAIStub() as stub:
        # q0: lesson 2 (its own); q1: an answer out of range moves nothing
        stub.script({"reason": "the cause named", "best": 2}, {"reason": "?", "best": 7})
        code = rerank.main([str(src), "--base-url", stub.base_url, "--model", "m", "--out", str(dst)])
        sent = [b for b in stub.state.requests if "messages" in b]
    assert code == 0
    assert len(sent) == 2
    assert sent[0]["response_format"]["json_schema"]["schema"]["properties"]["best"]["enum"] == [1, 2]
    quoted = json.loads(sent[0]["messages"][1]["content"])  # the query and lessons travel as JSON data
    assert quoted == {"situation": "q0", "lessons": [{"n": 1, "lesson": "A1"}, {"n": 2, "lesson": "A0"}]}
    after = json.loads(dst.read_text())["sets"]["blind2"]["tasks"]["known"]
    assert after[0]["ranked"][0] == ["f0"] and after[1]["ranked"][0] == ["f1"]
    assert "1 without a usable answer; 1 moved: 1 now lead" in capsys.readouterr().out


def test_the_cli_refuses_a_file_without_per_test_results(tmp_path, capsys):
    src = tmp_path / "run.json"
    src.write_text(json.dumps({"sets": {"reuse": {}}}))
    assert rerank.main([str(src), "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--out", str(tmp_path / "o")]) == 2
    assert "per-test results" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        rerank.main([str(src), "--base-url", "u", "--model", "m", "--out", "o", "--candidates", "1"])
