"""Tenant names that read alike share one key; names that read differently do not."""
from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chalicelib.domain.tenant_names import name_key, same_name

LOOK_ALIKES = {
    "case": "ACME Corp",
    "full width": "ＡＣＭＥ Ｃｏｒｐ",
    "zero-width space": "ac\u200bme corp",
    "zero-width joiner": "acme\u200d corp",
    "soft hyphen": "ac\u00adme corp",
    "right-to-left mark": "\u200facme corp",
    "byte order mark": "\ufeffacme corp",
    "variation selector": "acme\ufe0f corp",
    "no-break and doubled spaces": "acme\u00a0\u00a0corp ",
    "ideographic space": "acme\u3000corp",
}


@pytest.mark.parametrize("name", list(LOOK_ALIKES.values()), ids=list(LOOK_ALIKES))
def test_a_look_alike_has_the_key_of_the_plain_name(name):
    assert name_key(name) == name_key("acme corp") == "acme corp"


def test_composed_and_decomposed_accents_and_compatibility_forms_agree():
    assert same_name("caf\u00e9", "cafe\u0301") and same_name("CAF\u00c9", "caf\u00e9")
    assert same_name("Stra\u00dfe", "STRASSE") and same_name("\ufb01ne", "fine")
    assert same_name("acme\u2460", "acme1")  # circled digit one


@pytest.mark.parametrize("a, b", [("acme", "acme2"), ("acme", "acne"), ("café", "cafe"), ("acme corp", "acmecorp"), ("a-b", "a_b")])
def test_names_that_read_differently_stay_different(a, b):
    assert not same_name(a, b)


def test_a_name_of_nothing_visible_has_an_empty_key():
    assert name_key("\u200b\u200d\ufeff ") == ""


@given(st.text(max_size=40))
def test_the_key_is_its_own_key(name):
    assert name_key(name_key(name)) == name_key(name)
