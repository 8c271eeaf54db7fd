"""Pure helpers of the DynamoDB adapters: key encodings, item-size budgets, cursors.

No I/O and no SDK here, so every rule about what goes into a key or an item is unit-tested with
``==`` (``tests/adapters/dynamo/test_items.py``).
"""
from __future__ import annotations

import hashlib
import json
import zlib
from datetime import datetime, timedelta, timezone
from typing import Any, Iterable

from chalicelib.adapters.cursors import decode_cursor, decode_parts
from chalicelib.domain.errors import InvalidInput

SEP = "#"
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)

# DynamoDB refuses items over 400 KB (names and values, UTF-8). Documents are kept well under it so
# the keys and the index attributes of the item always fit beside them.
ITEM_DOC_BUDGET = 350_000
# A TransactWriteItems call takes at most 100 items and 4 MB in all.
TRANSACTION_MAX_ITEMS = 100
TRANSACTION_MAX_BYTES = 3_500_000

TRUNCATED = "_truncated"
ORIGINAL_BYTES = "_original_bytes"
TRUNCATED_KEYS = "_truncated_keys"
HEAD = "_head"


# --- keys ---------------------------------------------------------------------------------------


def key_part(value: str) -> str:
    """``value`` as one part of a composite key.

    Composite keys join parts with ``#``, which sorts below every character the API allows in an id
    (``[A-Za-z0-9._:@/+=-]``), so ``"t1#x"`` < ``"t1a#x"`` follows (tenant, id) order. A part with a
    character at or below ``#`` would make two keys collide or sort out of order: refused.
    """
    if not value or min(value) <= SEP:
        raise InvalidInput(f"id {value!r} is empty or holds a character this store cannot key on")
    return value


def compose(*parts: str) -> str:
    return SEP.join(key_part(p) for p in parts)


def micros(dt: datetime) -> int:
    """Exact integer microseconds since the epoch (no float rounding)."""
    return (dt - _EPOCH) // timedelta(microseconds=1)


def us_key(us: int, *parts: str) -> str:
    """A sort key that orders by time (fixed-width microseconds), then by the parts."""
    return SEP.join((f"{us:020d}", *(key_part(p) for p in parts)))


def time_key(dt: datetime, *parts: str) -> str:
    return us_key(micros(dt), *parts)


def us_key_bound(us: int) -> str:
    """The smallest key above every ``us_key`` of a time at or before ``us``."""
    return f"{us + 1:020d}"


def shard_of(key: str, shards: int) -> str:
    """A stable shard (crc32, not ``hash()``, which changes per process) for a sparse index."""
    return str(zlib.crc32(key.encode()) % shards)


def scope_key(*parts: str | None) -> str:
    """One fixed-length partition key for an exact scope: ``None`` and ``""`` stay distinct."""
    return hashlib.sha256(json.dumps(parts, separators=(",", ":")).encode()).hexdigest()


# --- documents and their size -------------------------------------------------------------------


def dumps(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False, default=str)


def size_of(obj: Any) -> int:
    """Bytes of ``obj`` as stored: its compact JSON in UTF-8."""
    return len(dumps(obj).encode())


def _cut(text: str, max_stored: int) -> str:
    """The longest prefix of ``text`` whose stored (JSON string) form takes at most ``max_stored`` bytes."""
    lo, hi = 0, min(len(text), max(0, max_stored))  # a character takes at least one byte
    while lo < hi:  # escapes and multibyte characters make the size uneven: search, do not guess
        mid = (lo + hi + 1) // 2
        if size_of(text[:mid]) <= max_stored:
            lo = mid
        else:
            hi = mid - 1
    return text[:lo]


def fit(value: dict[str, Any], budget: int) -> dict[str, Any]:
    """``value`` itself if its JSON fits in ``budget`` bytes; otherwise a copy cut to fit, marked.

    The largest entries are cut first, each to a prefix of its text (a dict or list entry becomes a
    prefix of its JSON), so small entries (a tool name, a status) survive a huge output beside them.
    A cut copy says so: ``_truncated: true``, ``_original_bytes`` (the JSON size of the whole value)
    and ``_truncated_keys``. If cutting entries is not enough (thousands of small ones), the copy
    holds only the marker and ``_head``, a prefix of the original JSON. Nothing goes without a marker.
    """
    original = size_of(value)
    if original <= budget:
        return value
    marker = {TRUNCATED: True, ORIGINAL_BYTES: original}
    out = dict(value)
    sizes = {key: size_of(entry) for key, entry in out.items()}
    cut: list[str] = []
    # the size of the result, kept up to date without serialising it again (16 bytes of slack for
    # the commas and brackets this count leaves out)
    total = original + size_of({**marker, TRUNCATED_KEYS: []}) + 16
    for key in sorted(out, key=lambda k: sizes[k], reverse=True):
        if total <= budget:
            break
        listed = size_of(key) + 1  # its name in _truncated_keys
        excess = total + listed - budget
        entry = out[key]
        out[key] = _cut(entry if isinstance(entry, str) else dumps(entry), sizes[key] - excess)
        total += size_of(out[key]) - sizes[key] + listed
        cut.append(key)
    result = {**out, **marker, TRUNCATED_KEYS: cut}
    if size_of(result) <= budget:
        return result
    return {**marker, HEAD: _cut(dumps(value), budget - size_of({**marker, HEAD: ""}))}


def fit_fields(doc: dict[str, Any], fields: Iterable[str], budget: int) -> dict[str, Any]:
    """``doc`` with its dict ``fields`` cut (largest first) until the whole doc fits in ``budget``."""
    out = dict(doc)
    for name in sorted((f for f in fields if isinstance(out.get(f), dict)), key=lambda f: size_of(out[f]), reverse=True):
        excess = size_of(out) - budget
        if excess <= 0:
            break
        out[name] = fit(out[name], max(0, size_of(out[name]) - excess))
    return out


# --- cursors ------------------------------------------------------------------------------------


def decode_key_cursor(cursor: str, names: Iterable[str], fixed: dict[str, str]) -> dict[str, str]:
    """A cursor holding a DynamoDB key (``LastEvaluatedKey`` as plain strings) with exactly ``names``.

    ``fixed`` are attributes the cursor must carry unchanged (the tenant, the filter of the
    listing): a cursor of another tenant or another listing is invalid, never followed.
    """
    key = decode_cursor(cursor)
    if (
        not isinstance(key, dict)
        or set(key) != set(names)
        or not all(isinstance(v, str) and v for v in key.values())
        or any(key[k] != v for k, v in fixed.items())
    ):
        raise InvalidInput("invalid cursor")
    return key


def decode_pair_cursor(cursor: str) -> tuple[str, str]:
    first, second = decode_parts(cursor, (str, str))
    if not (first and second):
        raise InvalidInput("invalid cursor")
    return first, second
