"""The corrections set (bench/corrections) loads and is well formed; its measure is the right one."""
from __future__ import annotations

import json

import pytest

from bench.eval import corrections


def test_the_set_loads_with_unique_ids_and_both_lessons():
    cases = corrections.load()
    assert len(cases) >= 12 and len({c["id"] for c in cases}) == len(cases)
    assert all(c["original"]["advice"] != c["amendment"]["advice"] for c in cases)


def test_a_malformed_case_is_refused(tmp_path):
    bad = tmp_path / "set.json"
    bad.write_text(json.dumps({"cases": [{"id": "x", "agent_id": "a", "original": {"situation": "s"}, "amendment": {}, "query": "q"}]}))
    with pytest.raises(ValueError):
        corrections.load(bad)


@pytest.mark.parametrize("ranking,ok", [(["a", "o"], True), (["o", "a"], False), (["a"], True), (["o"], False), ([], False)])
def test_the_amendment_counts_first_only_when_served_above_the_original(ranking, ok):
    assert corrections.first(ranking, "a", "o") is ok
