"""The experience-reuse benchmark's held-out test tasks stay usable: five per family, the same V keys
as the family's dev tests, every action template runs on them, and no wording copies a dev/train one."""
from __future__ import annotations

import dataclasses

import pytest

from bench.experience_reuse.dataset import FAMILIES
from bench.experience_reuse.heldout import HELDOUT
from bench.experience_reuse.schema import validate

BY_ID = {f.id: f for f in FAMILIES}


def test_every_family_has_exactly_five_heldout_tasks():
    assert set(HELDOUT) == set(BY_ID)
    for fid, tasks in HELDOUT.items():
        assert len(tasks) == 5, fid


@pytest.mark.parametrize("fid", sorted(BY_ID))
def test_heldout_v_keys_equal_the_family_test_keys(fid):
    fam = BY_ID[fid]
    keys = {frozenset(t.v) for t in fam.tests}
    assert len(keys) == 1, f"{fid}: its dev tests disagree on their keys"
    for task in HELDOUT[fid]:
        assert set(task.v) == set(next(iter(keys))), task.query


@pytest.mark.parametrize("fid", sorted(BY_ID))
def test_every_action_runs_on_heldout_values(fid):
    fam = BY_ID[fid]
    for task in HELDOUT[fid]:
        v = task.v
        assert fam.naive(v)
        assert fam.fix.calls(v)
        for w in fam.wrong:
            assert w.calls(v), w.label
        if fam.pre:
            fam.pre(v)
        if fam.fail and fam.fail.calls:
            fam.fail.calls(v)


def test_heldout_families_pass_the_dataset_validation():
    # naive fails, fix succeeds, wrong alternatives fail, tools are the family's: on the held-out values too
    validate([dataclasses.replace(f, tests=HELDOUT[f.id]) for f in FAMILIES])


def test_no_heldout_wording_equals_a_dev_or_train_wording():
    seen = set()
    for fam in FAMILIES:
        seen |= {t.query.strip().lower() for t in fam.tests}
        seen |= {r.goal.strip().lower() for r in fam.train}
        if fam.fail:
            seen.add(fam.fail.goal.strip().lower())
    heldout = [t.query.strip().lower() for tasks in HELDOUT.values() for t in tasks]
    assert len(set(heldout)) == len(heldout), "a held-out wording is used twice"
    assert not seen & set(heldout)


def test_heldout_values_are_not_a_dev_or_train_task():
    for fam in FAMILIES:
        old = [dict(r.v) for r in (*fam.train, *fam.tests, *([fam.fail] if fam.fail else []))]
        for task in HELDOUT[fam.id]:
            assert dict(task.v) not in old, task.query


def test_run_task_sets():
    from bench.experience_reuse.run import with_tasks

    fams = FAMILIES[:2]
    assert with_tasks(fams, "dev") == fams
    assert [f.tests for f in with_tasks(fams, "heldout")] == [HELDOUT[f.id] for f in fams]
    assert [len(f.tests) for f in with_tasks(fams, "all")] == [10, 10]
