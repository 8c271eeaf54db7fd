"""Request bodies are parsed by pydantic-core's JSON parser, the standard library's deciding what it
refuses: every body gets the value, or the error, that ``json.loads`` gives it."""
from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings, strategies as st

from chalicelib.api.http import parse_json
from chalicelib.domain.errors import HindsightError

MAX = 1 << 20


def by_json(raw: bytes):
    """What parse_json answered when json.loads parsed every body: the value, or the error's class
    and message."""
    try:
        value = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        return ("MalformedRequest", f"request body is not valid JSON: {exc}")
    except RecursionError:
        return ("InvalidInput", None)
    return ("value", repr(value), value)


def ours(raw: bytes):
    try:
        value = parse_json(raw, MAX)
    except HindsightError as exc:
        return (type(exc).__name__, exc.message if type(exc).__name__ == "MalformedRequest" else None)
    return ("value", repr(value), value)


def same(raw: bytes) -> None:
    expected, got = by_json(raw), ours(raw)
    if expected[0] == "value" and got[0] != "value":
        # json accepted it; the structure check (surrogates, depth) may still refuse it
        assert got[0] == "InvalidInput", (raw, got)
        return
    assert got[:2] == expected[:2], raw
    if got[0] == "value":  # repr tells -0.0 from 0 and 1.0 from 1, not nan from nan
        assert type(got[2]) is type(expected[2])


floats = st.floats(allow_nan=False) | st.sampled_from([math.inf, -math.inf, 5e-324, 1e22, 1e23, 0.1 + 0.2, -0.0])
scalars = st.none() | st.booleans() | st.integers(min_value=-(10**30), max_value=10**30) | floats | st.text(max_size=12)
values = st.recursive(scalars, lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=6), kids, max_size=4),
                      max_leaves=25)


@settings(max_examples=600, deadline=None)
@given(values, st.booleans(), st.sampled_from([None, 1, 2]))
def test_every_json_text_parses_to_the_value_json_gives_it(value, ascii_only, indent):
    same(json.dumps({"v": value}, ensure_ascii=ascii_only, indent=indent).encode())


# bytes that make a text invalid, or valid only to json: escapes of lone surrogates, a BOM,
# control characters, trailing commas, bare words
_junk = st.sampled_from([b"\\ud800", b"\\udc00x", b"\xef\xbb\xbf", b"\xed\xa0\x80", b"\xff", b"\x00", b"\n", b"\t",
                         b"\x0c", b",", b"]", b"}", b"NaN", b"Infinity", b"-", b"01", b"1.", b".5", b"1e", b"\\", b'"', b" "])


@settings(max_examples=600, deadline=None)
@given(values, st.integers(min_value=0, max_value=200), _junk)
def test_a_broken_or_odd_text_gets_the_answer_json_gives_it(value, at, junk):
    text = json.dumps({"v": value}).encode()
    at = min(at, len(text))
    same(text[:at] + junk + text[at:])


@pytest.mark.parametrize("raw", [
    b'{"a": 1, "a": 2}', b'{"v": [NaN, Infinity, -Infinity, 1e400, -0]}', b'{"v": 100000000000000000000000000001}',
    b'{"v": "\\ud83d\\ude00"}', b'{"v": "\\ud83d"}', b'\xef\xbb\xbf{"v": 1}', '{"v": "\u00e9"}'.encode("utf-16"),
    b'{"v": 1} x', b'{"v": "a\nb"}', b'[' * 300 + b']' * 300, b'{"v":' + b'[' * 40 + b']' * 40 + b'}',
])
def test_texts_the_two_parsers_disagree_on_get_json_s_answer(raw):
    same(raw)
