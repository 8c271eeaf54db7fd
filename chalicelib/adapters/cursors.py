"""The page cursor of every store: compact JSON in unpadded URL-safe base64, opaque to clients.

A cursor a store did not make answers ``InvalidInput`` (422), never a 500 nor another page.
"""
from __future__ import annotations

import base64
import json
from typing import Any

from ..domain.errors import InvalidInput


def encode_cursor(value: Any) -> str:
    return base64.urlsafe_b64encode(json.dumps(value, separators=(",", ":")).encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> Any:
    """What ``encode_cursor`` encoded; InvalidInput for anything that is not such a cursor."""
    try:
        return json.loads(base64.urlsafe_b64decode((cursor + "=" * (-len(cursor) % 4)).encode()))
    except Exception as exc:  # garbage of any kind is the caller's error, not ours
        raise InvalidInput("invalid cursor") from exc


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
