"""The weight fit re-ranks candidates exactly as the service scores them."""
from __future__ import annotations

import pytest

from bench.eval import fit

HAND = fit.HAND


def parts(sem, lex, tag=0.0):
    return {"semantic": sem, "lexical": lex, "tag_match": tag, "freshness": 1.0, "utility": 0.5, "confidence": 0.5}


@pytest.mark.parametrize("with_tag", [True, False])
def test_whether_tag_match_counted_is_read_back_from_the_returned_score(with_tag):
    e = parts(0.6, 0.3, 0.0)
    hit = {"explanation": e, "score": round(fit.weighted(e, HAND, with_tag), 4)}
    assert fit.tag_counts(hit, HAND) is with_tag


def test_more_lexical_weight_lifts_the_lexical_match_above_the_semantic_one():
    sem = {"families": ["a"], "explanation": parts(0.7, 0.0), "with_tag": False}
    lex = {"families": ["b"], "explanation": parts(0.5, 0.6), "with_tag": False}
    assert [h["families"] for h in fit.rerank([sem, lex], HAND)] == [["a"], ["b"]]
    assert [h["families"] for h in fit.rerank([sem, lex], {**HAND, "lexical": 0.6})] == [["b"], ["a"]]


def test_evaluate_scores_both_dev_sets_and_counts_sibling_first():
    own = {"families": ["f"], "explanation": parts(0.5, 0.6), "with_tag": False}
    sib = {"families": ["g"], "explanation": parts(0.7, 0.0), "with_tag": False}
    data = {"reuse_dev": [{"family": "f", "sibling": "g", "known": True, "hits": [sib, own]},
                          {"family": "f", "sibling": "g", "known": False, "hits": [sib, own]}],
            "locomo": [{"evidence": ["D1:1"], "hits": [{"dias": ["D2:1"], "explanation": parts(0.7, 0.0), "with_tag": False},
                                                       {"dias": ["D1:1"], "explanation": parts(0.5, 0.6), "with_tag": False}]}]}
    hand = fit.evaluate(data, HAND)
    assert hand["reuse_dev"]["hit@1"] == 0.0 and hand["reuse_dev"]["sibling@1"] == 1.0
    assert hand["locomo"] == {"turn_any@10": 1.0, "session_r@10": 1.0}
    lexical = fit.evaluate(data, {**HAND, "lexical": 0.6})
    assert lexical["reuse_dev"]["hit@1"] == 1.0 and lexical["reuse_dev"]["sibling@1"] == 0.0
    assert lexical["objective"] > hand["objective"]
