"""A JSON-safe, size-bounded copy of whatever a tool took or returned.

Taken in the agent's thread at record time, because the agent may mutate a params dict or a
result list after the call; bounded, because the service refuses events over 64 KiB and the
recorder must not spend the agent's time on a huge result.
"""
from __future__ import annotations

from _collections_abc import Mapping  # collections.abc, without importing collections (a hook's start-up)

TYPE_CHECKING = False  # typing and dataclasses stay out of a hook's start-up (hooks.py)
if TYPE_CHECKING:
    from typing import Any

MAX_STRING = 2000
MAX_ITEMS = 50
MAX_DEPTH = 6


def _cut(text: str) -> str:
    return text if len(text) <= MAX_STRING else text[:MAX_STRING] + f"…[{len(text) - MAX_STRING} more chars]"


_SCALARS = frozenset({int, bool, type(None)})


def snapshot(value: Any, depth: int = 0) -> Any:
    # Exact-type checks first: plain str/int/dict/list are nearly every call, and isinstance
    # against the Mapping ABC costs more than the whole fast path.
    kind = type(value)
    if kind is str:
        return value if len(value) <= MAX_STRING else _cut(value)
    if kind in _SCALARS:
        return value
    if kind is dict and depth < MAX_DEPTH and len(value) <= MAX_ITEMS:
        return {k if type(k) is str else str(k): snapshot(v, depth + 1) for k, v in value.items()}
    if kind is list and depth < MAX_DEPTH and len(value) <= MAX_ITEMS:
        return [snapshot(v, depth + 1) for v in value]
    if isinstance(value, str):
        return _cut(value)
    if isinstance(value, (bool, int)):
        return value
    if isinstance(value, float):
        return value if value == value and value not in (float("inf"), float("-inf")) else str(value)
    if depth >= MAX_DEPTH:
        return _cut(repr(value))
    if isinstance(value, Mapping):
        items = list(value.items())
        out = {str(k): snapshot(v, depth + 1) for k, v in items[:MAX_ITEMS]}
        if len(items) > MAX_ITEMS:
            out["…"] = f"{len(items) - MAX_ITEMS} more keys"
        return out
    if isinstance(value, (list, tuple, set, frozenset)):
        seq = list(value)
        out_list = [snapshot(v, depth + 1) for v in seq[:MAX_ITEMS]]
        if len(seq) > MAX_ITEMS:
            out_list.append(f"…{len(seq) - MAX_ITEMS} more items")
        return out_list
    if isinstance(value, (bytes, bytearray)):
        return f"<{len(value)} bytes>"
    dump = getattr(value, "model_dump", None)  # pydantic models, e.g. the openai SDK's objects
    if callable(dump):
        try:
            return snapshot(dump(mode="json"), depth + 1)
        except Exception:  # noqa: BLE001 - a broken model still gets recorded, as its repr
            return _cut(repr(value))
    if hasattr(type(value), "__dataclass_fields__") and not isinstance(value, type):
        import dataclasses

        return snapshot(dataclasses.asdict(value), depth + 1)
    return _cut(repr(value))
