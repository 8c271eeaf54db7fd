"""``python -m bench.eval`` end to end against the real embedded server: the sample independent set
and a small LoCoMo-shaped file go through the public HTTP API and come out as one table and JSON."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from bench.eval import run

pytestmark = pytest.mark.e2e
SAMPLE = Path(__file__).resolve().parents[1] / "support" / "independent_sample.json"


def tiny_locomo(path: Path) -> None:
    turns = [("Ana", "I adopted a grey cat named Pixel last week."), ("Ben", "Nice! I started learning the cello."),
             ("Ana", "My sister moved to Lisbon for a job at a bakery."), ("Ben", "I ran my first marathon in Oslo.")]
    sessions = {f"session_{s}": [{"speaker": sp, "dia_id": f"D{s}:{n}", "text": t}
                                 for n, (sp, t) in enumerate(turns[2 * (s - 1): 2 * s], start=1)] for s in (1, 2)}
    qa = [{"question": "What is the name of Ana's cat?", "answer": "Pixel", "evidence": ["D1:1"], "category": 1},
          {"question": "Where did Ben run a marathon?", "answer": "Oslo", "evidence": ["D2:2"], "category": 4},
          {"question": "unanswerable", "answer": "-", "evidence": ["D1:2"], "category": 5}]
    path.write_text(json.dumps([{"conversation": {"speaker_a": "Ana", "speaker_b": "Ben", **sessions}, "qa": qa}]))


def test_one_run_measures_the_independent_set_and_locomo_beside_their_baselines(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("bench.eval.offline.CACHE", tmp_path / "cache")
    monkeypatch.delenv("HINDSIGHT_RATE_LIMIT_PER_SECOND", raising=False)
    tiny_locomo(tmp_path / "locomo.json")
    out = tmp_path / "res.json"
    assert run.main(["--sets", "independent,locomo", "--independent", str(SAMPLE),
                     "--locomo", str(tmp_path / "locomo.json"), "--out", str(out)]) == 0
    res = json.loads(out.read_text())
    ind = res["sets"]["independent"]
    assert ind["trajectories"] == 10 and ind["review_failed"] == 0 and ind["experiences"] > 0
    assert ind["hindsight"]["n"] == ind["raw"]["n"] == 8
    assert ind["hindsight"]["hit@3"] > 0.5  # the lessons learned over HTTP really come back for new tasks
    loc = res["sets"]["locomo"]
    assert loc["turns"] == 4 and loc["questions"] == 2 and loc["hindsight"]["errors"] == {}
    # 2 sessions, top 10 over 4 turns: every evidence turn is returned by every method
    for name in ("hindsight", "bm25", "dense", "rrf"):
        assert (loc[name]["turn_any@10"], loc[name]["session_r@10"]) == (1.0, 1.0), name
    assert "HINDSIGHT_RATE_LIMIT_PER_SECOND" not in os.environ  # only the server's environment had it
    table = capsys.readouterr().out
    assert "independent                held-out hindsight" in table and "LoCoMo                     dev      RRF(BM25, dense)" in table


def test_locomo_is_skipped_with_a_clear_line_when_no_file_is_named(monkeypatch, capsys):
    monkeypatch.delenv("HINDSIGHT_LOCOMO", raising=False)
    assert run.main(["--sets", "locomo"]) == 0
    assert "LoCoMo                     skipped (HINDSIGHT_LOCOMO not set)" in capsys.readouterr().out
