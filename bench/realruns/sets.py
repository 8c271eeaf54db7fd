"""The environments the real-runs set runs on, by name: how each is loaded, split and measured."""
from __future__ import annotations

from typing import Any, Callable, Sequence

from . import evaluate, metrics, retail, smallshop
from .env import load_retail, retail_available

ENVIRONMENTS = ("retail", "smallshop")
TRAIN_TASKS = 240  # of the retail train split: three quarters learned, one quarter dev


def unavailable(name: str) -> str | None:
    if name == "retail" and not retail_available():
        return "the tau-bench retail environment is not fetched (python -m bench.realruns.fetch)"
    return None


def load(name: str, train_tasks: int | None = None) -> tuple[Any, Any, metrics.Subjects, evaluate.Roles]:
    """The environment, its catalog of runs, what its errors are about, and its tasks by role."""
    if name == "retail":
        env = load_retail()
        split = evaluate.retail_roles(env, TRAIN_TASKS if train_tasks is None else train_tasks)
        return env, retail.RetailCatalog(), metrics.Subjects(retail.SUBJECTS), split
    env = smallshop.load()
    split = evaluate.Roles(tuple(env.tasks["train"]), tuple(env.tasks["test"]), tuple(env.tasks["test"]))
    return env, smallshop.ShopCatalog(), metrics.Subjects(smallshop.SUBJECTS), split


def run(name: str, api, nonce: str, review_timeout: float, log: Callable[[str], None], roles: Sequence[str],
        train_tasks: int = TRAIN_TASKS, mistakes: int = 2, seed: int = 7) -> dict[str, Any]:
    env, catalog, subjects, split = load(name, train_tasks)
    return evaluate.run(api, env, catalog, subjects, split, nonce, review_timeout, log, roles, mistakes, seed)
