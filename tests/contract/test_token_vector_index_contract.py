"""Contract of ``ports.TokenVectorIndex``: the token vectors an index keeps with each entry, for
every index backend that keeps them (recall makes them for the others)."""
from __future__ import annotations

import numpy as np
import pytest

from chalicelib.domain.interaction import text_key
from chalicelib.ports import IndexEntry, TokenVectors

from .conftest import DIM

LAMP, CHAMBER = "the lamp was replaced", "the chamber is still warming"


@pytest.fixture
def token_index(vector_index):
    if not hasattr(vector_index, "token_vectors"):
        pytest.skip("this index keeps no token vectors: recall makes them")
    return vector_index


def tokens(n: int, seed: int = 0) -> np.ndarray:
    v = np.random.default_rng(seed).normal(size=(n, DIM)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def entry(exp_id: str, text: str = LAMP, n: int = 3, seed: int = 0, late: bool = True) -> IndexEntry:
    v = np.zeros(DIM, dtype=np.float32)
    v[0] = 1.0
    return IndexEntry(exp_id, v, text=text, late=TokenVectors(text_key(text), tokens(n, seed)) if late else None)


def cosines(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    return np.sum(np.asarray(got, dtype=np.float32) * want, axis=1)


def test_an_entrys_token_vectors_read_back_as_written(token_index):
    token_index.upsert("t1", [entry("a", n=3), entry("b", CHAMBER, n=0, seed=1)])
    got = token_index.token_vectors("t1", {"a": text_key(LAMP), "b": text_key(CHAMBER)})
    assert set(got) == {"a", "b"}
    assert got["a"].shape == (3, DIM) and got["b"].shape == (0, DIM)
    assert cosines(got["a"], tokens(3)).min() > 0.999


def test_the_token_vectors_of_another_text_tenant_or_id_are_not_read(token_index):
    token_index.upsert("t1", [entry("a")])
    token_index.upsert("t2", [entry("a", seed=5)])
    assert token_index.token_vectors("t1", {"a": text_key(LAMP + " yesterday")}) == {}
    assert token_index.token_vectors("t3", {"a": text_key(LAMP)}) == {}
    assert token_index.token_vectors("t1", {"b": text_key(LAMP)}) == {}
    assert cosines(token_index.token_vectors("t2", {"a": text_key(LAMP)})["a"], tokens(3, seed=5)).min() > 0.999
    assert cosines(token_index.token_vectors("t1", {"a": text_key(LAMP)})["a"], tokens(3)).min() > 0.999


def test_token_vectors_go_with_their_entry(token_index):
    token_index.upsert("t1", [entry("a"), entry("b"), entry("c")])
    token_index.delete("t1", ["a"])
    token_index.upsert("t1", [entry("b", late=False)])  # written again without them: none kept
    assert set(token_index.token_vectors("t1", dict.fromkeys("abc", text_key(LAMP)))) == {"c"}


def test_an_entry_written_again_from_another_text_has_that_texts_token_vectors(token_index):
    token_index.upsert("t1", [entry("a")])
    token_index.upsert("t1", [entry("a", CHAMBER, n=2, seed=2)])
    assert token_index.token_vectors("t1", {"a": text_key(LAMP)}) == {}
    assert cosines(token_index.token_vectors("t1", {"a": text_key(CHAMBER)})["a"], tokens(2, seed=2)).min() > 0.999


def test_many_ids_are_read_at_once(token_index):
    token_index.upsert("t1", [entry(f"e{i}", n=1, seed=i) for i in range(1200)])
    got = token_index.token_vectors("t1", {f"e{i}": text_key(LAMP) for i in range(1200)})
    assert len(got) == 1200 and cosines(got["e1100"], tokens(1, seed=1100))[0] > 0.999


def test_token_vectors_survive_a_restart(durable_backend):
    index = durable_backend.index()
    if not hasattr(index, "token_vectors"):
        pytest.skip("this index keeps no token vectors")
    index.upsert("t1", [entry("a")])
    again = durable_backend.reopen().index()
    assert cosines(again.token_vectors("t1", {"a": text_key(LAMP)})["a"], tokens(3)).min() > 0.999


def test_the_token_vectors_of_a_text_are_read_from_any_entry_of_the_tenant(token_index):
    token_index.upsert("t1", [entry("a"), entry("b", CHAMBER, n=2, seed=2)])
    token_index.upsert("t2", [entry("c", "only in t2", n=1, seed=3)])
    got = token_index.token_vectors_of_texts("t1", [text_key(LAMP), text_key(CHAMBER), text_key("only in t2")])
    assert set(got) == {text_key(LAMP), text_key(CHAMBER)}  # never another tenant's
    assert cosines(got[text_key(LAMP)], tokens(3)).min() > 0.999
    assert cosines(got[text_key(CHAMBER)], tokens(2, seed=2)).min() > 0.999
    token_index.delete("t1", ["a"])
    assert token_index.token_vectors_of_texts("t1", [text_key(LAMP)]) == {}
    assert token_index.token_vectors_of_texts("t3", [text_key(LAMP)]) == {}


def test_a_text_many_entries_hold_is_read_while_any_of_them_is_left(token_index):
    """A lesson learned in several scopes: each entry keeps the same text's token vectors; the text's
    are found until the last entry holding it is gone, and never from another tenant's entries."""
    token_index.upsert("t1", [entry(f"s{i}") for i in range(4)] + [entry("other", CHAMBER, n=2, seed=2)])
    token_index.upsert("t2", [entry("t2-copy")])
    for gone in ("s0", "s2", "s1"):
        token_index.delete("t1", [gone])
        got = token_index.token_vectors_of_texts("t1", [text_key(LAMP), text_key(CHAMBER)])
        assert set(got) == {text_key(LAMP), text_key(CHAMBER)}
        assert cosines(got[text_key(LAMP)], tokens(3)).min() > 0.999
    token_index.delete("t1", ["s3"])
    assert set(token_index.token_vectors_of_texts("t1", [text_key(LAMP), text_key(CHAMBER)])) == {text_key(CHAMBER)}
    assert set(token_index.token_vectors_of_texts("t2", [text_key(LAMP)])) == {text_key(LAMP)}
