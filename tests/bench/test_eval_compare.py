"""``bench.eval.compare``: two eval runs test by test, with intervals that resample families."""
from __future__ import annotations

import json

import pytest

from bench.eval import compare, independent


def families_file(tmp_path, n: int = 20, tests: int = 4):
    """``n`` families in sibling pairs (f0 <-> f1, ...), each with ``tests`` queries."""
    fams = [{"id": f"f{i}", "tools": ["t"], "sibling": f"f{i ^ 1}", "fix": "x", "fix_terms": ["x"],
             "train": [{"goal": "g", "events": []}], "tests": [{"query": f"q{i}.{j}"} for j in range(tests)]}
            for i in range(n)]
    path = tmp_path / "families.json"
    path.write_text(json.dumps({"version": 1, "families": fams}))
    return path


def rec(i: int, j: int, right: bool) -> dict:
    """A test of family ``i`` whose first hit is its own lesson, or its sibling's."""
    own, sib = f"f{i}", f"f{i ^ 1}"
    return {"family": own, "query": f"q{i}.{j}", "ranked": [[own], [sib]] if right else [[sib], [own]]}


def run(path, wrong: set[tuple[int, int]], n: int = 20, tests: int = 4) -> dict:
    recs = [rec(i, j, (i, j) not in wrong) for i in range(n) for j in range(tests)]
    return {"sets": {"blind2": {"path": str(path), "tasks": {"known": recs, "unknown": recs}}}}


def by(rows, set_name, metric):
    return next(r for r in rows if r.set == set_name and r.metric == metric)


def test_the_outcomes_agree_with_the_eval_s_own_metrics(tmp_path):
    path = families_file(tmp_path)
    result = run(path, {(0, 0), (0, 1), (5, 3)})
    fams = independent.load(path)
    recs = [independent.Rec(r["family"], r["query"], r["ranked"]) for r in result["sets"]["blind2"]["tasks"]["known"]]
    expected = independent.metrics(fams, recs, recs)
    siblings = {f.id: f.sibling for f in fams}
    for metric in compare.METRICS:
        value, (lo, hi) = compare.spread(result["sets"]["blind2"], metric, siblings)
        assert value == pytest.approx(expected[metric]), metric
        assert lo <= value <= hi


def test_a_paired_difference_counts_the_tests_won_and_lost(tmp_path):
    path = families_file(tmp_path)
    before, after = run(path, {(0, 0), (0, 1), (2, 0)}), run(path, {(2, 0), (3, 2)})
    rows, unmatched = compare.compare(before, after, resamples=500)
    hit1, sib = by(rows, "blind2", "hit@1"), by(rows, "blind2", "sibling@1")
    assert (hit1.won, hit1.lost, hit1.n, hit1.families) == (2, 1, 80, 20)
    assert hit1.delta == pytest.approx(1 / 80)
    assert hit1.before == pytest.approx(77 / 80) and hit1.after == pytest.approx(78 / 80)
    # sibling first is lower-better: the sibling no longer first in two tests is two won
    assert (sib.won, sib.lost) == (2, 1) and sib.delta == pytest.approx(-1 / 80)
    assert unmatched == {"blind2": 0}


def test_a_few_tests_moved_either_way_read_as_noise_and_a_broad_gain_does_not(tmp_path):
    path = families_file(tmp_path)
    base = run(path, {(i, 0) for i in range(20)} | {(i, 1) for i in range(20)})  # half the tests wrong
    a_few = run(path, ({(i, 0) for i in range(20)} | {(i, 1) for i in range(20)} | {(4, 2)}) - {(0, 0), (1, 0)})
    broad = run(path, {(i, 0) for i in range(20)})  # every family's second test fixed
    noise = by(compare.compare(base, a_few, resamples=2000)[0], "blind2", "hit@1")
    gain = by(compare.compare(base, broad, resamples=2000)[0], "blind2", "hit@1")
    assert noise.delta > 0 and not noise.readable
    assert gain.readable and gain.ci[0] > 0


def test_gains_in_one_family_read_wider_than_the_same_gains_spread_over_families(tmp_path):
    # the tests of one family move together (one lesson): resampling tests would read this as
    # certain; resampling families does not
    path = families_file(tmp_path, n=20, tests=8)
    wrong = {(i, j) for i in range(20) for j in range(4)}
    base = run(path, wrong, tests=8)
    one_family = run(path, wrong - {(3, j) for j in range(4)}, tests=8)
    spread_out = run(path, wrong - {(i, 0) for i in (3, 6, 9, 12)}, tests=8)
    concentrated = by(compare.compare(base, one_family, resamples=4000)[0], "blind2", "hit@1")
    spread = by(compare.compare(base, spread_out, resamples=4000)[0], "blind2", "hit@1")
    assert concentrated.delta == spread.delta == pytest.approx(4 / 160)
    width = lambda r: r.ci[1] - r.ci[0]  # noqa: E731
    assert width(concentrated) > width(spread)
    assert not concentrated.readable


def test_sets_are_pooled_and_a_test_in_one_run_only_is_left_out(tmp_path):
    path = families_file(tmp_path)
    before, after = run(path, {(0, 0)}), run(path, set())
    before["sets"]["blind3"] = before["sets"]["blind2"]
    after["sets"]["blind3"] = json.loads(json.dumps(after["sets"]["blind2"]))
    after["sets"]["blind3"]["tasks"]["known"].pop()  # f19's last test
    rows, unmatched = compare.compare(before, after, resamples=200)
    assert unmatched["blind3"] == 1 and by(rows, "blind3", "hit@1").n == 79
    pooled = by(rows, "pooled", "hit@1")
    assert (pooled.n, pooled.families, pooled.won) == (159, 40, 2)


def test_hindsight_against_raw_in_the_same_run(tmp_path):
    path = families_file(tmp_path)
    result = run(path, set())["sets"]["blind2"]
    result["tasks"]["raw"] = [rec(i, j, j >= 2) for i in range(20) for j in range(4)]  # raw: half wrong
    siblings = {f"f{i}": f"f{i ^ 1}" for i in range(20)}
    gain = compare.over_raw(result, "hit@1", siblings, resamples=1000)
    assert gain.delta == pytest.approx(0.5) and gain.readable and gain.won == 40
    assert compare.over_raw(result, "unknown_hit@3", siblings) is None  # raw ignores tools
    line = compare.spreads(result)
    assert line.startswith("hit@1 1.000 [1.000, 1.000]") and "hindsight - raw: hit@1 +0.500" in line


def test_the_command_prints_the_table_and_refuses_what_it_cannot_read(tmp_path, capsys):
    path = families_file(tmp_path)
    b, a = tmp_path / "b.json", tmp_path / "a.json"
    b.write_text(json.dumps(run(path, {(0, 0)})))
    a.write_text(json.dumps(run(path, set())))
    assert compare.main([str(b), str(a), "--resamples", "200"]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("blind2     hit@1"))
    assert "0.988   1.000  +0.012" in line and line.endswith("1    0  inside the families' noise")
    assert "no test moved" in next(x for x in out.splitlines() if x.startswith("blind2     hit@3"))
    assert compare.main([str(b), str(tmp_path / "missing.json")]) == 2
    (tmp_path / "empty.json").write_text(json.dumps({"sets": {}}))
    assert compare.main([str(b), str(tmp_path / "empty.json")]) == 2
    with pytest.raises(SystemExit):
        compare.main([str(b), str(a), "--resamples", "5"])


def test_a_replay_report_s_variants_compare_as_runs(tmp_path, capsys):
    # bench.eval.replay --out --tasks: per variant, each blind set's ranked families (tools known only)
    base = [rec(i, j, (i, j) != (0, 0)) for i in range(20) for j in range(4)]
    variant = [rec(i, j, True) for i in range(20) for j in range(4)]
    report = {"kept": "k", "variants": {"base": {"settings": [], "tasks": {"blind2": base}},
                                        "v": {"settings": ["x=1"], "tasks": {"blind2": variant}},
                                        "bare": {"settings": []}}}
    path = tmp_path / "replay.json"
    path.write_text(json.dumps(report))
    before, after = compare.read_run(str(path)), compare.read_run(f"{path}#v")
    assert before["sets"]["blind2"]["path"] == str(independent.PATHS["blind2"])
    # the synthetic families are in no set's file, so none has a sibling: no sib1st row, and a
    # replay holds no tools-unknown recalls: no unk@3 row
    rows, _ = compare.compare(before, after, resamples=200)
    assert [(r.metric, r.won, r.lost) for r in rows] == [("hit@1", 1, 0), ("strict_hit@1", 1, 0), ("hit@3", 0, 0)]
    with pytest.raises(ValueError, match="no variant 'w'"):
        compare.read_run(f"{path}#w")
    with pytest.raises(ValueError, match="without --tasks"):
        compare.read_run(f"{path}#bare")
    eval_run = tmp_path / "run.json"
    eval_run.write_text(json.dumps({"sets": {}}))
    with pytest.raises(ValueError, match="not a replay report"):
        compare.read_run(f"{eval_run}#v")
    assert compare.main([f"{path}#base", f"{path}#w"]) == 2
    assert "no variant" in capsys.readouterr().err


def test_a_run_from_another_checkout_is_read_against_this_checkout_s_families_file():
    fams = independent.load(independent.PATHS["blind2"])
    recs = [{"family": f.id, "query": q, "ranked": [[f.id]]} for f in fams for q in f.tests]
    moved = "/elsewhere/bench/blind2/families.json"
    run_ = {"sets": {"blind2": {"path": moved, "tasks": {"known": recs, "unknown": recs}}}}
    rows, _ = compare.compare(run_, run_, resamples=100)
    assert by(rows, "blind2", "sibling@1").n == sum(len(f.tests) for f in fams if f.sibling)
    with pytest.raises(ValueError, match="is not here"):
        compare.families_path("blind9", {"path": moved})
