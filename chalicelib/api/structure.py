"""Structure a request body may have: how deep it nests, and text that is valid Unicode.

Checked once on the parsed body, before any model, store or index sees it, so nothing stored can
later fail to serialize, and a body nested a thousand deep answers 4xx instead of exhausting the
interpreter's recursion limit.
"""
from __future__ import annotations

import re
from typing import Any

from ..domain.errors import InvalidInput

MAX_DEPTH = 32
_SURROGATE = re.compile("[\ud800-\udfff]")
# A body can only hold a lone surrogate through a \\uD8xx-\\uDFxx escape or raw bytes that decode
# to one (json.loads decodes bytes with surrogatepass): look for those first, walk only then.
# Two patterns, not one alternation: each starts with a literal the regex engine scans for quickly,
# which an alternation loses.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
_SURROGATE_BYTES = re.compile(rb"\xed[\xa0-\xbf]")


def check_structure(raw: bytes, value: Any, max_depth: int = MAX_DEPTH) -> None:
    """Raise InvalidInput naming the place where `value` nests deeper than `max_depth` or holds a lone surrogate."""
    surrogates = bool(_SURROGATE_ESCAPE.search(raw) or _SURROGATE_BYTES.search(raw))
    if not surrogates and (raw.count(b"[") + raw.count(b"{") <= max_depth or _depth(value) <= max_depth):
        return
    stack: list[tuple[Any, str, int]] = [(value, "(body)", 1)]
    while stack:
        node, where, depth = stack.pop()
        if isinstance(node, dict):
            if depth > max_depth:
                raise InvalidInput(f"{where}: nested deeper than {max_depth} levels")
            for key, child in node.items():
                if surrogates and _SURROGATE.search(key):
                    raise InvalidInput(f"{where}: a key is not valid Unicode text (lone surrogate)")
                stack.append((child, f"{where}.{key}" if where != "(body)" else key, depth + 1))
        elif isinstance(node, list):
            if depth > max_depth:
                raise InvalidInput(f"{where}: nested deeper than {max_depth} levels")
            stack.extend((child, f"{where}[{i}]", depth + 1) for i, child in enumerate(node))
        elif surrogates and isinstance(node, str) and _SURROGATE.search(node):
            raise InvalidInput(f"{where}: not valid Unicode text (lone surrogate)")


def _depth(value: Any) -> int:
    """How deep ``value`` (parsed JSON: plain dicts and lists) nests, a scalar being 0; level by level,
    without naming places: the common case, walked fast."""
    deepest, level = 0, [value] if type(value) in (dict, list) else []
    while level:
        deepest += 1
        children: list[Any] = []
        for node in level:
            children.extend(node.values() if type(node) is dict else node)
        level = [v for v in children if type(v) is dict or type(v) is list]
    return deepest
