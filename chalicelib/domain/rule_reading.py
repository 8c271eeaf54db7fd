"""Reading a call rule from a lesson's words, for the lessons that come as words alone.

A lesson the rules reviewer finds carries its rule as data (``domain.call_rule``). A lesson written
by a person (``POST /v1/experiences``, an import) or by a language model has only its words; its
rule is read from them here, once, when it is stored. So is the rule of a lesson stored before
rules were (``adapters.codec``), whose words are the reviewer's.

Read are the forms the reviewer writes, which people write too ("Call `lookup_airport` before
`search_flights`", "When you call `charge`, set `amount` to a whole number, not a decimal number:
otherwise it fails"), and the usual ways a person states a rule ("`get_weather` requires `city`",
"`amount` is in integer cents"). No model is involved.
"""
from __future__ import annotations

import re
from functools import lru_cache
from typing import Sequence

from .call_rule import Argument, ArgumentKind, CallRule, RuleKind

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
_EXAMPLE = re.compile(r" \(e\.g\. [^)]*\)")

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


def _shape(words: str) -> str:
    return _EXAMPLE.sub("", words)


def _changes(change: str) -> list[Argument]:
    """A fix in the reviewer's words (``call_rule.changes_words``), clause by clause."""
    args: list[Argument] = []
    for clause in _clauses(change):
        if m := _LEAVE_OUT.match(clause):
            args.append(Argument(ArgumentKind.FORBIDDEN, m[1]))
        elif m := _SET_WITH.match(clause):
            args.append(Argument(ArgumentKind.STRUCTURE, m[1], keys=tuple(_ticked(m[2]))))
        elif m := _SET_TO_NOT.match(clause):
            args.append(Argument(ArgumentKind.VALUE_SHAPE, m[1], shape=_shape(m[2]), avoided=_shape(m[3])))
        elif m := _SET_TO.match(clause):
            args.append(Argument(ArgumentKind.VALUE, m[1], shape=_shape(m[2])))
        elif m := _INCLUDE_IN.match(clause):
            args.append(Argument(ArgumentKind.KEYS, _ticked(clause)[-1], keys=tuple(_ticked(m[1]))))
        else:
            args += [Argument(ArgumentKind.NAMED, p) for p in _ticked(clause)[-1:]]
    return args


def _free_text(text: str, tool: str, tools: set[str]) -> list[Argument]:
    """Required arguments and value shapes, as a person or a model writes them."""
    args: list[Argument] = []
    not_params = tools | {tool}
    for sentence in _SENTENCE.split(text):
        for m in _REQUIRED_AFTER.finditer(sentence):
            name = m[1] or m[2]
            if name not in not_params:
                args.append(Argument(ArgumentKind.MISSING, name))
        for m in _REQUIRED_BEFORE.finditer(sentence):
            if m[1] not in not_params:
                args.append(Argument(ArgumentKind.MISSING, m[1]))
        named = [p for p in _ticked(sentence) if p not in not_params]
        for pattern, shape in _SHAPE_WORDS:
            if named and pattern.search(sentence):
                args.append(Argument(ArgumentKind.VALUE_SHAPE, named[0], shape=shape))
    return args


def _distinct(args: list[Argument]) -> tuple[Argument, ...]:
    return tuple(dict.fromkeys(args))


def read_rule(advice: str, lesson: str, situation: str, tools: Sequence[str]) -> CallRule | None:
    """The call rule a lesson's words state, or None when they are about no tool in particular."""
    return _read(advice, lesson, situation, tuple(tools))


@lru_cache(maxsize=65536)
def _read(advice: str, lesson: str, situation: str, tools: tuple[str, ...]) -> CallRule | None:
    if m := _ORDER.search(advice):
        fed = [Argument(ArgumentKind.MISSING, p) for p in _ticked(m[3] or "")]
        return CallRule(RuleKind.CALL_FIRST, m[2], _distinct(fed), other_tool=m[1])
    if m := _SWAP.search(advice):
        return CallRule(RuleKind.USE_INSTEAD, m[2], other_tool=m[1])
    if m := _PARAM.search(advice):
        return CallRule(RuleKind.ARGUMENTS, m[1], _distinct(_changes(m[2])))
    if m := _RETRY.search(advice):
        return CallRule(RuleKind.DO_NOT_RETRY, m[1])
    if m := _OBJECTED.search(advice):
        return CallRule(RuleKind.OBJECTED, m[1])
    tool = _main_tool(advice, lesson, situation, tools)
    if tool is None:
        return None
    known = set(tools)
    args = _free_text(f"{advice} {lesson}", tool, known)
    if not args:  # named arguments nothing here can check still say what the lesson is about
        args = [Argument(ArgumentKind.NAMED, p) for p in _ticked(f"{advice} {lesson}") if p not in known | {tool}][:3]
    return CallRule(RuleKind.ARGUMENTS, tool, _distinct(args))


def _main_tool(advice: str, lesson: str, situation: str, tools: tuple[str, ...]) -> str | None:
    if m := _CALLING.search(f"{situation} {lesson}"):
        return next(g for g in m.groups() if g)
    if len(tools) == 1:
        return tools[0]
    named = [t for t in _ticked(f"{advice} {lesson}") if t in tools]
    return named[0] if named else None
