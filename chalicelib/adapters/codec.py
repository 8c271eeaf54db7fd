"""Domain objects <-> JSON-ready dicts, shared by every persistent adapter."""
from __future__ import annotations

import dataclasses
import functools
from datetime import datetime
from enum import Enum
from typing import Any, Callable, TypeVar

from ..domain.call_rule import Argument, ArgumentKind, CallRule, RuleKind
from ..domain.models import Event, Experience, ExperienceStatus, Source, Trajectory, TrajectoryStatus
from ..domain.rule_reading import read_rule

T = TypeVar("T")


def to_doc(obj: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        if isinstance(value, datetime):
            value = value.isoformat()
        elif isinstance(value, Enum):
            value = value.value
        elif isinstance(value, CallRule):
            value = rule_to_doc(value)
        out[f.name] = value
    return out


# --- call rules: only the fields a rule uses are written ------------------------------------------


def _argument_doc(arg: Argument) -> dict[str, Any]:
    doc: dict[str, Any] = {"kind": arg.kind.value, "name": arg.name}
    for key in ("shape", "example", "avoided", "avoided_example", "words", "other"):
        if (value := getattr(arg, key)) is not None:
            doc[key] = value
    if arg.keys:
        doc["keys"] = list(arg.keys)
    return doc


def rule_to_doc(rule: CallRule) -> dict[str, Any]:
    doc: dict[str, Any] = {"kind": rule.kind.value, "tool": rule.tool}
    if rule.arguments:
        doc["arguments"] = [_argument_doc(a) for a in rule.arguments]
    if rule.other_tool is not None:
        doc["other_tool"] = rule.other_tool
    if rule.first_arguments:
        doc["first_arguments"] = [_argument_doc(a) for a in rule.first_arguments]
    if rule.alternatives:
        doc["alternatives"] = list(rule.alternatives)
    if rule.error is not None:
        doc["error"] = rule.error
    return doc


def _argument(doc: dict[str, Any]) -> Argument:
    return Argument(
        ArgumentKind(doc["kind"]), doc["name"], doc.get("shape"), doc.get("example"), doc.get("avoided"),
        doc.get("avoided_example"), tuple(doc.get("keys") or ()), doc.get("words"), doc.get("other"),
    )


def rule_from_doc(doc: dict[str, Any]) -> CallRule:
    return CallRule(
        RuleKind(doc["kind"]), doc["tool"], tuple(_argument(a) for a in doc.get("arguments") or ()),
        doc.get("other_tool"), tuple(_argument(a) for a in doc.get("first_arguments") or ()),
        tuple(doc.get("alternatives") or ()), doc.get("error"),
    )


@functools.cache
def _names(cls: type) -> frozenset[str]:
    return frozenset(f.name for f in dataclasses.fields(cls))


def _from_doc(
    cls: type[T], doc: dict[str, Any], datetimes: tuple[str, ...], enums: dict[str, type[Enum]],
    parsers: dict[str, Callable[[Any], Any]] | None = None,
) -> T:
    names = _names(cls)  # type: ignore[arg-type]  # a class is hashable; mypy does not see it through type[T]
    # a doc written by this version holds only the class's fields: one copy in C, not a filter by key
    kwargs = dict(doc) if names.issuperset(doc) else {k: v for k, v in doc.items() if k in names}
    for key in datetimes:
        value = kwargs.get(key)
        if value is not None:
            kwargs[key] = datetime.fromisoformat(value)
    for key, enum in enums.items():
        value = kwargs.get(key)
        if value is not None:
            # the members by value, looked up as ``enum(value)`` does first, without its call's cost
            kwargs[key] = enum._value2member_map_.get(value) or enum(value)
    for key, parse in (parsers or {}).items():
        value = kwargs.get(key)
        if value is not None:
            kwargs[key] = parse(value)
    return cls(**kwargs)


def trajectory_from_doc(doc: dict[str, Any]) -> Trajectory:
    return _from_doc(
        Trajectory, doc, ("created_at", "updated_at", "finalized_at", "events_expire_at"), {"status": TrajectoryStatus}
    )


def event_from_doc(doc: dict[str, Any]) -> Event:
    return _from_doc(Event, doc, ("timestamp",), {})


def experience_from_doc(doc: dict[str, Any]) -> Experience:
    return _from_doc(
        Experience,
        doc if "rule" in doc else {**doc, "rule": _rule_of_words(doc)},
        ("created_at", "updated_at", "renewed_at"),
        {"status": ExperienceStatus, "source": Source},
        {"rule": rule_from_doc},
    )


def _rule_of_words(doc: dict[str, Any]) -> dict[str, Any] | None:
    """The rule of a lesson stored before lessons kept their rule as data: read from its words
    (the reviewer's, or a person's) as advise read them then. The next write of the lesson stores
    it."""
    rule = read_rule(doc.get("advice", ""), doc.get("lesson", ""), doc.get("situation", ""), doc.get("tools") or ())
    return None if rule is None else rule_to_doc(rule)
