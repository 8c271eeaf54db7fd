"""An append's body validated straight from its bytes (``app._events_from_json``) is what the general
path (``json.loads``, the structure and limit checks, then validation) builds from the same bytes;
a body that path would refuse, or answer otherwise, is left to it."""
from __future__ import annotations

import json
import random

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import app as app_module
from bench.ingest_throughput import make_events
from chalicelib.api import schemas as s
from chalicelib.api.http import parse_json, validate
from chalicelib.api.structure import MAX_DEPTH
from chalicelib.container import get_settings
from chalicelib.domain.errors import HindsightError, InvalidInput, MalformedRequest, PayloadTooLarge


def general(raw: bytes) -> s.EventsIn:
    data = parse_json(raw, get_settings().max_body_bytes)
    app_module._event_limits(data, raw)
    return validate(s.EventsIn, data)


def both(raw: bytes) -> tuple[s.EventsIn | None, s.EventsIn | HindsightError]:
    try:
        slow: s.EventsIn | HindsightError = general(raw)
    except HindsightError as exc:
        slow = exc
    return app_module._events_from_json(raw), slow


def nested(levels: int) -> dict:
    value: dict = {"leaf": 1}
    for _ in range(levels - 1):
        value = {"a": value}
    return value


def test_a_usual_batch_takes_the_direct_path_and_gets_the_same_events(api):
    raw = json.dumps({"events": make_events(random.Random(3), "t1", 0, 20, "a goal", 1_764_600_000_000)}).encode()
    fast, slow = both(raw)
    assert fast is not None and fast.model_dump() == slow.model_dump()


@pytest.mark.parametrize(("raw", "refusal"), [
    (b'{"events": [{"event_id": "e1", "type": "user_input", "content": {"text": "a \\ud800 b"}}]}', InvalidInput),
    (json.dumps({"events": [{"event_id": f"e{i}", "type": "llm_reasoning", "content": {"text": "x"}}
                            for i in range(101)]}).encode(), PayloadTooLarge),
    (b'{"events": [{"event_id": "e1", "type": "user_input", "content": {"text": "a\x01b"}}]}', MalformedRequest),
    (b'{"events": [{"event_id": "e1", "type": "user_input", "content": {}}]}', InvalidInput),
    (b'{"events": [', MalformedRequest),
])
def test_what_the_general_path_refuses_is_left_to_it(api, raw, refusal):
    fast, slow = both(raw)
    assert fast is None and isinstance(slow, refusal)


def test_depth_counts_as_the_general_path_counts_it(api):
    # the body, its list and the event are 3 levels: content nested MAX_DEPTH - 3 deep is at the limit
    at_limit = {"events": [{"event_id": "e1", "type": "state_change", "content": {"key": "k", "value": nested(MAX_DEPTH - 4)}}]}
    fast, slow = both(json.dumps(at_limit).encode())
    assert fast is not None and fast.model_dump() == slow.model_dump()
    over = {"events": [{"event_id": "e1", "type": "state_change", "content": {"key": "k", "value": nested(MAX_DEPTH - 3)}}]}
    fast, slow = both(json.dumps(over).encode())
    assert fast is None and isinstance(slow, InvalidInput) and "nested deeper" in slow.message
    deep_context = {"events": [{"event_id": "e1", "type": "llm_reasoning", "content": {"text": "x"},
                                "context": {"goal": "g", "trace": nested(MAX_DEPTH - 3)}}]}
    fast, slow = both(json.dumps(deep_context).encode())
    assert fast is None and isinstance(slow, InvalidInput)


def test_a_byte_order_mark_is_read_by_the_general_path(api):
    raw = b"\xef\xbb\xbf" + json.dumps({"events": [{"event_id": "e1", "type": "llm_reasoning", "content": {"text": "x"}}]}).encode()
    fast, slow = both(raw)
    assert fast is None and isinstance(slow, s.EventsIn)


scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=False),
    st.text(max_size=8), st.sampled_from(["ok", "error", "positive", "negative", " a ", "a b", "get_weather", "\t", "é", "\x00"]),
)
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
                      max_leaves=12)
content_keys = st.sampled_from(["tool", "params", "status", "result", "error", "available_tools", "text", "sentiment",
                                "key", "value", "recall_id", "other"])
event = st.fixed_dictionaries(
    {"event_id": st.sampled_from(["e1", "e2", "", " e3 ", "a b", "x" * 201, "ok.id:1"]),
     "type": st.sampled_from([*s.CONTENT_MODELS, "bogus"])},
    optional={
        "timestamp": st.one_of(st.integers(-5, 2**53), st.floats(allow_nan=False), st.booleans(),
                               st.sampled_from(["2026-01-01T00:00:00Z", "2026-01-01", "0001-01-01T00:00:00+01:00", "x"])),
        "node_id": st.sampled_from(["n1", None, "bad id"]),
        "parent_id": st.sampled_from(["n0", None]),
        "context": st.one_of(st.dictionaries(st.sampled_from(["goal", "subtask", "last_user_input", "extra"]), values, max_size=3), values),
        "content": st.one_of(st.dictionaries(content_keys, values, max_size=5), values),
        "surplus": values,
    },
)
extras = st.dictionaries(st.sampled_from(["note", "trace", "n"]), values, max_size=2)
contents = {
    "tool_call": st.fixed_dictionaries({"tool": st.sampled_from(["get_weather", "sql.query", "a b"])},
                                       optional={"params": st.dictionaries(st.text(max_size=3), values, max_size=3),
                                                 "status": st.sampled_from(["ok", "error"]), "result": values, "error": values,
                                                 "available_tools": st.lists(st.sampled_from(["x", "y.z"]), max_size=2)}),
    "user_input": st.fixed_dictionaries({"text": st.text(max_size=10)}),
    "llm_reasoning": st.fixed_dictionaries({"text": st.text(max_size=10)}),
    "feedback": st.fixed_dictionaries({}, optional={"text": st.text(max_size=5), "sentiment": st.sampled_from(["positive", "negative", None])}),
    "state_change": st.fixed_dictionaries({"key": st.sampled_from(["k", "order status"])}, optional={"value": values}),
    "recall": st.fixed_dictionaries({"recall_id": st.sampled_from(["r_1", "rc:2"])}),
}
valid_event = st.sampled_from(sorted(contents)).flatmap(lambda kind: st.fixed_dictionaries(
    {"event_id": st.sampled_from(["e1", "e2", "ok.id:1", " e3 "]), "type": st.just(kind),
     "content": st.tuples(contents[kind], extras).map(lambda parts: {**parts[1], **parts[0]})},
    optional={"timestamp": st.one_of(st.integers(0, 2**44), st.floats(0, 2e12), st.sampled_from(["2026-01-01T10:00:00+02:00", "2026-01-01"])),
              "node_id": st.sampled_from(["n1", None]), "parent_id": st.sampled_from(["n0", None]),
              "context": st.fixed_dictionaries({}, optional={"goal": st.text(max_size=5), "subtask": st.none(), "trace": values})}))
bodies = st.one_of(
    st.fixed_dictionaries({"events": st.lists(valid_event, min_size=1, max_size=4)}),
    st.fixed_dictionaries({"events": st.lists(st.one_of(valid_event, event), max_size=3)}),
    st.fixed_dictionaries({"events": st.lists(event, max_size=3)}),
    st.fixed_dictionaries({"events": st.lists(event, max_size=2)}, optional={"more": values}),
    values,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(bodies, st.sampled_from(["", " ", "\n"]))
def test_any_body_the_direct_path_takes_is_the_one_the_general_path_builds(api, body, pad):
    raw = (pad + json.dumps(body, ensure_ascii=False) + pad).encode("utf-8", "surrogatepass")
    fast, slow = both(raw)
    if fast is not None:
        assert isinstance(slow, s.EventsIn), slow
        assert fast.model_dump() == slow.model_dump()
