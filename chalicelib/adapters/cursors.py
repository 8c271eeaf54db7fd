"""The page cursor of every store: compact JSON in unpadded URL-safe base64, opaque to clients.

A cursor a store did not make answers ``InvalidInput`` (422), never a 500 nor another page. A
forged cursor can hold what JSON allows and no store takes: an integer beyond 64 bits (SQLite
refuses to bind it), a lone surrogate (``"\\ud800"``: no UTF-8 encodes it, so neither SQLite nor
DynamoDB takes it), ``NaN`` or ``Infinity``. Decoding refuses these, so every store sees only
values it can bind.
"""
from __future__ import annotations

import base64
import json
from typing import Any

from ..domain.errors import InvalidInput

INT_MIN, INT_MAX = -(2**63), 2**63 - 1  # what SQLite binds and DynamoDB numbers hold exactly


def encode_cursor(value: Any) -> str:
    return base64.urlsafe_b64encode(json.dumps(value, separators=(",", ":")).encode()).decode().rstrip("=")


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} in a cursor")


def _bindable(value: Any) -> bool:
    """Whether every part of ``value`` is one a store can bind: a 64-bit int, UTF-8-encodable text."""
    if isinstance(value, bool) or value is None:
        return True
    if isinstance(value, int):
        return INT_MIN <= value <= INT_MAX
    if isinstance(value, float):
        return value == value and abs(value) != float("inf")
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate
            return False
        return True
    if isinstance(value, list):
        return all(_bindable(v) for v in value)
    if isinstance(value, dict):
        return all(_bindable(k) and _bindable(v) for k, v in value.items())
    return False


def decode_cursor(cursor: str) -> Any:
    """What ``encode_cursor`` encoded; InvalidInput for anything that is not such a cursor."""
    try:
        value = json.loads(
            base64.urlsafe_b64decode((cursor + "=" * (-len(cursor) % 4)).encode()), parse_constant=_refuse_constant
        )
    except Exception as exc:  # garbage of any kind is the caller's error, not ours
        raise InvalidInput("invalid cursor") from exc
    if not _bindable(value):
        raise InvalidInput("invalid cursor")
    return value


def decode_parts(cursor: str, types: tuple[type, ...]) -> tuple[Any, ...]:
    """A cursor that encoded a list of exactly these types (a bool is not an int here)."""
    parts = decode_cursor(cursor)
    if (
        not isinstance(parts, list)
        or len(parts) != len(types)
        or not all(isinstance(p, t) and not isinstance(p, bool) for p, t in zip(parts, types))
    ):
        raise InvalidInput("invalid cursor")
    return tuple(parts)
