"""A held-out set of test tasks (``heldout.json``): five per family, never looked at while tuning the engine.

The dev tasks in ``dataset.py`` (``Family.tests``) have been used to improve retrieval, so they no
longer measure generalization. These tasks were written once, against the same rules and with the
same V keys, before any run of the benchmark on them; their wordings must not be changed after
seeing results (``python -m bench.experience_reuse --tasks heldout``).
"""
from __future__ import annotations

from pathlib import Path

from bench import sets

from .schema import Task, V


def load(path: str | Path = sets.SETS["reuse-heldout"].path) -> dict[str, tuple[Task, ...]]:
    """The tasks of each family, checked by ``bench.sets``."""
    doc = sets.read(path)
    errors = sets.heldout_errors(doc)
    if errors:
        raise ValueError(f"{path}: " + "; ".join(errors[:5]))
    return {fid: tuple(Task(t["query"], V(t["values"])) for t in tasks) for fid, tasks in doc["tasks"].items()}


HELDOUT = load()
