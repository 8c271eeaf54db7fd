"""Contrast across runs: where a failed run left the way that successful runs of similar tasks took.

Most runs that fail without any tool error fail at a decision no tool checks: a lookup skipped
before a change, an argument taken from the wrong place, one tool used where another was meant.
The only evidence is beside the run: successful runs of look-alike tasks. Each run is reduced to its
calls that worked, in order (a tool that ends the task or records a thought is not a decision, and a
call that failed was not the way), each call's arguments reduced to their *kind*: as the request
states it, taken from what an earlier call returned, or else the value's shape (a kind word, such
as a reason, stays as it is: it names a kind of task, not an instance). Literal values never leave
the run they came from.

The first divergence of the failed run from one successful run, over their calls with consecutive
calls of one tool taken as one step (look-alike tasks read one order or two):

* ``skipped``: the successful run called a tool the failed run never called, before the step where
  they meet again (a lookup before the change);
* ``tool``: the failed run called a tool in the place where the successful run called another, and
  neither run called the other's;
* ``extra``: the failed run called a tool the successful run never called, before the step where
  they meet again;
* ``argument``: the same steps, and an argument of a different kind in one call (a shape is the
  marks a value holds, ``#`` or ``@`` or ``$``, not its letters and digits: other users' emails
  and orders are the same kind).

A divergence becomes a lesson only when at least ``MIN_SUPPORT`` successful runs show it and no
successful run contradicts it (did what the failed run did there: called the tool without any of
the lookups before it, used the same tool, made the same extra call, passed an argument of the same
kind). Deterministic, no I/O: the service gives the runs.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

from .advise import scalars
from .call_rule import Argument, ArgumentKind, CallRule, RuleKind, rule_words
from .escape import never_a_fix
from .generalize import is_kind_word
from .inert import code
from .lesson import LessonDraft, Raw, Wording, drafted, fingerprint, goal_wording, trajectory_literals
from .models import Event, Trajectory

MIN_SUPPORT = 2  # successful runs that show the same divergence before it is a lesson
MAX_STEPS = 40  # calls of a run kept for the comparison
MAX_NAMED = 5  # tools a lesson names after the one it is about
REQUEST = "as the request states it"
RESULT = "taken from what an earlier call returned"
ABSENT = "left out"
_MIN_QUOTED = 3  # shorter values are found in any request by chance


@dataclass(frozen=True)
class Step:
    """One call that worked: its tool and the kind of each argument (never the value itself)."""

    tool: str
    kinds: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class RunCalls:
    """A run as the comparison sees it: its id, its goal and its calls that worked."""

    run_id: str
    goal: str
    steps: tuple[Step, ...]

    def as_record(self) -> dict[str, Any]:
        return {"id": self.run_id, "goal": self.goal, "steps": [[s.tool, dict(s.kinds)] for s in self.steps]}

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> RunCalls | None:
        try:
            steps = tuple(Step(str(t), {str(k): str(v) for k, v in dict(kinds).items()}) for t, kinds in record["steps"])
            return cls(str(record["id"]), str(record.get("goal") or ""), steps)
        except (KeyError, TypeError, ValueError):
            return None

    @property
    def tools(self) -> tuple[str, ...]:
        return tuple(s.tool for s in self.steps)


def _shape(value: Any) -> str:
    """A value's shape, without the value: its marks (``#W1234`` -> ``#a``, ``$12.5`` -> ``$a``)."""
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, (list, tuple)):
        inner = sorted({_shape(v) for v in value})
        return "a list of " + (" or ".join(inner) if inner else "nothing")
    if isinstance(value, Mapping):
        return "a structure with " + ", ".join(sorted(str(k) for k in value))
    text = str(value).strip()
    if is_kind_word(text):
        return code(text)
    shape = re.sub(r"[a-z0-9]+", "a", re.sub(r"[_.\-]", "", text.lower()))  # the marks it holds, not its letters
    return f"a value shaped {code(shape[:24])}"


def argument_kind(value: Any, goal: str, returned: Iterable[str]) -> str:
    """Where an argument's value came from, in words a lesson can hold: the request's own words,
    what an earlier call returned, or else its shape."""
    values = [v for v in scalars(value) if v.strip()]
    if not values:
        return _shape(value)
    lowered = goal.lower()
    if all(len(v) >= _MIN_QUOTED and v.lower() in lowered for v in values):
        return REQUEST
    seen = set(returned)
    if all(v.lower() in seen for v in values):
        return RESULT
    return _shape(value)


def run_calls(run_id: str, goal: str, events: Sequence[Event]) -> RunCalls:
    """The calls of a run that worked, in order, with their arguments' kinds."""
    returned: set[str] = set()
    steps: list[Step] = []
    for e in sorted(events, key=lambda e: e.seq):
        if not e.is_tool_call or not e.tool or never_a_fix(e.tool):
            continue
        if e.succeeded:
            params = e.content.get("params")
            params = params if isinstance(params, dict) else {}
            steps.append(Step(e.tool, {str(k): argument_kind(v, goal, returned) for k, v in sorted(params.items())}))
            returned.update(v.lower() for v in scalars(e.content.get("result")))
    return RunCalls(run_id, goal, tuple(steps[:MAX_STEPS]))


def worth_contrasting(outcome: str | None, events: Sequence[Event]) -> bool:
    """A failed run that shows no tool error: nothing in it says where it went wrong (a run with
    errors has the lessons of its errors)."""
    calls = [e for e in events if e.is_tool_call]
    return outcome == "failure" and bool(calls) and not any(e.failed for e in calls)


# --- one divergence --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Divergence:
    """The first decision where a failed run left a successful run's way.

    ``tool``: the tool of the decision (the one skipped, the one to use, the extra one, the one
    whose argument differs); ``other``: the tool used in its place (``tool`` kind); ``before``: the
    failed run's tools that the successful run called only after the decision (``skipped``,
    ``extra``); ``param``, ``worked``, ``failed``: the argument and its kinds (``argument``)."""

    kind: str  # skipped | tool | extra | argument
    tool: str
    other: str | None = None
    before: tuple[str, ...] = ()
    param: str | None = None
    worked: str | None = None
    failed: str | None = None

    def key(self) -> tuple[Any, ...]:
        """What two successful runs must agree on to support the same lesson."""
        if self.kind == "skipped":
            return (self.kind, self.before[-1] if self.before else None)
        if self.kind == "argument":
            return (self.kind, self.tool, self.param, self.worked)
        return (self.kind, self.tool, self.other)


def _groups(run: RunCalls) -> list[list[Step]]:
    """Consecutive calls of one tool as one step: look-alike tasks read one order or two."""
    out: list[list[Step]] = []
    for s in run.steps:
        if out and out[-1][0].tool == s.tool:
            out[-1].append(s)
        else:
            out.append([s])
    return out


def _argument(f: list[list[Step]], s: list[list[Step]]) -> Divergence | None:
    for fg, sg in zip(f, s):
        for fs, ss in zip(fg, sg):
            for p in sorted(set(fs.kinds) | set(ss.kinds)):
                fk, sk = fs.kinds.get(p, ABSENT), ss.kinds.get(p, ABSENT)
                if fk != sk:
                    return Divergence("argument", fs.tool, param=p, worked=sk, failed=fk)
    return None


def first_divergence(failed: RunCalls, worked: RunCalls) -> Divergence | None:
    """Where ``failed`` first left the way ``worked`` took (see the module's docstring); None when
    they do not differ, or differ only in the order of the same calls."""
    fg, sg = _groups(failed), _groups(worked)
    f, s = [g[0].tool for g in fg], [g[0].tool for g in sg]
    k = next((i for i, (a, b) in enumerate(zip(f, s)) if a != b), None)
    if k is None:
        if len(f) == len(s):
            return _argument(fg, sg)
        if len(s) > len(f):  # the failed run stopped before a step the successful run made
            return Divergence("skipped", s[len(f)])
        return Divergence("extra", f[len(s)])
    a, b = f[k], s[k]
    if b not in f[k:] and a in s[k + 1:]:
        later = tuple(dict.fromkeys(t for t in f[k:] if t in s[k + 1:]))
        return Divergence("skipped", b, before=later)
    if a not in s and b not in f:
        return Divergence("tool", b, other=a)
    if a not in s and b in f[k + 1:]:
        return Divergence("extra", a, before=(b,))
    return None


# --- across runs -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Contrast:
    """A divergence that successful runs support and none contradicts."""

    divergence: Divergence
    alternatives: tuple[str, ...]  # ``skipped``: the tools the supporting runs called at that point
    supporting: tuple[str, ...]  # the ids of the successful runs that show it
    compared: int  # successful runs compared


def _calls_before(run: RunCalls, tool: str, firsts: Sequence[str]) -> bool | None:
    """Whether the run called one of ``firsts`` before its first call of ``tool``; None: it never
    called ``tool``."""
    tools = run.tools
    if tool not in tools:
        return None
    return any(t in firsts for t in tools[: tools.index(tool)])


def contradicts(run: RunCalls, failed: RunCalls, c: Contrast) -> bool:
    """A successful run that did what the failed run did at the divergence."""
    d = c.divergence
    if d.kind == "skipped":
        if not d.before:
            return not any(t in run.tools for t in c.alternatives)
        return _calls_before(run, d.before[-1], c.alternatives) is False
    if d.kind == "tool":
        return d.other in run.tools
    if d.kind == "extra":
        return d.tool in run.tools
    return any(s.tool == d.tool and s.kinds.get(d.param or "", ABSENT) == d.failed for s in run.steps)


def contrast_across_runs(failed: RunCalls, successes: Sequence[RunCalls], min_support: int = MIN_SUPPORT,
                         known: Sequence[RunCalls] = ()) -> Contrast | None:
    """The first divergence of ``failed`` that at least ``min_support`` of ``successes`` (runs of
    similar tasks) show and none of them contradicts; the best supported when several do; None
    otherwise. ``known``: every successful run of the scope, similar or not: what is said of a
    tool (a call to make before it, an argument's kind, a call not to make) holds of every task,
    so any of them that did what the failed run did contradicts it; which tool a task takes is the
    similar tasks' alone to say."""
    others = [s for s in successes if s.run_id != failed.run_id and s.steps]
    anyone = [s for s in known if s.run_id != failed.run_id and s.steps]
    by_key: dict[tuple[Any, ...], list[tuple[RunCalls, Divergence]]] = {}
    for s in others:
        d = first_divergence(failed, s)
        if d is not None:
            by_key.setdefault(d.key(), []).append((s, d))
    ranked = sorted(by_key.values(), key=lambda found: -len(found))
    for found in ranked:
        if len(found) < min_support:
            break
        first = found[0][1]
        alternatives = tuple(dict.fromkeys(d.tool for _, d in found)) if first.kind == "skipped" else ()
        c = Contrast(Divergence(first.kind, first.tool, first.other, first.before, first.param, first.worked, first.failed),
                     alternatives, tuple(s.run_id for s, _ in found), len(others))
        judges = others if first.kind == "tool" else [*others, *anyone]
        if not any(contradicts(s, failed, c) for s in judges):
            return c
    return None


# --- the lesson ------------------------------------------------------------------------------------


def _listed(tools: Sequence[str]) -> str:
    names = [code(t) for t in tools]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def contrast_lesson(traj: Trajectory, events: Sequence[Event], c: Contrast) -> LessonDraft:
    """The lesson a contrast teaches, in the failed run's task (generalized like every lesson)."""
    d, n = c.divergence, len(c.supporting)
    values = trajectory_literals(events, traj.goal)
    task: Wording = ("Task: ", Raw(traj.goal, strip=".?!"), ".")
    worked = f"{n} successful runs of look-alike tasks"
    failed = "The run failed without any tool error"
    rule: CallRule | None
    if d.kind == "skipped":
        firsts = c.alternatives or (d.tool,)
        either = " or ".join(code(t) for t in firsts)
        later = d.before[:MAX_NAMED]
        if later:
            rule = CallRule(RuleKind.CALL_FIRST, later[-1], other_tool=firsts[0], alternatives=tuple(firsts[1:]))
            where = f"before {_listed(later)}"
            situation = f" The run called {_listed(later)} without calling {either} first."
            also = f", and before {_listed(later[:-1])}" if len(later) > 1 else ""
            advice = f"{rule_words(rule)}{also}: {worked} did; {failed.lower()}."
        else:
            rule = None
            where = "to finish the task"
            situation = f" The run stopped without calling {either}."
            advice = f"Call {either} to finish this kind of task: {worked} did; {failed.lower()}."
        tools = tuple(dict.fromkeys([*(later[-1:]), *firsts, *later[:-1]]))
        lesson = f"In this kind of task {either} comes {where}: {worked} called it, a run that skipped it failed."
        ident: tuple[str, ...] = ("skipped", *sorted(firsts), *(later[-1:]))
    elif d.kind == "tool":
        rule = CallRule(RuleKind.USE_INSTEAD, d.other or "?", other_tool=d.tool)
        situation = f" The run called {code(d.other or '?')} where successful runs called {code(d.tool)}."
        lesson = f"This kind of task takes {code(d.tool)}, not {code(d.other or '?')}: {worked} called it."
        advice = f"{rule_words(rule)} kind of task: {worked} called {code(d.tool)}; {failed.lower()}."
        tools = (d.tool, d.other or "?")
        ident = ("tool", d.tool, d.other or "?")
    elif d.kind == "extra":
        rule = None
        then = f" before {_listed(d.before)}" if d.before else ""
        situation = f" The run called {code(d.tool)}{then}; successful runs did not call it."
        lesson = f"This kind of task does not take {code(d.tool)}: {worked} did without it."
        advice = f"Do not call {code(d.tool)} in this kind of task{then}: {worked} did without it; {failed.lower()}."
        tools = (d.tool, *d.before[:MAX_NAMED])
        ident = ("extra", d.tool, *d.before[:1])
    else:
        p = code(d.param or "?")
        words = f"set {p} {d.worked}" if d.worked in (REQUEST, RESULT) else f"set {p} to {d.worked}"
        rule = CallRule(RuleKind.ARGUMENTS, d.tool, (Argument(ArgumentKind.NAMED, d.param or "?", words=words),))
        situation = f" The run called {code(d.tool)} and set {p} {_kind_phrase(d.failed)}; successful runs set it {_kind_phrase(d.worked)}."
        lesson = f"In this kind of task {code(d.tool)} needs {p} {_kind_phrase(d.worked)}, not {_kind_phrase(d.failed)}."
        advice = f"{rule_words(rule)}, not {_kind_phrase(d.failed)}: {worked} did; {failed.lower()}."
        tools = (d.tool,)
        ident = ("argument", d.tool, d.param or "?", d.worked or "")
    wording = {
        "situation": (*task, situation),
        "action": (f"Left the way {n} successful runs took at one decision.",),
        "result": (f"{failed}; {n} runs that worked differed there and none did the same.",),
        "lesson": (lesson,),
        "advice": (advice,),
        "example": goal_wording(traj, events),
    }
    return drafted(wording, values, traj.tenant_id, tools=tuple(t for t in tools if t), kind="contrast", rule=rule,
                   fingerprint=fingerprint("across-runs", *ident))


def _kind_phrase(kind: str | None) -> str:
    if kind in (REQUEST, RESULT, ABSENT):
        return kind or ""
    return f"to {kind}" if kind and kind.startswith("`") else f"as {kind}"
