"""Advice at the moment of action: what past runs say about one tool call, before it is made.

A lesson about a tool is read as a *call rule*: the tool it is about, and checks a call can be held
against (an argument that must be there, one to leave out, the shape a value must have or must not
have, a tool to call first, a call not to retry, a tool to use instead). The rule is read from the
lesson's own words: those the reviewer writes ("When you call `charge`, set `amount` to a whole
number, not a decimal number") and the usual ways a person writes one ("`get_weather` requires
`city`", "`amount` is in integer cents"). No model is involved, so this runs in microseconds.

A call is then matched on its structured situation first (the tool, the checks it breaks, the
error class of this tool's recent failures) and on text only to break ties (``advise_score``).
A lesson whose every check the call passes does not apply: the agent already does it right.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Mapping, Sequence

from .generalize import describe_value
from .lesson import error_class
from .models import Event, Experience

MAX_RECENT_EVENTS = 20

# check kinds
MISSING = "missing"  # the argument must be given
FORBIDDEN = "forbidden"  # the argument must be left out
SHAPE = "shape"  # the value must have one shape, or must not have another
NESTED = "nested"  # a structured argument must hold these keys
PREREQUISITE = "prerequisite"  # another tool must be called first
RETRY = "retry"  # the same call must not be retried after it failed
AVOID = "avoid"  # another tool must be used instead
OBJECTED = "objected"  # the user objected to this tool here: nothing to check, worth knowing
OTHER = "other"  # the lesson names the argument, but nothing here can check how


@dataclass(frozen=True)
class Check:
    kind: str
    param: str | None = None
    expected: str | None = None  # the shape the value must have, the tool to call first or instead
    avoided: str | None = None  # the shape the value must not have
    keys: tuple[str, ...] = ()  # for NESTED


@dataclass(frozen=True)
class CallRule:
    tool: str
    checks: tuple[Check, ...] = ()
    error_class: str | None = None

    @property
    def params(self) -> tuple[str, ...]:
        """The arguments the lesson names."""
        return tuple(dict.fromkeys(c.param for c in self.checks if c.param))


@dataclass(frozen=True)
class Situation:
    """A tool call about to be made, and what the agent did just before it (oldest first)."""

    tool: str
    params: Mapping[str, Any] = field(default_factory=dict)
    goal: str = ""
    recent: Sequence[Event] = ()


@dataclass(frozen=True)
class Finding:
    """How a lesson's rule meets a call. ``applies``: the lesson is worth showing for this call;
    ``violations``: what the call does that the lesson warns against (a warning when any)."""

    applies: bool
    structured: float  # in [0, 1]: the tool, the broken checks, the error class of recent failures
    violations: tuple[str, ...] = ()
    error_match: bool = False


# --- the shape of a value -----------------------------------------------------------------------

_EXAMPLE = re.compile(r" \(e\.g\. [^)]*\)")


def value_shape(value: Any) -> str:
    """The reviewer's words for a value's shape without its example ("a decimal number"), so a
    value is compared with a lesson's shapes in the lesson's own vocabulary."""
    return _EXAMPLE.sub("", describe_value(value))


def is_pattern(shape: str) -> bool:
    """A shape that stands for many values; "a value like `x`" stands for one."""
    return not shape.startswith("a value like")


# --- reading a rule from a lesson ---------------------------------------------------------------

_T = r"`([^`]{1,128})`"
_ORDER = re.compile(rf"\bCall {_T} before {_T}(?: and pass what it returns as ((?:{_T}(?:, )?)+))?")
_SWAP = re.compile(rf"\bUse {_T} instead of {_T}")
_PARAM = re.compile(rf"\bWhen you call {_T}, (.+?): otherwise it fails", re.S)
_RETRY = re.compile(rf"\bDo not retry {_T} with the same parameters")
_OBJECTED = re.compile(rf"\bThe user objected when you used {_T}")
_CALLING = re.compile(rf"(?:Calling {_T} failed|{_T} kept failing|{_T} fails with)")

_LEAVE_OUT = re.compile(rf"^leave out {_T}$")
_SET_WITH = re.compile(rf"^set {_T} with ((?:{_T}(?:, )?)+)$")
_SET_TO_NOT = re.compile(rf"^set {_T} to (.+), not (.+)$")
_SET_TO = re.compile(rf"^set {_T} to (.+)$")
_INCLUDE_IN = re.compile(rf"^include ((?:{_T}(?:, )?)+) in {_T}$")

# how people write a required argument: "`city` is required", "requires `city`", "without `city`"
_REQUIRED_AFTER = re.compile(rf"{_T} (?:is|are) (?:required|mandatory|needed)|{_T} must be (?:set|given|provided|passed|included)")
_REQUIRED_BEFORE = re.compile(rf"\b(?:requires?|needs?|include|always pass|pass|without|missing|forgot|forgetting)\s+(?:the\s+|an?\s+)?(?:argument\s+|parameter\s+)?{_T}", re.I)
# how people write a value's shape, near the argument's name in the same sentence
_SHAPE_WORDS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\b(?:integer|whole number|whole-number|in cents|integer cents|cents)\b", re.I), "a whole number"),
    (re.compile(r"\b(?:ISO date|YYYY-MM-DD|ISO-8601 date)\b", re.I), "an ISO date YYYY-MM-DD"),
    (re.compile(r"\bemail address\b", re.I), "an email address"),
)
_SENTENCE = re.compile(r"(?<=[.!?;])\s+")


def _ticked(text: str) -> list[str]:
    return re.findall(_T, text)


def _clauses(change: str) -> list[str]:
    return [c.strip() for c in change.split("; ") if c.strip()]


def _param_checks(change: str) -> list[Check]:
    """The reviewer's description of a parameter change (``review.describe_param_change``)."""
    checks: list[Check] = []
    for clause in _clauses(change):
        if m := _LEAVE_OUT.match(clause):
            checks.append(Check(FORBIDDEN, m[1]))
        elif m := _SET_WITH.match(clause):
            checks += [Check(MISSING, m[1]), Check(NESTED, m[1], keys=tuple(_ticked(m[2])))]
        elif m := _SET_TO_NOT.match(clause):
            checks.append(Check(SHAPE, m[1], expected=_EXAMPLE.sub("", m[2]), avoided=_EXAMPLE.sub("", m[3])))
        elif m := _SET_TO.match(clause):
            shape = _EXAMPLE.sub("", m[2])
            checks.append(Check(MISSING, m[1]))
            if is_pattern(shape):
                checks.append(Check(SHAPE, m[1], expected=shape))
        elif m := _INCLUDE_IN.match(clause):
            checks.append(Check(NESTED, _ticked(clause)[-1], keys=tuple(_ticked(m[1]))))
        else:
            checks += [Check(OTHER, p) for p in _ticked(clause)[-1:]]
    return checks


def _free_text_checks(text: str, tool: str, tools: set[str]) -> list[Check]:
    """Checks from a lesson written by a person or a model: required arguments and value shapes."""
    checks: list[Check] = []
    not_params = tools | {tool}
    for sentence in _SENTENCE.split(text):
        for m in _REQUIRED_AFTER.finditer(sentence):
            name = m[1] or m[2]
            if name not in not_params:
                checks.append(Check(MISSING, name))
        for m in _REQUIRED_BEFORE.finditer(sentence):
            if m[1] not in not_params:
                checks.append(Check(MISSING, m[1]))
        named = [p for p in _ticked(sentence) if p not in not_params]
        for pattern, shape in _SHAPE_WORDS:
            if named and pattern.search(sentence):
                checks.append(Check(SHAPE, named[0], expected=shape))
    return checks


def _dedup(checks: list[Check]) -> tuple[Check, ...]:
    return tuple(dict.fromkeys(checks))


def call_rule(exp: Experience) -> CallRule | None:
    """The call rule a lesson states, or None when it is about no tool in particular."""
    return _rule(exp.advice, exp.lesson, exp.situation, tuple(exp.tools), exp.error_class)


@lru_cache(maxsize=65536)
def _rule(advice: str, lesson: str, situation: str, tools: tuple[str, ...], error_class: str | None) -> CallRule | None:
    if m := _ORDER.search(advice):
        fed = [Check(MISSING, p) for p in _ticked(m[3] or "")]
        return CallRule(m[2], _dedup([Check(PREREQUISITE, expected=m[1]), *fed]), error_class)
    if m := _SWAP.search(advice):
        return CallRule(m[2], (Check(AVOID, expected=m[1]),), error_class)
    if m := _PARAM.search(advice):
        return CallRule(m[1], _dedup(_param_checks(m[2])), error_class)
    if m := _RETRY.search(advice):
        return CallRule(m[1], (Check(RETRY),), error_class)
    if m := _OBJECTED.search(advice):
        return CallRule(m[1], (Check(OBJECTED),), error_class)
    tool = _main_tool(advice, lesson, situation, tools)
    if tool is None:
        return None
    known = set(tools)
    checks = _free_text_checks(f"{advice} {lesson}", tool, known)
    if not checks:  # named arguments nothing here can check still say what the lesson is about
        checks = [Check(OTHER, p) for p in _ticked(f"{advice} {lesson}") if p not in known | {tool}][:3]
    return CallRule(tool, _dedup(checks), error_class)


def _main_tool(advice: str, lesson: str, situation: str, tools: tuple[str, ...]) -> str | None:
    if m := _CALLING.search(f"{situation} {lesson}"):
        return next(g for g in m.groups() if g)
    if len(tools) == 1:
        return tools[0]
    named = [t for t in _ticked(f"{advice} {lesson}") if t in tools]
    return named[0] if named else None


# --- holding a call against a rule --------------------------------------------------------------


def _error_class(event: Event) -> str | None:
    return error_class(event) if event.failed else None


def _same_params(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    return json.dumps(a, sort_keys=True, default=str) == json.dumps(b, sort_keys=True, default=str)


def _check(check: Check, rule: CallRule, sit: Situation) -> str | None | bool:
    """A message when the call breaks the check, False when it passes, None when nothing here
    can tell."""
    tool, params = rule.tool, sit.params
    p = check.param
    if check.kind == MISSING:
        return False if p in params else f"`{p}` is missing: `{tool}` failed without it before"
    if check.kind == FORBIDDEN:
        return f"`{p}` should be left out of `{tool}`" if p in params else False
    if check.kind == SHAPE:
        if p not in params:
            return None
        shape = value_shape(params[p])
        if check.avoided and shape == check.avoided:
            return f"`{p}` is {shape} here, the shape that made `{tool}` fail" + (
                f" (it wants {check.expected})" if check.expected else "")
        if check.expected and is_pattern(check.expected) and shape != check.expected:
            return f"`{p}` is {shape} here; `{tool}` wants {check.expected}"
        return False
    if check.kind == NESTED:
        value = params.get(p)
        if not isinstance(value, Mapping):
            return None
        missing = [k for k in check.keys if k not in value]
        return f"`{p}` lacks {', '.join(f'`{k}`' for k in missing)}" if missing else False
    if check.kind == PREREQUISITE:
        if not sit.recent:
            return None
        done = any(e.tool == check.expected and e.succeeded for e in sit.recent)
        return False if done else f"`{check.expected}` has not been called before `{tool}`"
    if check.kind == RETRY:
        failed = [e for e in sit.recent if e.tool == tool and e.failed]
        if any(_same_params(e.content.get("params") or {}, params) for e in failed):
            return f"this exact call of `{tool}` failed just now; retrying it unchanged does not help"
        return None if not failed else False
    if check.kind == AVOID:
        return f"`{tool}` failed for this kind of task before; `{check.expected}` worked instead"
    return None


def evaluate(rule: CallRule, sit: Situation) -> Finding:
    """How the lesson's rule meets the call: only a lesson about this very tool can apply."""
    if rule.tool.lower() != sit.tool.lower():
        return Finding(False, 0.0)
    results = [_check(c, rule, sit) for c in rule.checks]
    violations = tuple(r for r in results if isinstance(r, str))
    decided = [r for r in results if r is not None]
    recent_classes = {_error_class(e) for e in sit.recent if e.tool == rule.tool and e.failed}
    error_match = bool(rule.error_class) and rule.error_class in recent_classes
    # a lesson whose checks the call all passes is already followed; one that checks nothing
    # here (a preference, an objection) is still about this tool
    applies = bool(violations) or not decided
    structured = 0.5 + (0.3 if violations else 0.0) + min(0.1, 0.05 * max(0, len(violations) - 1)) + (0.1 if error_match else 0.0)
    return Finding(applies, round(min(1.0, structured), 4), violations, error_match)


def advise_score(finding: Finding, text: float, utility: float, freshness: float) -> float:
    """Structure first: a broken check (0.3 of structure, 0.21 of the score) outweighs any text
    similarity (0.15) and any difference in utility (0.1) or freshness (0.05)."""
    return round(0.7 * finding.structured + 0.15 * text + 0.1 * utility + 0.05 * freshness, 4)


def warning_message(rule: CallRule, finding: Finding) -> str:
    cls = f" with {rule.error_class}" if rule.error_class else ""
    return f"`{rule.tool}` failed{cls} in past runs: " + "; ".join(finding.violations) + "."


# --- judging whether a run followed a lesson (credit) -------------------------------------------


def followed(rule: CallRule | None, exp: Experience, later: Sequence[Event]) -> bool:
    """Whether the tool calls after a lesson was served follow it.

    The first call of the rule's tool after the lesson is what the lesson was about: it follows
    the lesson when it breaks none of its checks (the tool to call first was called before it);
    "use X instead" is followed when X was called; "do not retry" when no failed call was
    repeated unchanged; an objection when the tool was not used again. A lesson without a rule is
    followed when every tool it names was called.
    """
    calls = [e for e in later if e.is_tool_call]
    if rule is None:
        return bool(exp.tools) and all(any(e.tool == t for e in calls) for t in exp.tools)
    kinds = {c.kind for c in rule.checks}
    if AVOID in kinds:
        return any(e.tool == c.expected for c in rule.checks if c.kind == AVOID for e in calls)
    if OBJECTED in kinds:
        return not any(e.tool == rule.tool for e in calls)
    if RETRY in kinds:
        failed: list[Event] = []
        for e in calls:
            if e.tool != rule.tool:
                continue
            if any(_same_params(f.content.get("params") or {}, e.content.get("params") or {}) for f in failed):
                return False
            if e.failed:
                failed.append(e)
        return True
    first = next((i for i, e in enumerate(calls) if e.tool == rule.tool), None)
    if first is None:
        return False
    call = calls[first]
    sit = Situation(rule.tool, call.content.get("params") or {}, recent=calls[:first])
    checks = [c for c in rule.checks if c.kind != OTHER]
    if not checks:  # the arguments it names appear in the call
        return all(p in sit.params for p in rule.params)
    if any(c.kind == PREREQUISITE for c in checks) and not sit.recent:
        return False  # nothing was called before it, so the tool to call first was not
    return all(not isinstance(_check(c, rule, sit), str) for c in checks)
