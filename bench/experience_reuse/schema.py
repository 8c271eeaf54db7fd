"""The shapes of the dataset: families of tasks with a hidden rule, and the calls that try them.

A family's tasks all share one hidden rule (a precondition, a parameter, an order of operations
or a choice of tool). Every way of attempting a task is an ``Action``: a function from the task's
literal values to the tool calls it makes. The same templates produce the training trajectories
(naive attempt, sometimes a wrong alternative, then the fix), the failing trajectories, and the
simulated agent's runs on the test tasks, so the literal values of a test never leak into training.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, Sequence

KINDS = ("precondition", "parameter", "order", "tool_choice")


class V(dict):
    """The literal values of one task (city, ids, dates...), readable as attributes."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


@dataclass(frozen=True)
class Call:
    tool: str
    params: dict[str, Any]
    ok: bool
    result: Any = None
    error: str | None = None

    def content(self) -> dict[str, Any]:
        out: dict[str, Any] = {"tool": self.tool, "params": self.params, "status": "ok" if self.ok else "error"}
        if self.ok:
            out["result"] = self.result
        else:
            out["error"] = self.error
        return out


def ok(tool: str, params: dict[str, Any], result: Any = "ok") -> Call:
    return Call(tool, params, True, result=result)


def err(tool: str, params: dict[str, Any], error: str) -> Call:
    return Call(tool, params, False, error=error)


Calls = Callable[[V], list[Call]]


@dataclass(frozen=True)
class Action:
    """One way to attempt a task. ``names``: regexes (case-insensitive) that must all match inside
    one advice item for that item to *name* this action. ``calls``: the tool calls it makes."""

    label: str
    calls: Calls
    names: tuple[str, ...] = ()

    def named_in(self, text: str, strict: bool = False) -> bool:
        """Whether an advice item recommends this action: every pattern occurs outside a negation
        ("leave out `force`", "instead of `x`", "never ..."). ``strict`` (used for wrong
        alternatives): a pattern that also occurs inside a negation anywhere in the item does not count."""
        if not self.names:
            return False
        for pattern in self.names:
            found = [_negated(text, m.start()) for m in re.finditer(pattern, text, re.I | re.S)]
            if not found or all(found) or (strict and any(found)):
                return False
        return True


_NEGATION = re.compile(r"leave out|\bnot\b|n't\b|\bnever\b|\bavoid|\bwithout\b|instead of|rather than|\bomit", re.I)


def _negated(text: str, start: int) -> bool:
    """The 40 characters before a match, within its clause, contain a negation cue."""
    before = re.sub(r"\b(e\.g|i\.e)\.", "eg", text[max(0, start - 40) : start], flags=re.I)
    before = re.split(r"[.;:!?](?:\s|$)", before)[-1]
    return bool(_NEGATION.search(before))


@dataclass(frozen=True)
class Run:
    """A training trajectory that breaks the rule, then recovers. ``explore``: index of a wrong
    alternative tried between the naive attempt and the fix (as real agents do)."""

    goal: str
    v: V
    explore: int | None = None


@dataclass(frozen=True)
class Fail:
    """A training trajectory that fails outright: identical retries, or an action the user rejects."""

    goal: str
    v: V
    mode: str  # retry | feedback
    repeats: int = 2
    calls: Calls | None = None  # feedback mode: what the agent did after the naive attempt
    feedback: str = ""


@dataclass(frozen=True)
class Task:
    """A new test task: the user's wording and its literal values."""

    query: str
    v: V


@dataclass(frozen=True)
class Family:
    id: str  # [a-z0-9-]: it becomes part of trajectory ids
    sibling: str
    domain: str
    kind: str  # one of KINDS
    rule: str  # the hidden rule, in words
    task_type: str
    tools: tuple[str, ...]
    naive: Calls  # what an agent does without knowing the rule (fails)
    fix: Action  # what the rule requires (succeeds); fix.names defines "the advice names the fix"
    wrong: tuple[Action, ...]  # plausible alternatives that do not work
    train: tuple[Run, ...]
    tests: tuple[Task, ...]
    fail: Fail | None = None
    pre: Calls | None = None  # context calls made before the attempt (e.g. fetch the payment)
    notes: str = ""

    def all_actions(self) -> dict[str, Action]:
        out = {"fix": self.fix}
        out.update({f"w{i}": a for i, a in enumerate(self.wrong)})
        return out


def validate(families: Sequence[Family]) -> None:
    """Structural checks of the dataset (cheap; run on every start)."""
    ids = {f.id for f in families}
    id_re = re.compile(r"^[a-z0-9][a-z0-9-]*$")
    for f in families:
        assert id_re.match(f.id), f.id
        assert f.sibling in ids and f.sibling != f.id, f.id
        sib = next(s for s in families if s.id == f.sibling)
        assert sib.sibling == f.id, f"{f.id} <-> {f.sibling} is not symmetric"
        assert f.kind in KINDS, f.id
        assert len(f.train) >= 3 and len(f.tests) >= 5 and len(f.wrong) >= 3, f.id
        assert f.fix.names, f.id
        for run in [*f.train, *f.tests, *([f.fail] if f.fail else [])]:
            v = run.v
            naive = f.naive(v)
            assert naive and not naive[-1].ok, f"{f.id}: the naive attempt must fail"
            fix = f.fix.calls(v)
            assert fix and fix[-1].ok, f"{f.id}: the fix must succeed"
            for w in f.wrong:
                calls = w.calls(v)
                assert calls and not calls[-1].ok, f"{f.id}: wrong alternative {w.label!r} must fail"
            for c in [*naive, *fix, *(f.pre(v) if f.pre else [])]:
                assert c.tool in f.tools, f"{f.id}: {c.tool} is not among the family's tools"
