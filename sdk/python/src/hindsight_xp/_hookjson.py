"""JSON for the hook commands, on the interpreter's C parts (``_json``) alone.

``import json`` loads ``re``, and with it ``enum``, ``functools`` and ``collections``: a third of
what a hook costs to start, on every tool call of a coding agent. ``loads`` drives the same C
scanner ``json`` uses; ``dumps`` writes what ``json.dumps`` writes for the plain values a hook sends
(dicts, lists, strings, numbers, booleans, None; anything else as ``str(value)``, as
``default=str`` does), with ``sort_keys`` when asked. Without ``_json`` (another interpreter), both
are ``json``'s.
"""
from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_WHITESPACE = " \t\n\r"
_INF = float("inf")

_quote: Any
_make_scanner: Any
try:
    from _json import encode_basestring_ascii as _quote
    from _json import make_scanner as _make_scanner
except ImportError:  # pragma: no cover - CPython has it
    _quote = _make_scanner = None


class _Context:
    """What the C scanner reads of a ``json.JSONDecoder``."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    memo: dict = {}

    @staticmethod
    def parse_constant(name: str) -> float:
        return {"-Infinity": -_INF, "Infinity": _INF, "NaN": _INF - _INF}[name]


_scan = _make_scanner(_Context()) if _make_scanner is not None else None


def loads(text: str | bytes) -> Any:
    if isinstance(text, (bytes, bytearray)):
        text = bytes(text).decode("utf-8-sig")
    if _scan is None:
        import json

        return json.loads(text)
    start = len(text) - len(text.lstrip(_WHITESPACE))
    try:
        value, end = _scan(text, start)
    except StopIteration as stop:
        raise ValueError(f"not JSON: expecting a value at {stop.value}") from None
    if text[end:].strip(_WHITESPACE):
        raise ValueError(f"not JSON: extra data at {end}")
    return value


def _float(value: float) -> str:
    if value != value:
        return "NaN"
    if value in (_INF, -_INF):
        return "Infinity" if value > 0 else "-Infinity"
    return float.__repr__(value)


def _key(key: Any) -> str:
    if isinstance(key, str):
        return key
    if key is True or key is False or key is None:
        return {True: "true", False: "false", None: "null"}[key]
    if isinstance(key, float):
        return _float(key)
    if isinstance(key, int):
        return int.__repr__(key)
    raise TypeError(f"keys must be str, int, float, bool or None, not {type(key).__name__}")


def _write(value: Any, out: list[str], sort_keys: bool, depth: int) -> None:
    if depth > 500:
        raise ValueError("too deeply nested")
    if isinstance(value, str):
        out.append(_quote(value))
    elif value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, int):
        out.append(int.__repr__(value))
    elif isinstance(value, float):
        out.append(_float(value))
    elif isinstance(value, dict):
        items = sorted(value.items(), key=lambda kv: _key(kv[0])) if sort_keys else value.items()
        out.append("{")
        for i, (k, v) in enumerate(items):
            out.append(", " if i else "")
            out.append(_quote(_key(k)))
            out.append(": ")
            _write(v, out, sort_keys, depth + 1)
        out.append("}")
    elif isinstance(value, (list, tuple)):
        out.append("[")
        for i, item in enumerate(value):
            out.append(", " if i else "")
            _write(item, out, sort_keys, depth + 1)
        out.append("]")
    else:
        out.append(_quote(str(value)))


def dumps(value: Any, *, sort_keys: bool = False) -> str:
    """``json.dumps(value, default=str, sort_keys=sort_keys)`` for a hook's values."""
    if _quote is None:
        import json

        return json.dumps(value, default=str, sort_keys=sort_keys)
    out: list[str] = []
    _write(value, out, sort_keys, 0)
    return "".join(out)
