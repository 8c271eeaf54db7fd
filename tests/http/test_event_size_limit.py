"""The 64 KiB limit per event (its ``json.dumps``), and the bound that lets a small body skip measuring it.

``app._event_limits`` serializes no event of a body of at most a sixth of the limit: ``json.dumps``
writes at most 6 characters per byte of the JSON text a value was parsed from. The property test
holds that bound to the texts a client can send; the HTTP tests hold the limit itself, with events
made of the characters that grow the most.
"""
from __future__ import annotations

import json

from hypothesis import example, given, settings
from hypothesis import strategies as st

from app import DUMPS_CHARS_PER_BODY_BYTE
from chalicelib.settings import Settings
from tests.support.http_api import Api

LIMIT = Settings.model_fields["max_event_bytes"].default

# JSON text as compact as a client can write it: exponents for numbers (1e15 becomes
# 1000000000000000.0), raw UTF-8 and DEL bytes in strings (escaped as \uXXXX by json.dumps), no
# spaces (json.dumps adds one after every ',' and ':').
_numbers = st.one_of(
    st.integers(-10**30, 10**30).map(str),
    st.builds(lambda m, e: f"{m}e{e}", st.integers(-9, 9), st.integers(-330, 330)),
    st.builds(lambda m, f, e: f"{m}.{f}E+{e}", st.integers(0, 99), st.integers(0, 999), st.integers(0, 20)),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
)
_chars = st.one_of(st.sampled_from(["\x7f", "é", "€", "😀", '\\"', "\\\\", "\\/", "\\n", "\\u0000", "a", " "]),
                   st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")).filter(lambda c: c not in '"\\'))
_strings = st.lists(_chars, max_size=12).map(lambda cs: '"' + "".join(cs) + '"')
_texts = st.recursive(
    st.one_of(_numbers, _strings, st.sampled_from(["true", "false", "null", "NaN", "-Infinity"])),
    lambda inner: st.one_of(
        st.lists(inner, max_size=6).map(lambda xs: "[" + ",".join(xs) + "]"),
        st.lists(st.tuples(_strings, inner), max_size=6).map(lambda kv: "{" + ",".join(f"{k}:{v}" for k, v in kv) + "}"),
    ),
    max_leaves=30,
)


@settings(max_examples=400, deadline=None)
@given(_texts)
@example('"' + "\x7f" * 40 + '"')
@example('"' + "é" * 40 + '"')
@example("[" + ",".join(["1e15"] * 20) + "]")
@example("{" + ",".join(f'"{k}":1e15' for k in "abcdefgh") + "}")
def test_json_dumps_writes_at_most_six_characters_per_byte_of_the_text_it_was_parsed_from(text):
    raw = text.encode()
    assert len(json.dumps(json.loads(raw))) <= DUMPS_CHARS_PER_BODY_BYTE * len(raw)


def start(api: Api, key: str) -> None:
    assert api.call("POST", "/v1/trajectories", key, {"trajectory_id": "tr1", "agent_id": "a", "goal": "g"}).status_code == 201


def event_of(text: str) -> dict:
    return {"event_id": "e1", "type": "user_input", "content": {"text": text}}


def sized(char: str, dumped_size: int) -> dict:
    """An event of ``char`` repeated, whose json.dumps is exactly ``dumped_size`` characters."""
    overhead = len(json.dumps(event_of("")))
    per_char = len(json.dumps(char)) - 2
    assert (dumped_size - overhead) % per_char == 0
    event = event_of(char * ((dumped_size - overhead) // per_char))
    assert len(json.dumps(event)) == dumped_size
    return event


def test_an_event_of_escaped_characters_one_over_the_limit_gets_413_at_the_limit_202(api):
    key = api.tenant()
    start(api, key)
    for char in ("\x7f", "é"):  # a byte or two of the body, six characters of json.dumps
        base = len(json.dumps(event_of(""))) % 6
        at_limit = LIMIT - (LIMIT - base) % 6
        over = sized(char, at_limit + 6)
        raw = json.dumps({"events": [over]}, ensure_ascii=False).encode()
        assert len(raw) * DUMPS_CHARS_PER_BODY_BYTE > LIMIT  # such a body is measured, not waved through
        resp = api.call("POST", "/v1/trajectories/tr1/events", key, raw=raw)
        assert resp.status_code == 413 and resp.json_body["error"]["message"] == f"events.0 is larger than {LIMIT} bytes"
        ok = json.dumps({"events": [sized(char, at_limit)]}, ensure_ascii=False).encode()
        assert api.call("POST", "/v1/trajectories/tr1/events", key, raw=ok).status_code == 202
