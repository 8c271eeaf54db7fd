"""Runs replayed against an environment's real tools: a plan of calls, executed on a fresh copy of
the data, becomes a run with every call's real answer, and a trajectory in the public API's shape.

A plan is the gold way to do a task, or a realistic mistake and what the agent did after it
(``Plan.mistake``, ``Plan.ending``). The run succeeds when the data it leaves equals what the gold
actions leave and the environment's policy check passes (``Catalog.policy_ok``).
"""
from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Protocol, Sequence

from .env import Environment, Task, is_error, request_of, state_digest


@dataclass(frozen=True)
class Step:
    tool: str
    params: Mapping[str, Any]


@dataclass(frozen=True)
class Decision:
    """Where a failed run left the way the successful runs of its kind took: a call it skipped
    (``skipped``: ``tool`` was not called before ``before``), an argument it set otherwise
    (``argument``), a tool it used in place of another (``tool``), or one call split in several
    (``split``)."""

    kind: str
    tool: str
    before: str | None = None
    param: str | None = None


@dataclass(frozen=True)
class Plan:
    task: Task
    steps: tuple[Step, ...]
    mistake: str | None = None  # None: the gold plan
    ending: str | None = None  # what the agent did after the mistake: fix, think, retry, handoff, ...
    decision: Decision | None = None  # the mistake as a decision, for the runs without a tool error

    @property
    def variant(self) -> str:
        return "gold" if self.mistake is None else f"{self.mistake}-{self.ending}"


@dataclass(frozen=True)
class Call:
    tool: str
    params: Mapping[str, Any]
    answer: str
    failed: bool

    @property
    def result(self) -> Any:
        try:
            return json.loads(self.answer)
        except ValueError:
            return self.answer


@dataclass
class Run:
    plan: Plan
    calls: list[Call]
    outcome: str  # success | failure
    id: str = ""

    @property
    def task(self) -> Task:
        return self.plan.task

    @property
    def goal(self) -> str:
        return request_of(self.task.instruction)

    def first_error(self) -> int | None:
        return next((i for i, c in enumerate(self.calls) if c.failed), None)


class Catalog(Protocol):
    """What an environment's runs are made of: its gold plans, its mistakes, its policy."""

    state_keys: tuple[str, ...]
    weights: Mapping[str, float]  # how often a mistake is picked among those a task allows (default 1)

    def gold(self, env: Environment, task: Task, data: Mapping[str, Any], rng: random.Random) -> list[Step] | None: ...

    def mistakes(self, env: Environment, task: Task, data: Mapping[str, Any], gold: Sequence[Step],
                 rng: random.Random) -> list[Plan]: ...

    def policy_ok(self, env: Environment, task: Task, calls: Sequence[Call]) -> bool: ...


def execute(env: Environment, plan: Plan, catalog: Catalog, gold_digest: str | None) -> Run:
    data = env.fresh_data()
    calls = []
    for step in plan.steps:
        answer = env.call(data, step.tool, step.params)
        calls.append(Call(step.tool, dict(step.params), answer, is_error(answer)))
    ok = gold_digest is not None and state_digest(data, catalog.state_keys) == gold_digest
    ok = ok and catalog.policy_ok(env, plan.task, calls)
    return Run(plan, calls, "success" if ok else "failure")


def gold_digest(env: Environment, steps: Sequence[Step], catalog: Catalog) -> tuple[str, bool]:
    """The state the gold steps leave, and whether every one of them worked."""
    data = env.fresh_data()
    clean = True
    for step in steps:
        clean = not is_error(env.call(data, step.tool, step.params)) and clean
    return state_digest(data, catalog.state_keys), clean


def task_runs(env: Environment, catalog: Catalog, task: Task, mistakes: int, rng: random.Random,
              gold_runs: int = 1) -> list[Run]:
    """The gold run(s) of a task and up to ``mistakes`` runs with a mistake, each of another kind when
    the task allows it. A task whose gold actions fail on the data is left out (none of its runs)."""
    data = env.fresh_data()
    gold = catalog.gold(env, task, data, rng)
    if not gold:
        return []
    digest, clean = gold_digest(env, gold, catalog)
    if not clean:
        return []
    runs = [execute(env, Plan(task, tuple(gold)), catalog, digest) for _ in range(gold_runs)]
    if runs and runs[0].outcome != "success":
        return []
    options = catalog.mistakes(env, task, data, gold, rng)
    chosen: list[Plan] = []
    while options and len(chosen) < mistakes:
        weights = [catalog.weights.get(p.mistake or "", 1.0) for p in options]
        plan = rng.choices(options, weights)[0]
        chosen.append(plan)
        options = [p for p in options if p.mistake != plan.mistake]
    runs += [execute(env, plan, catalog, digest) for plan in chosen]
    return runs


# --- trajectories in the public API's shape ----------------------------------------------------------


def events(run: Run) -> list[dict[str, Any]]:
    """The run as an agent records it: what the user asked, then every call with its real answer."""
    out: list[dict[str, Any]] = [{"event_id": "e0", "type": "user_input", "content": {"text": run.goal}}]
    for i, c in enumerate(run.calls, start=1):
        out.append({"event_id": f"e{i}", "type": "tool_call", "content": call_content(c)})
    return out


def call_content(c: Call) -> dict[str, Any]:
    if c.failed:
        return {"tool": c.tool, "params": dict(c.params), "status": "error", "error": c.answer}
    return {"tool": c.tool, "params": dict(c.params), "status": "ok", "result": c.result}


def trajectory(run: Run, agent_id: str, tools: Sequence[str], user_id: str | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"trajectory_id": run.id, "agent_id": agent_id, "goal": run.goal, "tools": list(tools)}
    if user_id:
        body["user_id"] = user_id
    return body


def render(run: Run) -> str:
    """A run as plain text (raw retrieval's documents)."""
    lines = [f"Goal: {run.goal}"]
    for c in run.calls:
        params = json.dumps(dict(c.params), sort_keys=True, default=str)
        lines.append(f"Call {c.tool}({params}) -> {'error: ' + c.answer if c.failed else 'ok'}")
    lines.append(f"Outcome: {run.outcome}.")
    return "\n".join(lines)


@dataclass
class Split:
    """Runs by role: ``train`` is recorded and learned from; ``dev`` and ``heldout`` are advised and
    recalled on, never recorded as training."""

    train: list[Run] = field(default_factory=list)
    dev: list[Run] = field(default_factory=list)
    heldout: list[Run] = field(default_factory=list)


def build(env: Environment, catalog: Catalog, tasks: Sequence[Task], mistakes: int, seed: int, prefix: str,
          on_run: Callable[[Run], None] | None = None) -> list[Run]:
    rng = random.Random(seed)
    out: list[Run] = []
    for task in tasks:
        for n, run in enumerate(task_runs(env, catalog, task, mistakes, rng)):
            run.id = f"{prefix}.{task.id}.{n}.{run.plan.variant}"
            out.append(run)
            if on_run:
                on_run(run)
    return out
