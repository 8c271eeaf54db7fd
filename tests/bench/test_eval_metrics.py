"""The eval's scoring rules: LoCoMo's turn any@10 and session R@10, the independent set's loader and
metrics, and the offline baselines' BM25 and reciprocal-rank fusion."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from bench.eval import independent, locomo, offline

SAMPLE = Path(__file__).resolve().parents[1] / "support" / "independent_sample.json"


def q(evidence, conv=0, category=1):
    return locomo.Question(conv, "when?", category, tuple(evidence))


def test_turn_any_counts_one_evidence_turn_among_the_hits():
    assert locomo.score(q(["D1:3", "D2:1"]), [["D5:1"], ["D2:1"]])[0] == 1.0
    assert locomo.score(q(["D1:3"]), [["D1:4"], ["D5:1"]])[0] == 0.0


def test_session_recall_is_the_share_of_evidence_sessions_among_the_hit_sessions():
    # sessions in rank order, deduplicated: 1, 3 -> both evidence sessions 1 and 3 covered
    assert locomo.score(q(["D1:3", "D3:9"]), [["D1:1"], ["D1:2"], ["D3:4"]])[1] == 1.0
    assert locomo.score(q(["D1:3", "D3:9"]), [["D1:1"], ["D4:2"]])[1] == 0.5


def test_only_the_first_ten_hits_count_and_a_failed_recall_scores_zero():
    hits = [[f"D2:{i}"] for i in range(10)] + [["D1:3"]]
    assert locomo.score(q(["D1:3"]), hits) == (0.0, 0.0)
    assert locomo.score(q(["D1:3"]), []) == (0.0, 0.0)


def test_load_keeps_categories_1_to_4_with_evidence_and_splits_joined_evidence(tmp_path):
    conv = {"conversation": {"speaker_a": "A", "speaker_b": "B", "session_1_date_time": "1 May",
                             "session_1": [{"speaker": "A", "dia_id": "D1:1", "text": "hi"},
                                           {"speaker": "B", "dia_id": "D1:2", "text": "look", "blip_caption": "a dog"}],
                             "session_2": [{"speaker": "A", "dia_id": "D2:1", "text": "bye"}]},
            "qa": [{"question": "a", "answer": "x", "evidence": ["D1:1; D2:1"], "category": 1},
                   {"question": "b", "answer": "x", "evidence": [], "category": 2},
                   {"question": "c", "answer": "x", "evidence": ["D1:2"], "category": 5}]}
    path = tmp_path / "l.json"
    path.write_text(json.dumps([conv]))
    turns, questions = locomo.load(path)
    assert [t.text for t in turns] == ["A: hi", "B: look [image: a dog]", "A: bye"]
    assert [t.session for t in turns] == [1, 1, 2]
    assert [(x.query, x.evidence, x.sessions) for x in questions] == [("a", ("D1:1", "D2:1"), {1, 2})]


def test_the_sample_independent_set_loads_and_its_ids_round_trip():
    fams = independent.load(SAMPLE)
    assert len(fams) == 4
    tid = independent.traj_id("abc", "inv_unit_cents", 2)
    assert independent.families_of([tid, "xr.abc.other.t0", independent.traj_id("zzz", "x", 0)], "abc") == ["inv_unit_cents"]


def test_a_sibling_that_is_not_in_the_file_is_rejected(tmp_path):
    data = json.loads(SAMPLE.read_text())
    data["families"][0]["sibling"] = "nowhere"
    path = tmp_path / "f.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ValueError, match="nowhere"):
        independent.load(path)


def test_independent_metrics_count_sibling_first_and_the_fix_terms():
    fams = independent.load(SAMPLE)
    recs = [
        independent.Rec("inv_unit_cents", "q1", [["inv_unit_cents"]], text="Pass AMOUNT_CENTS as integer"),
        independent.Rec("inv_unit_cents", "q2", [["inv_currency_code"], ["inv_unit_cents"]], text="amount in cents"),
        independent.Rec("deploy_migrate_first", "q3", [["deploy_freeze_window"], ["x"], ["y"], ["deploy_migrate_first"]]),
        independent.Rec("deploy_freeze_window", "q4", []),
    ]
    m = independent.metrics(fams, recs, recs)
    assert m["hit@1"] == 0.25 and m["hit@3"] == 0.5
    assert m["mrr"] == pytest.approx((1 + 0.5 + 0.25 + 0) / 4)
    assert m["sibling@1"] == 0.5 and m["same_tool_sibling@1"] == 0.5
    assert m["names_fix"] == 0.25 and m["missing@3"] == 2 and m["unknown_hit@3"] == 0.5


def test_bm25_ranks_the_document_with_the_rare_query_term_first():
    bm = offline.Bm25(["the cat sat", "the dog ran", "a dog and a cat"])
    s = bm.scores("dog ran")
    assert offline.top(s, 3) == [1, 2, 0]
    assert offline.top(s, 3, only_positive=True) == [1, 2]


def test_rrf_rewards_documents_ranked_well_by_both():
    # 1 and 3 tie (1/61 + 1/63) just above 2 (2/62); ties go to the lower id
    assert offline.rrf([[1, 2, 3], [3, 2, 1]], k=3) == [1, 3, 2]
    assert offline.rrf([[5, 1], [1, 6]], k=2) == [1, 5]


def test_top_breaks_ties_by_index():
    assert offline.top(np.array([0.5, 0.9, 0.5]), 3) == [1, 0, 2]


def test_the_second_third_and_fourth_blind_sets_are_dev_sets_and_the_independent_one_held_out():
    from bench.eval import run

    m = {"hit@1": 1.0}
    res = {"sets": {name: {"hindsight": m, "raw": m} for name in ("blind2", "blind3", "blind4", "independent")}}
    roles = {(name, system): role for name, role, system, _ in run.rows(res)}
    assert roles[("blind2", "hindsight")] == roles[("blind3", "hindsight")] == roles[("blind4", "hindsight")] == "dev"
    assert roles[("independent", "hindsight")] == "held-out"
    assert run.parse_args(["--sets", "blind2"]).blind2.endswith("bench/blind2/families.json")
    assert run.parse_args(["--sets", "blind3"]).blind3.endswith("bench/blind3/families.json")
    assert run.parse_args(["--sets", "blind4"]).blind4.endswith("bench/blind4/families.json")


def test_a_blind_set_whose_file_is_absent_is_reported_skipped(tmp_path, capsys):
    from bench.eval import run

    assert run.main(["--sets", "blind3", "--blind3", str(tmp_path / "none.json")]) == 0
    out = capsys.readouterr().out
    assert f"blind3{' ' * 20} skipped ({tmp_path / 'none.json'} not found)" in out


def test_strict_hit_at_1_does_not_count_a_first_lesson_merged_from_both_siblings():
    fams = independent.load(SAMPLE)
    recs = [
        independent.Rec("inv_unit_cents", "q1", [["inv_unit_cents"]]),
        independent.Rec("inv_unit_cents", "q2", [["inv_unit_cents", "inv_currency_code"], ["inv_unit_cents"]]),
        independent.Rec("inv_currency_code", "q3", [["inv_currency_code", "inv_unit_cents"]]),
        independent.Rec("deploy_freeze_window", "q4", []),
    ]
    m = independent.metrics(fams, recs)
    assert m["hit@1"] == 0.75
    assert m["strict_hit@1"] == 0.25
    assert independent.strict_first("a", [["a"], ["b"]]) and not independent.strict_first("a", [])
