"""Trajectories as an agent records them, and the simulated agent that reads (or lacks) the advice.

The simulated agent, for one test task:

* without memory it first does the naive thing (which breaks the hidden rule), then explores
  1-3 wrong alternatives (which ones and in which order: a RNG seeded per task), then finds the fix;
* with memory it reads the advice block item by item, most relevant first. An item that names the
  fix makes it apply the fix at once. An item that names one of its wrong alternatives (often the
  sibling family's fix) makes it try that first, which costs steps. Items that name nothing it can
  act on are ignored. When the advice is used up it falls back to its no-memory behaviour, without
  repeating what it already tried.

Steps are tool calls until the task succeeds, including context calls made before the attempt.
"""
from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass, field
from typing import Any, Sequence

from .schema import Call, Family, Fail, Run, V

_ITEM = re.compile(r"^\s*(\d+)[.)]\s+(.*)$")


def advice_items(advice: str) -> list[str]:
    """The numbered items of an advice block (continuation lines are kept with their item)."""
    items: list[str] = []
    for line in (advice or "").splitlines():
        m = _ITEM.match(line)
        if m:
            items.append(m.group(2).strip())
        elif items and line.strip() and not line.strip().startswith("<"):
            items[-1] += " " + line.strip()
    if not items and (advice or "").strip():
        items = [advice.strip()]
    return items


def action_calls(fam: Family, key: str, v: V) -> list[Call]:
    if key == "naive":
        return fam.naive(v)
    if key == "fix":
        return fam.fix.calls(v)
    return fam.wrong[int(key[1:])].calls(v)


def exploration_plan(fam: Family, task_key: str, seed: int) -> list[str]:
    """What the agent does without memory: the naive attempt, 1-3 wrong alternatives, the fix."""
    rng = random.Random(f"{seed}|{fam.id}|{task_key}")
    k = rng.randint(1, min(3, len(fam.wrong)))
    wrong = rng.sample(range(len(fam.wrong)), k)
    return ["naive", *(f"w{i}" for i in wrong), "fix"]


@dataclass
class SimRun:
    plan: list[str]  # the order in which actions are tried, up to and including the fix
    steps: int
    advised: list[tuple[str, int]] = field(default_factory=list)  # (action, advice item index) taken from the advice
    fix_first: bool = False  # the very first action was the fix


def steps_of(fam: Family, v: V, plan: Sequence[str]) -> int:
    n = len(fam.pre(v)) if fam.pre else 0
    for key in plan:
        n += len(action_calls(fam, key, v))
        if key == "fix":
            break
    return n


def run_without_memory(fam: Family, v: V, task_key: str, seed: int) -> SimRun:
    plan = exploration_plan(fam, task_key, seed)
    return SimRun(plan, steps_of(fam, v, plan))


def run_with_memory(fam: Family, v: V, task_key: str, seed: int, items: Sequence[str]) -> SimRun:
    advised: list[tuple[str, int]] = []
    seen: set[str] = set()
    for idx, item in enumerate(items):
        if fam.fix.named_in(item):
            advised.append(("fix", idx))
            break
        for j, alt in enumerate(fam.wrong):
            key = f"w{j}"
            if key not in seen and alt.named_in(item, strict=True):
                seen.add(key)
                advised.append((key, idx))
    keys = [k for k, _ in advised]
    plan = keys + [k for k in exploration_plan(fam, task_key, seed) if k not in keys]
    plan = plan[: plan.index("fix") + 1]
    return SimRun(plan, steps_of(fam, v, plan), advised, fix_first=plan[0] == "fix")


# --- trajectories ------------------------------------------------------------------------------------


def _events_for_calls(calls: Sequence[Call], start: int) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    n = start
    for i, call in enumerate(calls):
        events.append({"event_id": f"e{n}", "type": "tool_call", "content": call.content()})
        n += 1
        if not call.ok and i + 1 < len(calls):
            events.append({"event_id": f"e{n}", "type": "llm_reasoning",
                           "content": {"text": f"`{call.tool}` failed ({call.error}). Trying a different approach."}})
            n += 1
    return events


def trajectory_events(goal: str, calls: Sequence[Call], feedback: str | None = None) -> list[dict[str, Any]]:
    events = [{"event_id": "e0", "type": "user_input", "content": {"text": goal}}]
    events += _events_for_calls(calls, 1)
    if feedback:
        events.append({"event_id": f"e{len(events)}", "type": "feedback", "content": {"text": feedback, "sentiment": "negative"}})
    return events


def training_calls(fam: Family, run: Run) -> list[Call]:
    v = run.v
    calls = (fam.pre(v) if fam.pre else []) + fam.naive(v)
    if run.explore is not None:
        calls += fam.wrong[run.explore].calls(v)
    return calls + fam.fix.calls(v)


def failing_calls(fam: Family, fail: Fail) -> list[Call]:
    v = fail.v
    calls = list(fam.pre(v) if fam.pre else [])
    if fail.mode == "retry":
        calls += fam.naive(v) * fail.repeats
    else:
        calls += fam.naive(v) + (fail.calls(v) if fail.calls else [])
    return calls


def simulated_calls(fam: Family, v: V, plan: Sequence[str]) -> list[Call]:
    calls = list(fam.pre(v) if fam.pre else [])
    for key in plan:
        calls += action_calls(fam, key, v)
    return calls


def render_trajectory(goal: str, task_type: str, tools: Sequence[str], events: Sequence[dict[str, Any]], outcome: str) -> str:
    """Plain text of a whole trajectory, for the raw-trajectory baseline."""
    lines = [f"Goal: {goal}", f"Task type: {task_type}. Tools: {', '.join(tools)}."]
    for e in events:
        c = e["content"]
        if e["type"] == "user_input":
            lines.append(f"User: {c['text']}")
        elif e["type"] == "llm_reasoning":
            lines.append(f"Thought: {c['text']}")
        elif e["type"] == "feedback":
            lines.append(f"User feedback ({c['sentiment']}): {c['text']}")
        elif e["type"] == "tool_call":
            params = json.dumps(c.get("params", {}), sort_keys=True, default=str)
            if c["status"] == "ok":
                lines.append(f"Call {c['tool']}({params}) -> ok: {json.dumps(c.get('result'), default=str)}")
            else:
                lines.append(f"Call {c['tool']}({params}) -> error: {c.get('error')}")
    lines.append(f"Outcome: {outcome}.")
    return "\n".join(lines)
