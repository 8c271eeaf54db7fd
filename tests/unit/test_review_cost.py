"""What keeps a review's work linear in the trajectory (the times are in bench/review_cost.py)."""
from __future__ import annotations

import re
from dataclasses import replace

from hypothesis import given, settings, strategies as st

from chalicelib.domain.attribution import FIX_HORIZON, attribute
from chalicelib.domain.generalize import LiteralValues, generalize
from tests.support.builders import call


def test_a_text_is_matched_only_against_the_literals_whose_first_word_it_holds():
    values = LiteralValues({f"ord-{i}": "<order>" for i in range(5000)} | {"New York City": "<city>", "York": "<town>"})
    assert values.candidates("Order ord-17 for New York City") == ["New York City", "ord-17", "York"]
    assert values.candidates("nothing known here") == []


def _one_literal_at_a_time(text: str, values: dict[str, str]) -> str:
    for literal in sorted(values, key=len, reverse=True):
        text = re.compile(rf"(?<![\w<-]){re.escape(literal)}(?![\w>-])", re.I).sub(values[literal], text)
    return generalize(text)


_word = st.sampled_from(["paris", "Paris", "new", "York", "ord-1", "#design", "@omar", "a.b", "x_y", "--", "42", "é"])


@settings(max_examples=300, deadline=None)
@given(
    literals=st.lists(st.lists(_word, min_size=1, max_size=3).map(" ".join), max_size=8, unique=True),
    text=st.lists(st.one_of(_word, st.sampled_from([" ", ", ", "/", "-", "<", ">", "."])), max_size=14).map("".join),
)
def test_generalizing_by_first_word_gives_what_trying_every_literal_gave(literals, text):
    values = {lit: f"<p{i}>" for i, lit in enumerate(literals)}
    assert generalize(text, LiteralValues(values)) == _one_literal_at_a_time(text, values)


def test_the_fix_of_a_failed_call_is_looked_for_in_the_calls_that_follow_it_closely():
    near = [call("book", {"city": "Paris"}, ok=False, error="InvalidCity: Paris"), call("book", {"city": "PAR"})]
    assert [c.kind for c in attribute(near).contrasts] == ["param"]

    failed = call("book", {"city": "Paris"}, ok=False, error="InvalidCity: Paris")
    unrelated = [call("get_weather", {"day": str(i)}) for i in range(FIX_HORIZON)]
    far = [failed, *unrelated, call("book", {"city": "PAR"})]
    assert all(c.failed is not failed or c.worked.tool != "book" for c in attribute(far).contrasts)


def test_in_a_fan_out_a_failed_call_is_paired_with_the_next_success_under_the_same_parent():
    root = call("plan")
    children = [
        call("book", {"city": "Paris"}, ok=False, error="InvalidCity"), call("book", {"city": "PAR"}),
        call("book", {"city": "Lyon"}, ok=False, error="InvalidCity: Lyon"), call("book", {"city": "LYS"}),
    ]
    children = [replace(c, parent_id=root.event_id) for c in children]
    contrasts = attribute([root, *children]).contrasts
    assert {(c.failed.content["params"]["city"], c.worked.content["params"]["city"]) for c in contrasts} == {
        ("Paris", "PAR"), ("Lyon", "LYS"),
    }
