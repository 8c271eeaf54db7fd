"""``bench.sets``: every frozen set keeps the promises its README makes, and a file that breaks the
format is refused by the validator and by the eval's loader alike."""
from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from bench import sets
from bench.eval import independent

SAMPLE = Path(__file__).resolve().parents[1] / "support" / "independent_sample.json"
BLIND = sorted(sets.BLIND_SETS)


@pytest.mark.parametrize("name", sorted(sets.SETS))
def test_every_frozen_set_passes_its_checks(name):
    errors, _, counts = sets.check(name)
    assert errors == [] and counts


def test_the_counts_are_those_the_readmes_quote():
    quoted = {  # families, sibling pairs (same-tool), training trajectories, test queries
        "blind2": (46, 23, 20, 92, 184), "blind3": (47, 20, 20, 94, 188),
        "blind4": (44, 21, 18, 94, 176), "independent": (54, 25, 22, 111, 216),
    }
    for name, want in quoted.items():
        c = sets.check(name)[2]
        assert (c["families"], c["sibling_pairs"], c["same_tool_pairs"], c["train_trajectories"], c["test_queries"]) == want
    assert sets.check("blind4")[2]["shapes"]["value-from-result"] == 31
    assert sets.check("reuse-heldout")[2] == {"families": 24, "tasks": 120}
    assert sets.check("corrections")[2] == {"cases": 12, "lookalikes": 8}


def blind2() -> dict:
    return copy.deepcopy(sets.read(sets.SETS["blind2"].path))


def rename(doc: dict, n: int, new_id: str) -> None:
    fam = doc["families"][n]
    for other in doc["families"]:
        if other.get("sibling") == fam["id"]:
            other["sibling"] = new_id
    fam["id"] = new_id


@pytest.mark.parametrize("break_it, message", [
    (lambda d: d["families"][0]["train"][0]["events"].append({"type": "tool_call", "content": {"tool": "nope", "params": {}, "status": "ok", "result": 1}}),
     "is not in the family's tools"),
    (lambda d: d["families"][0]["train"][0]["events"][0].update(event_id="e0"), "carries event_id"),
    (lambda d: d["families"][0].update(sibling="nowhere"), "sibling 'nowhere'"),
    (lambda d: d["families"][1].update(id=d["families"][0]["id"]), "duplicate id"),
    (lambda d: d["families"][0].update(id="a.b"), "without a dot"),
    (lambda d: d["families"][0]["tests"].append({"q": "x"}), "query must be a non-empty string"),
    (lambda d: d.update(version=2), "expected {'version': 1"),
])
def test_the_schema_refuses_a_broken_file_and_the_loader_with_it(tmp_path, break_it, message):
    doc = blind2()
    break_it(doc)
    assert any(message in e for e in sets.schema_errors(doc))
    path = tmp_path / "families.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(ValueError, match="families.json"):
        independent.load(path)


@pytest.mark.parametrize("break_it, message", [
    (lambda d: d["families"][0]["tests"][0].update(query=d["families"][0]["tests"][0]["query"] + " " + d["families"][0]["fix_terms"][0]),
     "leaks the fix terms"),
    (lambda d: d["families"][0]["tests"][0].update(query=d["families"][3]["train"][0]["goal"]), "near copy"),
    (lambda d: d["families"][0]["tests"].pop(), "needs exactly 4 tests"),
    (lambda d: rename(d, 0, "Not_Kebab"), "not kebab-case"),
    (lambda d: d.update(families=d["families"][:40]), "families (need >= 44)"),
])
def test_a_frozen_set_promises_more_than_the_schema(break_it, message):
    doc = blind2()
    break_it(doc)
    assert any(message in e for e in sets.set_errors(doc))


def test_a_users_own_file_needs_only_the_schema():
    # the eval's sample: snake_case ids, two tests a family, four families
    doc = sets.read(SAMPLE)
    assert sets.schema_errors(doc) == []
    assert sets.set_errors(doc)
    assert len(independent.load(SAMPLE)) == 4


def test_shapes_name_known_shapes_for_every_trajectory():
    doc, shapes = sets.read(sets.SETS["blind3"].path), sets.read(sets.SETS["blind3"].path.parent / "shapes.json")
    assert sets.shapes_errors(shapes, doc) == []
    first = doc["families"][0]["id"]
    shapes["trajectories"][first] = shapes["trajectories"][first][:-1]
    shapes["trajectories"][doc["families"][1]["id"]][0] = ["made-up"]
    errors = sets.shapes_errors(shapes, doc)
    assert any(first in e and "one list of shapes per" in e for e in errors)
    assert any("made-up" in e for e in errors)


def test_heldout_tasks_need_a_query_and_values():
    doc = sets.read(sets.SETS["reuse-heldout"].path)
    doc["tasks"]["weather-city"][0] = {"query": "", "values": {}}
    doc["tasks"]["flight-airport"][1]["extra"] = 1
    errors = sets.heldout_errors(doc)
    assert any("weather-city/tasks[0]: query" in e for e in errors)
    assert any("weather-city/tasks[0]: values" in e for e in errors)
    assert any("flight-airport/tasks[1]" in e for e in errors)


def test_corrections_need_their_keys_unique_ids_and_words():
    doc = sets.read(sets.SETS["corrections"].path)
    doc["cases"][1]["id"] = doc["cases"][0]["id"]
    doc["cases"][2]["query"] = " "
    del doc["cases"][3]["amendment"]["advice"]
    errors = sets.corrections_errors(doc)
    assert any("appears twice" in e for e in errors)
    assert any(repr(doc["cases"][2]["id"]) in e and "non-empty" in e for e in errors)
    assert any(repr(doc["cases"][3]["id"]) in e and "expected keys" in e for e in errors)


def test_the_command_exits_1_on_an_invalid_file(tmp_path, capsys):
    doc = blind2()
    doc["families"][0]["tests"].pop()
    path = tmp_path / "families.json"
    path.write_text(json.dumps(doc))
    assert sets.main(["blind2"]) == 0
    assert sets.main([str(path)]) == 1
    assert "needs exactly 4 tests" in capsys.readouterr().out


def test_no_benchmark_edits_sys_path():
    # benchmarks run as modules from the repository root: python -m bench.NAME
    bench = Path(sets.__file__).resolve().parent
    offenders = [str(p.relative_to(bench)) for p in bench.rglob("*.py") if "sys.path" in p.read_text()]
    assert offenders == []
