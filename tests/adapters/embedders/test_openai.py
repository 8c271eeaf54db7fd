"""The OpenAI embedder with its OpenAI-compatible client against the local OpenAI-compatible stub."""
from __future__ import annotations

import numpy as np
import pytest

from chalicelib.adapters.embedders.hash import HashEmbedder
from chalicelib.adapters.embedders.openai import OpenAIEmbedder
from chalicelib.adapters.openai_http import APIError, Embedding, OpenAICompatibleClient
from chalicelib.domain.vectors import Vector
from devtools.openai_stub import OpenAIStub


@pytest.fixture()
def stub():
    with OpenAIStub() as s:
        yield s


def embedder(stub, dim=64, batch=3):
    client = OpenAICompatibleClient(stub.base_url, "k", max_retries=0)
    return OpenAIEmbedder(client, "text-embedding-3-small", dim, batch_size=batch)


def test_vectors_come_back_in_input_order_normalized_across_batches(stub):
    texts = [f"text number {i}" for i in range(7)]
    got = embedder(stub).embed(texts)
    assert len(got) == 7 and all(isinstance(v, Vector) and len(v) == 64 for v in got)  # no numpy in the Lambda
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    assert np.allclose(got, HashEmbedder(64).embed(texts), atol=1e-5)  # the stub answers in reverse order
    requests = stub.state.requests
    assert [len(r["input"]) for r in requests] == [3, 3, 1]
    assert {r["dimensions"] for r in requests} == {64} and requests[0]["model"] == "text-embedding-3-small"


def test_empty_input_makes_no_call_and_blank_text_is_sent_as_a_space(stub):
    e = embedder(stub)
    assert e.embed([]) == [] and stub.state.requests == []
    e.embed([""])
    assert stub.state.requests[0]["input"] == [" "]


def test_a_failing_endpoint_raises(stub):
    stub.faults(fail=1)
    with pytest.raises(APIError):
        embedder(stub).embed(["x"])


def test_a_zero_embedding_stays_zero_and_a_wrong_dimension_raises(stub):
    class Fixed:
        def __init__(self, vectors):
            self.vectors = vectors

        def embeddings(self, model, input, dimensions):
            return [Embedding(i, v) for i, v in enumerate(self.vectors)]

    zero = OpenAIEmbedder(Fixed([[0.0] * 4, [3.0, 4.0, 0.0, 0.0]]), "m", 4).embed(["a", "b"])
    assert zero == [Vector([0.0] * 4), Vector([0.6, 0.8, 0.0, 0.0])]
    with pytest.raises(ValueError, match="3 dimensions, 4 expected"):
        OpenAIEmbedder(Fixed([[1.0, 0.0, 0.0]]), "m", 4).embed(["a"])
