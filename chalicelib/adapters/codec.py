"""Domain objects <-> JSON-ready dicts, shared by every persistent adapter."""
from __future__ import annotations

import dataclasses
import functools
from datetime import datetime
from enum import Enum
from typing import Any, TypeVar

from ..domain.models import Event, Experience, ExperienceStatus, Source, Trajectory, TrajectoryStatus

T = TypeVar("T")



def to_doc(obj: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        if isinstance(value, datetime):
            value = value.isoformat()
        elif isinstance(value, Enum):
            value = value.value
        out[f.name] = value
    return out


@functools.cache
def _names(cls: type) -> frozenset[str]:
    return frozenset(f.name for f in dataclasses.fields(cls))


def _from_doc(cls: type[T], doc: dict[str, Any], datetimes: tuple[str, ...], enums: dict[str, type[Enum]]) -> T:
    names = _names(cls)
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
    return cls(**kwargs)


def trajectory_from_doc(doc: dict[str, Any]) -> Trajectory:
    return _from_doc(
        Trajectory, doc, ("created_at", "updated_at", "finalized_at"), {"status": TrajectoryStatus}
    )


def event_from_doc(doc: dict[str, Any]) -> Event:
    return _from_doc(Event, doc, ("timestamp",), {})


def experience_from_doc(doc: dict[str, Any]) -> Experience:
    return _from_doc(
        Experience,
        doc,
        ("created_at", "updated_at", "renewed_at"),
        {"status": ExperienceStatus, "source": Source},
    )
