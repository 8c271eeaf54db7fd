"""Contract of ``ports.Checkpoints``: named progress of maintenance, kept across runs."""
from __future__ import annotations


def test_a_name_never_saved_loads_none(checkpoints):
    assert checkpoints.load("decay") is None


def test_the_last_state_saved_is_the_one_loaded(checkpoints):
    checkpoints.save("decay", {"cursor": "abc", "examined": 3, "pass": {"started": "2026-01-01T00:00:00+00:00"}})
    checkpoints.save("decay", {"cursor": None, "examined": 7})
    checkpoints.save("export:t1", {"cursor": "x"})
    assert checkpoints.load("decay") == {"cursor": None, "examined": 7}
    assert checkpoints.load("export:t1") == {"cursor": "x"}


def test_a_saved_state_outlives_the_adapter(durable_backend, checkpoints):
    checkpoints.save("decay", {"cursor": "t9#x", "runs": 2})
    assert durable_backend.reopen().checkpoints().load("decay") == {"cursor": "t9#x", "runs": 2}


def test_a_deleted_name_loads_none_and_the_others_stay(checkpoints):
    checkpoints.save("stats:t1", {"as_of": "x"})
    checkpoints.save("stats:t2", {"as_of": "y"})
    checkpoints.delete("stats:t1")
    checkpoints.delete("never-saved")
    assert checkpoints.load("stats:t1") is None
    assert checkpoints.load("stats:t2") == {"as_of": "y"}
