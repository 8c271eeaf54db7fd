"""``python -m bench.eval`` arguments: a development loop can recall experience_reuse's dev tasks
alone, so the held-out figures are neither computed nor printed."""
from __future__ import annotations

import pytest

from bench.eval import run


def test_reuse_tasks_default_to_both_sets_and_can_name_dev_alone():
    assert run.parse_args([]).reuse_tasks == ("dev", "heldout")
    assert run.parse_args(["--reuse-tasks", "dev"]).reuse_tasks == ("dev",)


@pytest.mark.parametrize("value", ["", "test", "dev,train"])
def test_unknown_reuse_task_sets_are_refused(value):
    with pytest.raises(SystemExit):
        run.parse_args(["--reuse-tasks", value])


def test_the_table_shows_only_the_task_sets_that_ran(capsys):
    row = {"n": 120, "hit@1": 0.9}
    res = {"server": "test", "sets": {"reuse": {"dev": {"hindsight": row, "raw": row}}}, "skipped": {}, "timings": {}}
    run.print_table(res)
    out = capsys.readouterr().out
    assert "experience_reuse dev" in out and "held-out hindsight" not in out
