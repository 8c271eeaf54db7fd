"""The pure rules of the DynamoDB adapters: key encodings, item budgets, cursors (no server)."""
from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest

pytest.importorskip("pynamodb")

from chalicelib.adapters.cursors import encode_cursor  # noqa: E402
from chalicelib.adapters.dynamo.items import (  # noqa: E402
    HEAD,
    ORIGINAL_BYTES,
    TRUNCATED,
    TRUNCATED_KEYS,
    compose,
    decode_key_cursor,
    decode_pair_cursor,
    fit,
    fit_fields,
    scope_key,
    shard_of,
    size_of,
    time_key,
    us_key,
    us_key_bound,
)
from chalicelib.domain.errors import InvalidInput  # noqa: E402

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
ID_CHARS = "ABCXYZabcxyz0189._:@/+=-"  # every kind of character the API allows in an id


# --- keys ---------------------------------------------------------------------------------------


def test_composite_keys_sort_like_the_tuples_they_join():
    pairs = [(a, b) for a in ["t1", "t1a", "t1-", "t1.", "t", "t10", "T1", "t1@"] for b in ["x", "x0", "x-", "y", ""] if b]
    assert sorted(pairs) == sorted(pairs, key=lambda p: compose(*p))


def test_every_character_the_api_allows_in_an_id_sorts_above_the_separator():
    assert all(c > "#" for c in ID_CHARS)
    assert compose("t" + ID_CHARS, "x") == f"t{ID_CHARS}#x"


@pytest.mark.parametrize("bad", ["", "a#b", "a b", "a!b", 'a"b', "a\x00b"])
def test_an_id_that_would_break_key_order_is_refused(bad):
    with pytest.raises(InvalidInput):
        compose("t1", bad)


def test_time_keys_order_by_time_then_by_id_to_the_microsecond():
    keys = [
        time_key(T0 + timedelta(microseconds=2), "a"),
        time_key(T0 + timedelta(microseconds=1), "zzz"),
        time_key(T0 + timedelta(microseconds=1), "b"),
        time_key(T0 + timedelta(days=365 * 50), "a"),
    ]
    assert sorted(keys) == [keys[2], keys[1], keys[0], keys[3]]


def test_the_bound_of_a_time_is_above_every_key_at_that_time_and_below_the_next():
    assert us_key(5, "t", "x") < us_key_bound(5) <= us_key(6, "a")
    assert us_key(4, "zzzz") < us_key_bound(5)


def test_shards_are_stable_and_spread():
    assert shard_of("t1#x1", 4) == shard_of("t1#x1", 4)  # crc32: the same in every process
    assert {shard_of(f"t1#x{i}", 4) for i in range(100)} == {"0", "1", "2", "3"}


def test_a_scope_key_tells_none_from_an_empty_string_and_fields_apart():
    keys = {
        scope_key("t1", None, None, "fp"),
        scope_key("t1", "", None, "fp"),
        scope_key("t1", None, "", "fp"),
        scope_key("t1", "a", None, "fp"),
        scope_key("t1", None, "a", "fp"),
    }
    assert len(keys) == 5
    assert all(len(k) == 64 for k in keys)


# --- fit ----------------------------------------------------------------------------------------


def test_a_value_that_fits_is_returned_unchanged():
    value = {"tool": "git", "output": "x" * 100}
    assert fit(value, 1000) is value


def test_the_largest_entry_is_cut_and_the_small_ones_survive_with_a_marker():
    value = {"tool": "git", "status": "error", "output": "line\n" * 100_000}
    got = fit(value, 10_000)
    assert size_of(got) <= 10_000
    assert (got["tool"], got["status"]) == ("git", "error")
    assert got[TRUNCATED] is True
    assert got[ORIGINAL_BYTES] == size_of(value)
    assert got[TRUNCATED_KEYS] == ["output"]
    assert got["output"].startswith("line\nline\n") and size_of(got) > 9_900  # cut to fit, no more


def test_a_nested_entry_is_cut_to_a_prefix_of_its_json():
    value = {"rows": [{"id": i, "text": "ü" * 20} for i in range(5_000)], "n": 5_000}
    got = fit(value, 20_000)
    assert size_of(got) <= 20_000
    assert got["n"] == 5_000
    assert got["rows"].startswith('[{"id":0,"text":"üü')


def test_many_small_entries_fall_back_to_a_marked_head():
    value = {f"k{i}": i for i in range(20_000)}
    got = fit(value, 5_000)
    assert size_of(got) <= 5_000
    assert got[TRUNCATED] is True and got[ORIGINAL_BYTES] == size_of(value)
    assert got[HEAD].startswith('{"k0":0,"k1":1')


def test_multibyte_text_is_cut_on_a_character_boundary():
    got = fit({"text": "日本語" * 100_000}, 3_001)
    assert size_of(got) <= 3_001
    json.dumps(got)  # no broken surrogate or half character
    assert set(got["text"]) <= set("日本語")


def test_fit_fields_cuts_the_named_fields_until_the_document_fits():
    doc = {"event_id": "e1", "content": {"out": "a" * 50_000}, "context": {"env": "b" * 20_000}}
    got = fit_fields(doc, ("content", "context"), 30_000)
    assert size_of(got) <= 30_000
    assert got["event_id"] == "e1"
    assert got["content"][TRUNCATED] is True
    assert got["context"] == doc["context"]  # the largest alone was enough


# --- cursors ------------------------------------------------------------------------------------


def test_a_key_cursor_round_trips():
    key = {"tenant_id": "t1", "experience_id": "x1", "created_sk": "0001#x1"}
    assert decode_key_cursor(encode_cursor(key), key, {"tenant_id": "t1"}) == key


@pytest.mark.parametrize(
    "cursor",
    [
        "not a cursor",
        encode_cursor([1]),
        encode_cursor({"tenant_id": "t1"}),  # keys missing
        encode_cursor({"tenant_id": "t1", "experience_id": "x1", "created_sk": 5}),
        encode_cursor({"tenant_id": "t1", "experience_id": "x1", "created_sk": ""}),
        encode_cursor({"tenant_id": "t2", "experience_id": "x1", "created_sk": "0001#x1"}),  # another tenant
    ],
)
def test_a_key_cursor_of_another_shape_or_tenant_is_invalid(cursor):
    with pytest.raises(InvalidInput):
        decode_key_cursor(cursor, ["tenant_id", "experience_id", "created_sk"], {"tenant_id": "t1"})


@pytest.mark.parametrize("cursor", ["", "%%%", encode_cursor(["a"]), encode_cursor(["a", 1]), encode_cursor({"a": "b"})])
def test_a_pair_cursor_must_hold_two_strings(cursor):
    with pytest.raises(InvalidInput):
        decode_pair_cursor(cursor)
