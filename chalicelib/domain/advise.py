"""Advice at the moment of action: what past runs say about one tool call, before it is made.

A lesson about a tool holds a *call rule* (``domain.call_rule``): the tool it is about, and what a
call must do (give an argument, leave one out, give a value of a shape, call another tool first,
not retry a failed call, use another tool instead). The reviewer that found the lesson stated it;
a lesson written by a person or a model had it read from its words when it was stored
(``domain.rule_reading``). Nothing here reads words, and no model is involved, so this runs in
microseconds.

A call is then matched on its structured situation first (the tool, the checks it breaks, the
error class of this tool's recent failures) and on text only to break ties (``advise_score``).
A lesson whose every check the call passes does not apply: the agent already does it right. A
warning is given only when the call breaks a check, that is when it meets the condition under which
the lesson's failure happened (an argument's pattern, a tool to call first that the whole
trajectory never called, the same call failing just now); it quotes the error it risks.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from .call_rule import Argument, ArgumentKind, CallRule, RuleKind
from .generalize import value_pattern
from .lesson import error_class
from .models import Event, Experience

MAX_RECENT_EVENTS = 20  # of the events an agent sends with the call
MAX_TAIL_EVENTS = 50  # of a stored trajectory's last events read for a call (what earlier calls returned)


@dataclass(frozen=True)
class Situation:
    """A tool call about to be made, and what the agent did just before it (oldest first).

    ``called``: the tools whose calls worked over the whole trajectory, when known (a stored
    trajectory's summary); None: only ``recent`` is known."""

    tool: str
    params: Mapping[str, Any] = field(default_factory=dict)
    goal: str = ""
    recent: Sequence[Event] = ()
    called: frozenset[str] | None = None


@dataclass(frozen=True)
class Finding:
    """How a lesson's rule meets a call. ``applies``: the lesson is worth showing for this call;
    ``violations``: what the call does that the lesson warns against (a warning when any)."""

    applies: bool
    structured: float  # in [0, 1]: the tool, the broken checks, the error class of recent failures
    violations: tuple[str, ...] = ()
    error_match: bool = False


def value_shape(value: Any) -> str:
    """A value's shape in the reviewer's words, without its example ("a decimal number"), so a
    value is compared with a rule's shapes in the rule's own vocabulary."""
    return value_pattern(value)[0]


def is_pattern(shape: str) -> bool:
    """A shape that stands for many values; "a value like `x`" stands for one."""
    return not shape.startswith("a value like")


# --- holding a call against a rule --------------------------------------------------------------


def _error_class(event: Event) -> str | None:
    return error_class(event) if event.failed else None


def _same_params(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    return json.dumps(a, sort_keys=True, default=str) == json.dumps(b, sort_keys=True, default=str)


def _shape(arg: Argument, tool: str, params: Mapping[str, Any]) -> str | None | bool:
    """The value's shape against the rule's; None when the argument is not given."""
    p = arg.name
    if p not in params:
        return None
    shape = value_shape(params[p])
    if arg.avoided and shape == arg.avoided:
        return f"`{p}` is {shape} here, the shape that made `{tool}` fail" + (f" (it wants {arg.shape})" if arg.shape else "")
    if arg.shape and is_pattern(arg.shape) and shape != arg.shape:
        return f"`{p}` is {shape} here; `{tool}` wants {arg.shape}"
    return False


def _keys(arg: Argument, params: Mapping[str, Any]) -> str | None | bool:
    """The keys of the structure given; None when none is given."""
    value = params.get(arg.name)
    if not isinstance(value, Mapping):
        return None
    missing = [k for k in arg.keys if k not in value]
    return f"`{arg.name}` lacks {', '.join(f'`{k}`' for k in missing)}" if missing else False


def scalars(value: Any) -> list[str]:
    """Every scalar inside a value, as text (nested mappings and lists flattened)."""
    if isinstance(value, Mapping):
        return [s for v in value.values() for s in scalars(v)]
    if isinstance(value, (list, tuple)):
        return [s for v in value for s in scalars(v)]
    return [] if value is None or isinstance(value, bool) else [str(value)]


def _returned(tool: str, sit: Situation) -> set[str] | None:
    """The values what ``tool`` returned in the known events hold; None when none of its results is
    known (it was never called, or only before the events read)."""
    results = [e.content.get("result") for e in sit.recent if e.tool == tool and e.succeeded]
    return {v.lower() for r in results for v in scalars(r)} if results else None


def _from_result(arg: Argument, tool: str, sit: Situation) -> str | None | bool:
    """Values that no call of the run returned: made up, or taken from what was never read. The
    rule names the tool that returned them in the run it was learned from; a value another call
    returned (a payment method from the user's profile, not the order) is as good."""
    source = arg.other or "?"
    values = [v for v in scalars(sit.params[arg.name])]
    every = {v.lower() for e in sit.recent if e.is_tool_call and e.succeeded for v in scalars(e.content.get("result"))}
    missing = [v for v in values if v.lower() not in every]
    if not missing:
        return False
    if _returned(source, sit) is not None:
        return f"`{arg.name}` holds {', '.join(f'`{v}`' for v in missing[:3])}, which `{source}` did not return"
    if sit.called is not None and source not in sit.called:
        return f"`{arg.name}` is not taken from `{source}`, which was not called in this run"
    return None


def _pattern(arg: Argument, tool: str, sit: Situation, support: int) -> str | None | bool:
    """The arguments whose condition is a pattern of their value (``ArgumentKind.PREFIX`` ...)."""
    p, kind, value = arg.name, arg.kind, sit.params.get(arg.name)
    if p not in sit.params:
        return None
    if kind is ArgumentKind.PREFIX:
        return False if str(value).startswith(arg.shape or "") else f"`{p}` does not start with `{arg.shape}`"
    if kind is ArgumentKind.WITHOUT:
        found = [c for c in arg.avoided or "" if c in str(value)]
        return f"`{p}` holds {', '.join(f'`{c}`' for c in found)}" if found else False
    if kind is ArgumentKind.ONE_OF:
        if support < 2 or len(arg.keys) >= support or isinstance(value, (Mapping, list)):
            return None  # one run's value is no rule, nor are values that never recur (names, not kinds)
        return False if str(value) in arg.keys else f"`{p}` is none of the values that worked"
    if kind is ArgumentKind.SAME_LENGTH:
        other = sit.params.get(arg.other or "")
        if not isinstance(value, list) or not isinstance(other, list):
            return None
        return False if len(value) == len(other) else f"`{p}` has {len(value)} items and `{arg.other}` {len(other)}"
    return _from_result(arg, tool, sit)


PATTERNS = (ArgumentKind.PREFIX, ArgumentKind.WITHOUT, ArgumentKind.ONE_OF, ArgumentKind.SAME_LENGTH,
            ArgumentKind.FROM_RESULT)


def _argument(arg: Argument, tool: str, params: Mapping[str, Any], sit: Situation | None = None,
              support: int = 1) -> str | None | bool:
    """A message when the call breaks what the rule says of the argument, False when it keeps
    it, None when nothing here can tell."""
    p, kind = arg.name, arg.kind
    if kind in PATTERNS:
        return _pattern(arg, tool, sit or Situation(tool, params), support)
    if kind is ArgumentKind.FORBIDDEN:
        return f"`{p}` should be left out of `{tool}`" if p in params else False
    if kind is ArgumentKind.VALUE_SHAPE:
        return _shape(arg, tool, params)
    if kind is ArgumentKind.KEYS:
        return _keys(arg, params)
    if kind not in (ArgumentKind.MISSING, ArgumentKind.VALUE, ArgumentKind.STRUCTURE):
        return None  # NAMED
    if p not in params:
        return f"`{p}` is missing: `{tool}` failed without it before"
    if kind is ArgumentKind.VALUE and arg.shape and is_pattern(arg.shape):
        return _shape(arg, tool, params)
    if kind is ArgumentKind.STRUCTURE:
        return _keys(arg, params) or False
    return False


def _asks_for(rule: CallRule, names: tuple[str, ...]) -> bool:
    """Whether the error the rule is about names one of these arguments ("city is required"):
    the tool to call first was there to give it, not to check a state the error names."""
    error = (rule.error or "").lower()
    return any(re.search(rf"(?<![a-z0-9_]){re.escape(n.lower())}(?![a-z0-9_])", error) for n in names)


def _call_first(rule: CallRule, sit: Situation) -> str | None | bool:
    """Whether a tool to call first was called: over the whole trajectory when its summary is
    known, else in the events sent with the call. A call that already has every argument the
    tool called first was to give, when the error named it (``city`` the user named, or found
    another way), follows the rule whatever was called before it: it is not warned again (unless the rule says how the first tool
    is to be called: what it gave when called otherwise is what failed)."""
    first = rule.first_tools
    fed = rule.params
    if fed and not rule.first_arguments and _asks_for(rule, fed) and all(sit.params.get(n) not in (None, "", [], {}) for n in fed):
        return False
    if sit.called is not None:
        done = any(t in sit.called for t in first)
    elif not sit.recent:
        return None
    else:
        done = any(e.tool in first and e.succeeded for e in sit.recent)
    return False if done else f"{' or '.join(f'`{t}`' for t in first)} has not been called before `{rule.tool}`"


def _once_per(rule: CallRule, sit: Situation) -> str | None | bool:
    key = rule.arguments[0].name if rule.arguments else None
    if key is None or key not in sit.params:
        return None
    done = any(e.tool == rule.tool and e.succeeded and (e.content.get("params") or {}).get(key) == sit.params[key]
               for e in sit.recent)
    return f"`{rule.tool}` already worked for this `{key}` in this run" if done else False


def _used_instead(rule: CallRule, sit: Situation, error_class: str | None) -> str | None:
    """Another tool in place of this one: only once this one failed the same way in this run."""
    if error_class and any(e.tool == rule.tool and e.failed and _error_class(e) == error_class for e in sit.recent):
        return f"`{rule.tool}` failed this way just now; `{rule.other_tool}` worked in its place before"
    return None


def _not_retried(rule: CallRule, sit: Situation) -> str | None | bool:
    failed = [e for e in sit.recent if e.tool == rule.tool and e.failed]
    if any(_same_params(e.content.get("params") or {}, sit.params) for e in failed):
        return f"this exact call of `{rule.tool}` failed just now; retrying it unchanged does not help"
    return None if not failed else False


def _results(rule: CallRule, sit: Situation, error_class: str | None = None, support: int = 1) -> list[str | None | bool]:
    """What the call does with each check of the rule: the tool-level one first, then each
    argument's (``_argument``)."""
    results: list[str | None | bool] = []
    if rule.kind is RuleKind.CALL_FIRST:
        results.append(_call_first(rule, sit))
    elif rule.kind is RuleKind.DO_NOT_RETRY:
        results.append(_not_retried(rule, sit))
    elif rule.kind is RuleKind.USE_INSTEAD:
        results.append(_used_instead(rule, sit, error_class))
    elif rule.kind is RuleKind.ONCE_PER:
        return [_once_per(rule, sit)]
    elif rule.kind in (RuleKind.OBJECTED, RuleKind.NO_FIX):
        results.append(None)
    return results + [_argument(a, rule.tool, sit.params, sit, support) for a in rule.arguments]


def evaluate(rule: CallRule, sit: Situation, error_class: str | None = None, support: int = 1) -> Finding:
    """How the lesson's rule meets the call (``error_class``: the lesson's; ``support``: how many
    runs it was learned from: a value list learned from one run is not checked): only a lesson
    about this very tool can apply."""
    if rule.tool.lower() != sit.tool.lower():
        return Finding(False, 0.0)
    results = _results(rule, sit, error_class, support)
    violations = tuple(r for r in results if isinstance(r, str))
    decided = [r for r in results if r is not None]
    recent_classes = {_error_class(e) for e in sit.recent if e.tool == rule.tool and e.failed}
    error_match = bool(error_class) and error_class in recent_classes
    # a lesson whose checks the call all passes is already followed; one that checks nothing
    # here (a preference, an objection) is still about this tool
    applies = bool(violations) or not decided
    structured = 0.5 + (0.3 if violations else 0.0) + min(0.1, 0.05 * max(0, len(violations) - 1)) + (0.1 if error_match else 0.0)
    return Finding(applies, round(min(1.0, structured), 4), violations, error_match)


def advise_score(finding: Finding, text: float, utility: float, freshness: float) -> float:
    """Structure first: a broken check (0.3 of structure, 0.21 of the score) outweighs any text
    similarity (0.15) and any difference in utility (0.1) or freshness (0.05)."""
    return round(0.7 * finding.structured + 0.15 * text + 0.1 * utility + 0.05 * freshness, 4)


def warning_message(rule: CallRule, finding: Finding, error_class: str | None = None) -> str:
    """Which error the call risks (the rule's, quoted), and what in the call meets its condition."""
    cls = f" with {rule.error}" if rule.error else (f" with {error_class}" if error_class else "")
    return f"`{rule.tool}` failed{cls} in past runs: " + "; ".join(finding.violations) + "."


# --- judging whether a run followed a lesson (credit) -------------------------------------------


def followed(exp: Experience, later: Sequence[Event]) -> bool:
    """Whether the tool calls after a lesson was served follow its rule.

    The first call of the rule's tool after the lesson is what the lesson was about: it follows
    the lesson when it breaks none of its checks (the tool to call first was called before it);
    "use X instead" is followed when X was called; "do not retry" when no failed call was
    repeated unchanged; an objection when the tool was not used again. A lesson without a rule is
    followed when every tool it names was called.
    """
    rule = exp.rule
    calls = [e for e in later if e.is_tool_call]
    if rule is None:
        return bool(exp.tools) and all(any(e.tool == t for e in calls) for t in exp.tools)
    if rule.kind is RuleKind.USE_INSTEAD:
        return any(e.tool == rule.other_tool for e in calls)
    if rule.kind is RuleKind.OBJECTED:
        return not any(e.tool == rule.tool for e in calls)
    if rule.kind is RuleKind.DO_NOT_RETRY:
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
    checked = [a for a in rule.arguments if a.kind is not ArgumentKind.NAMED]
    if rule.kind is RuleKind.CALL_FIRST:
        if not sit.recent:
            return False  # nothing was called before it, so the tool to call first was not
        if isinstance(_call_first(rule, sit), str):
            return False
    elif not checked:  # the arguments it names appear in the call
        return all(p in sit.params for p in rule.params)
    return all(not isinstance(_argument(a, rule.tool, sit.params), str) for a in checked)
