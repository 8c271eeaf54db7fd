"""``python -m bench.realruns`` end to end on the small shop: runs replayed against its real tools are
recorded through the public HTTP API of a real server, reviewed, then advised and recalled on the
held-out tasks beside raw retrieval; ``bench.eval`` names the retail set it skips when not fetched."""
from __future__ import annotations

import json

import pytest

from bench.eval import run as eval_run
from bench.realruns import __main__ as realruns

pytestmark = pytest.mark.e2e


def test_the_small_shop_is_learned_over_http_and_measured_beside_raw_retrieval(tmp_path, capsys):
    out = tmp_path / "res.json"
    assert realruns.main(["--env", "smallshop", "--roles", "dev", "--out", str(out)]) == 0
    res = json.loads(out.read_text())
    assert res["review_failed"] == 0 and res["lessons"]["lessons"] > 0
    assert sum(res["runs"]["train"].values()) > 40 and res["runs"]["dev"]["failure"] > 0
    dev = res["dev"]
    for system in ("hindsight", "raw", "tool_ever_failed"):
        f = dev[system]
        assert f["failing_seen"] > 0 and f["calls"] == dev["hindsight"]["calls"], system
        for key in ("warned_before_error", "false_warnings", "precision"):
            assert f[key] is None or 0.0 <= f[key] <= 1.0, (system, key)
    assert dev["tool_ever_failed"]["warned_any_before_error"] == 1.0  # the trivial reference warns on every such call
    table = capsys.readouterr().out
    assert "dev       hindsight" in table and "dev       raw TF-IDF errors" in table


def test_the_retail_set_is_skipped_with_a_clear_line_when_not_fetched(monkeypatch, capsys):
    monkeypatch.setattr("bench.realruns.sets.retail_available", lambda: False)
    assert eval_run.main(["--sets", "retail"]) == 0
    assert "real runs (retail)         skipped (the tau-bench retail environment is not fetched" in capsys.readouterr().out
