"""A lesson's call rule, as data: the tool it is about and what a call of that tool must do.

The rules reviewer states the rule of each lesson it finds (``domain.review``). Advise holds a call
against it and credit judges whether a run followed it (``domain.advise``). The advice's words for
it are rendered from it here (``rule_words``), and nothing reads a rule back from those words. A
lesson written by a person or by a model comes as words alone: its rule is read from them once,
when the lesson is stored (``domain.rule_reading``).

Kinds of rule, and how the advice words them:

    arguments     "When you call `charge`, set `amount` to a whole number (e.g. 1999), not ..."
    call_first    "Call `lookup_airport` before `search_flights` and pass what it returns as `iata`"
    use_instead   "Use `void_item` instead of `refund_item` for this"
    do_not_retry  "Do not retry `sync_calendar` with the same parameters"
    objected      "The user objected when you used `send_email` for this"

An ``arguments`` rule (and the arguments a ``call_first`` rule feeds) is a list of ``Argument``:
one per argument the fix changed, each of a kind that says what can be checked of it.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from .inert import code


class RuleKind(str, Enum):
    ARGUMENTS = "arguments"  # the tool's arguments: give, shape or leave out
    CALL_FIRST = "call_first"  # another tool before it (and what it returns passed on)
    USE_INSTEAD = "use_instead"  # another tool in its place
    DO_NOT_RETRY = "do_not_retry"  # a failed call not repeated unchanged
    OBJECTED = "objected"  # the user objected to it here: nothing to check, worth knowing


class ArgumentKind(str, Enum):
    MISSING = "missing_argument"  # must be given
    FORBIDDEN = "forbidden_argument"  # must be left out
    VALUE = "value"  # must be given, as a value of ``shape``
    VALUE_SHAPE = "value_shape"  # when given: of ``shape``, not of ``avoided``
    STRUCTURE = "structure"  # must be given, a structure holding ``keys``
    KEYS = "keys"  # a structure given holds ``keys``
    NAMED = "named"  # what the fix changed in it, in ``words``: nothing here can check how


@dataclass(frozen=True)
class Argument:
    kind: ArgumentKind
    name: str
    shape: str | None = None  # VALUE, VALUE_SHAPE: the value's shape in the reviewer's words
    example: str | None = None  # the value that worked, as an example of ``shape``
    avoided: str | None = None  # VALUE_SHAPE: the shape of the value that failed
    avoided_example: str | None = None
    keys: tuple[str, ...] = ()  # STRUCTURE, KEYS
    words: str | None = None  # NAMED: how the fix changed it ("in `query`, add `LIMIT 20` at the end")


@dataclass(frozen=True)
class CallRule:
    kind: RuleKind
    tool: str
    arguments: tuple[Argument, ...] = ()  # ARGUMENTS: the checks; CALL_FIRST: what to pass on
    other_tool: str | None = None  # CALL_FIRST: the tool to call first; USE_INSTEAD: the one to use
    # CALL_FIRST, when the first tool had been called before the failure, but not this way
    first_arguments: tuple[Argument, ...] = ()

    @property
    def params(self) -> tuple[str, ...]:
        """The arguments of the tool that the rule names."""
        return tuple(dict.fromkeys(a.name for a in self.arguments))


# --- the advice's words for a rule ---------------------------------------------------------------


def _example(example: str | None) -> str:
    return f" (e.g. {example})" if example else ""


def _names(names: tuple[str, ...]) -> str:
    return ", ".join(code(n) for n in names)


def argument_words(arg: Argument) -> str:
    """One clause of a fix: "set `amount` to a whole number (e.g. 1999), not a decimal number"."""
    name = code(arg.name)
    if arg.kind is ArgumentKind.FORBIDDEN:
        return f"leave out {name}"
    if arg.kind is ArgumentKind.STRUCTURE:
        return f"set {name} with {_names(arg.keys)}"
    if arg.kind is ArgumentKind.KEYS:
        return f"include {_names(arg.keys)} in {name}"
    if arg.kind is ArgumentKind.VALUE:
        return f"set {name} to {arg.shape}{_example(arg.example)}"
    if arg.kind is ArgumentKind.VALUE_SHAPE:
        avoided = f", not {arg.avoided}{_example(arg.avoided_example)}" if arg.avoided else ""
        return f"set {name} to {arg.shape}{_example(arg.example)}{avoided}"
    if arg.kind is ArgumentKind.MISSING:
        return f"pass {name}"
    return arg.words or f"mind {name}"


def changes_words(args: tuple[Argument, ...]) -> str:
    """The clauses of a fix, in the order the arguments are listed."""
    return "; ".join(argument_words(a) for a in args)


def fed_words(rule: CallRule) -> str:
    """What a ``call_first`` rule passes on: " and pass what it returns as `iata`", or nothing."""
    fed = tuple(a.name for a in rule.arguments)
    return f" and pass what it returns as {_names(fed)}" if fed else ""


def rule_words(rule: CallRule) -> str:
    """The rule as the advice opens with it, before what happens otherwise."""
    t = code(rule.tool)
    if rule.kind is RuleKind.ARGUMENTS:
        return f"When you call {t}, {changes_words(rule.arguments)}"
    if rule.kind is RuleKind.CALL_FIRST:
        first = code(rule.other_tool or "?")
        if rule.first_arguments:
            return f"Before {t}, call {first} and {changes_words(rule.first_arguments)}{fed_words(rule)}"
        return f"Call {first} before {t}{fed_words(rule)}"
    if rule.kind is RuleKind.USE_INSTEAD:
        return f"Use {code(rule.other_tool or '?')} instead of {t} for this"
    if rule.kind is RuleKind.DO_NOT_RETRY:
        return f"Do not retry {t} with the same parameters"
    return f"The user objected when you used {t} for this"
