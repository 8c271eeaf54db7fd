"""The numpy index ranks BM25 with the k1 and b it is given (the settings), as the textbook does."""
from __future__ import annotations

import numpy as np
import pytest

from chalicelib.adapters.embedded.index import NumpyVectorIndex
from chalicelib.adapters.embedded.db import SqliteDatabase
from chalicelib.domain.lexical import Bm25Params
from chalicelib.ports import IndexEntry, IndexFilter
from tests.support.fakes import term_score

TEXTS = {"short": "rotate key", "long": "rotate the signing key of the billing service before the audit window closes"}


@pytest.mark.parametrize("params", [Bm25Params(), Bm25Params(k1=1.5, b=0.4), Bm25Params(k1=0.9, b=0.0)])
def test_scores_follow_the_given_parameters(tmp_path, params):
    index = NumpyVectorIndex(SqliteDatabase(str(tmp_path / "v.db")), 2, params)
    index.upsert("t", [IndexEntry(i, np.array([1.0, 0.0]), text=t) for i, t in TEXTS.items()])
    got = dict(index.lexical_search("t", "rotate", IndexFilter(), 5))
    lens = {"short": 2, "long": 9}  # terms after the stopwords ("the", "of")
    avg = sum(lens.values()) / 2
    for i, n in lens.items():
        assert got[i] == pytest.approx(term_score(1, 2, 2, n, avg, params), rel=1e-5)


def test_without_length_normalisation_a_long_text_scores_as_a_short_one(tmp_path):
    index = NumpyVectorIndex(SqliteDatabase(str(tmp_path / "v.db")), 2, Bm25Params(b=0.0))
    index.upsert("t", [IndexEntry(i, np.array([1.0, 0.0]), text=t) for i, t in TEXTS.items()])
    got = dict(index.lexical_search("t", "rotate", IndexFilter(), 5))
    assert got["short"] == pytest.approx(got["long"])


def test_the_light_stemmer_matches_other_forms_of_a_word_and_the_plural_one_does_not(tmp_path):
    entries = [IndexEntry("a", np.array([1.0, 0.0]), text="Ana: I painted a lake at sunrise")]
    plain = NumpyVectorIndex(SqliteDatabase(str(tmp_path / "p.db")), 2, Bm25Params(stemmer="plural"))
    light = NumpyVectorIndex(SqliteDatabase(str(tmp_path / "l.db")), 2)  # the default
    for index in (plain, light):
        index.upsert("t", entries)
    assert plain.lexical_search("t", "what does Ana like painting", IndexFilter(), 5)[0][0] == "a"  # "ana" only
    plain_score = plain.lexical_search("t", "painting", IndexFilter(), 5)
    assert plain_score == [] and [i for i, _ in light.lexical_search("t", "painting", IndexFilter(), 5)] == ["a"]
    # reloaded from disk, the partition tokenizes with the same stemmer
    again = NumpyVectorIndex(SqliteDatabase(str(tmp_path / "l.db")), 2, Bm25Params(stemmer="light"))
    assert [i for i, _ in again.lexical_search("t", "painting", IndexFilter(), 5)] == ["a"]
