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
    once_per      "Call `exchange_items` once per `order_id`, with everything in that one call"
    no_fix        "No run showed a fix for `exchange_items` failing this way"

A rule also keeps the error it is about (``error``: the message as the lesson quotes it, values
masked), so that a warning says which error the call risks.

An ``arguments`` rule (and the arguments a ``call_first`` rule feeds) is a list of ``Argument``:
one per argument the fix changed, each of a kind that says what can be checked of it.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from enum import Enum

from .inert import code


class RuleKind(str, Enum):
    ARGUMENTS = "arguments"  # the tool's arguments: give, shape or leave out
    CALL_FIRST = "call_first"  # another tool before it (and what it returns passed on)
    USE_INSTEAD = "use_instead"  # another tool in its place
    DO_NOT_RETRY = "do_not_retry"  # a failed call not repeated unchanged
    OBJECTED = "objected"  # the user objected to it here: nothing to check, worth knowing
    ONCE_PER = "once_per"  # at most one call that works per value of an argument (``arguments[0]``)
    NO_FIX = "no_fix"  # it failed and no run showed what works: the error, and nothing to check


class ArgumentKind(str, Enum):
    MISSING = "missing_argument"  # must be given
    FORBIDDEN = "forbidden_argument"  # must be left out
    VALUE = "value"  # must be given, as a value of ``shape``
    VALUE_SHAPE = "value_shape"  # when given: of ``shape``, not of ``avoided``
    STRUCTURE = "structure"  # must be given, a structure holding ``keys``
    KEYS = "keys"  # a structure given holds ``keys``
    NAMED = "named"  # what the fix changed in it, in ``words``: nothing here can check how
    PREFIX = "prefix"  # when given: a text starting with ``shape`` (the value that failed lacked it)
    WITHOUT = "without_characters"  # when given: holding none of the characters in ``avoided``
    ONE_OF = "one_of"  # when given: one of the values in ``keys`` (those that worked, in as many runs)
    SAME_LENGTH = "same_length"  # when given: a list of as many items as the argument ``other``
    FROM_RESULT = "from_result"  # when given: values that what the tool ``other`` returned holds


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
    other: str | None = None  # SAME_LENGTH: the other argument; FROM_RESULT: the tool whose result holds it


@dataclass(frozen=True)
class CallRule:
    kind: RuleKind
    tool: str
    arguments: tuple[Argument, ...] = ()  # ARGUMENTS: the checks; CALL_FIRST: what to pass on
    other_tool: str | None = None  # CALL_FIRST: the tool to call first; USE_INSTEAD: the one to use
    # CALL_FIRST, when the first tool had been called before the failure, but not this way
    first_arguments: tuple[Argument, ...] = ()
    alternatives: tuple[str, ...] = ()  # CALL_FIRST: other tools, any of which does as well as ``other_tool``
    error: str | None = None  # the error it is about, quoted as the lesson quotes it (values masked)

    @property
    def first_tools(self) -> tuple[str, ...]:
        """CALL_FIRST: the tools any of which is to be called first."""
        return tuple(t for t in (self.other_tool, *self.alternatives) if t)

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
    if arg.kind is ArgumentKind.PREFIX:
        return f"start {name} with {code(arg.shape or '')}"
    if arg.kind is ArgumentKind.WITHOUT:
        return f"leave {_names(tuple(arg.avoided or ''))} out of {name}"
    if arg.kind is ArgumentKind.ONE_OF:
        values = _names(arg.keys)
        failed = f" (in one run {arg.avoided_example} failed)" if arg.avoided_example else ""
        return f"set {name} to one of the values that worked: {values}{failed}" if len(arg.keys) > 1 else \
            f"set {name} to a value that worked ({values}){failed}"
    if arg.kind is ArgumentKind.SAME_LENGTH:
        return f"give {name} as many items as {code(arg.other or '?')}"
    if arg.kind is ArgumentKind.FROM_RESULT:
        return f"take {name} from what {code(arg.other or '?')} returned"
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
        first = " or ".join(code(t) for t in rule.first_tools) or code("?")
        if rule.first_arguments:
            return f"Before {t}, call {first} and {changes_words(rule.first_arguments)}{fed_words(rule)}"
        return f"Call {first} before {t}{fed_words(rule)}"
    if rule.kind is RuleKind.USE_INSTEAD:
        return f"Use {code(rule.other_tool or '?')} instead of {t} for this"
    if rule.kind is RuleKind.DO_NOT_RETRY:
        return f"Do not retry {t} with the same parameters"
    if rule.kind is RuleKind.ONCE_PER:
        key = code(rule.arguments[0].name) if rule.arguments else "task"
        return f"Call {t} once per {key}, with everything it is to change in that one call"
    if rule.kind is RuleKind.NO_FIX:
        return f"No run showed a fix for {t} failing this way"
    return f"The user objected when you used {t} for this"


def merged_rule(kept: CallRule | None, other: CallRule | None) -> CallRule | None:
    """The rule of two lessons merged into one: the kept wording's (the other's when it has none),
    with the values that worked in either run added to each ``ONE_OF`` argument both state."""
    if kept is None or other is None or (kept.kind, kept.tool) != (other.kind, other.tool):
        return kept if kept is not None else other
    theirs = {a.name: a for a in other.arguments if a.kind is ArgumentKind.ONE_OF}
    args = tuple(
        replace(a, keys=tuple(dict.fromkeys((*a.keys, *theirs[a.name].keys))))
        if a.kind is ArgumentKind.ONE_OF and a.name in theirs else a
        for a in kept.arguments
    )
    return replace(kept, arguments=args)
