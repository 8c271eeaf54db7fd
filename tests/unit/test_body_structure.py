"""The body structure check on wide bodies: many containers, each shallow, are not deep."""
from __future__ import annotations

import json

import pytest

from chalicelib.api.structure import MAX_DEPTH, check_structure
from chalicelib.domain.errors import InvalidInput


def nested(depth: int) -> dict:
    value: dict = {"leaf": 1}
    for _ in range(depth - 1):
        value = {"a": value}
    return value


def check(value) -> None:
    check_structure(json.dumps(value).encode(), value)


def test_a_wide_body_at_the_depth_limit_passes_and_one_level_more_names_its_place():
    wide = {"events": [{"content": {"params": {"ids": [1, 2]}, "items": [{"x": {}}]}} for _ in range(50)]}
    check(wide)  # 250 containers, 6 deep
    check({"events": [nested(MAX_DEPTH - 2)] * 20})
    with pytest.raises(InvalidInput, match=r"events\[3\](\.a)+: nested deeper than 32 levels"):
        check({"events": [nested(2)] * 3 + [nested(MAX_DEPTH - 1)] + [nested(2)] * 20})


def test_a_lone_surrogate_is_found_in_a_wide_body_without_deep_nesting():
    body = {"events": [{"text": "ok"}] * 40 + [{"text": "bad \ud800"}]}
    with pytest.raises(InvalidInput, match=r"events\[40\]\.text: not valid Unicode text"):
        check_structure(json.dumps(body).encode(), body)
