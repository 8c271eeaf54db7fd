"""Late interaction in recall: when two look-alike lessons tie on their pooled vectors, the one in
which the query's distinguishing word finds its match ranks first."""
from __future__ import annotations

import hashlib
import re
from dataclasses import replace

import numpy as np
import pytest

from chalicelib.domain.interaction import blended, maxsim
from chalicelib.domain.lexical import STOPWORDS
from chalicelib.domain.models import Experience
from chalicelib.services import recall
from chalicelib.services.indexing import index_experiences
from tests.support.fakes import FakeClock, fake_deps

DIM = 64


def word_vector(word: str) -> np.ndarray:
    seed = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=4).digest(), "little")
    v = np.random.default_rng(seed).normal(size=DIM)
    return v / np.linalg.norm(v)


class PooledTieEmbedder:
    """Every text has the same pooled vector (so cosine cannot tell lessons apart); each content
    word has a token vector of its own."""

    name, dim, similarity_floor = "tie", DIM, 0.0

    def __init__(self) -> None:
        self.token_calls: list[list[str]] = []

    def embed(self, texts, query: bool = False) -> np.ndarray:
        return np.tile(word_vector("same"), (len(texts), 1)).astype(np.float32)

    def token_vectors(self, texts) -> list[np.ndarray]:
        self.token_calls.append(list(texts))
        return word_tokens(texts)


def word_tokens(texts) -> list[np.ndarray]:
    out = []
    for t in texts:
        words = [w for w in re.findall(r"[a-z0-9]+", t.lower()) if w not in STOPWORDS]
        out.append(np.array([word_vector(w) for w in words], dtype=np.float16).reshape(-1, DIM))
    return out


LAMP = "Plate read refused with INSTRUMENT_NOT_READY after the lamp was replaced."
CHAMBER = "Plate read refused with INSTRUMENT_NOT_READY while the chamber was still warming."


def lessons(weight: float, embedder=None, **overrides):
    embedder = embedder or PooledTieEmbedder()
    # it gives its tokens' vectors (made apart from its embedding, unless ``token_pass`` says otherwise)
    overrides = {"token_embedder": embedder, **overrides}
    deps = fake_deps(FakeClock(), embedder=embedder, recall_late_weight=weight, **overrides)
    # the lexical part off: this shows the late part alone (BM25 would also see the shared word)
    deps = replace(deps, weights=replace(deps.weights, lexical=0.0, lexical_untooled=0.0))
    now = deps.clock.now()
    # "a-chamber" wins a tie on its id: without late interaction it comes first
    for n, (exp_id, situation) in enumerate((("z-lamp", LAMP), ("a-chamber", CHAMBER))):
        fix = f"Fix the reader first (way {n})."
        exp = Experience(tenant_id="t1", experience_id=exp_id, situation=situation, action="", result="",
                         lesson=fix, advice=fix, created_at=now,
                         updated_at=now, renewed_at=now, tools=["plate_reader_run"])
        deps.experiences.put(exp)
        index_experiences(deps, "t1", [exp])
    return deps


def ranked(deps, query: str) -> list[str]:
    hits, _ = recall.recall(deps, "t1", query, tools=["plate_reader_run"])
    return [h.experience.experience_id for h in hits]


def test_the_lesson_holding_the_querys_distinguishing_word_ranks_first_when_pooled_vectors_tie():
    query = "new lamp fitted yesterday, plate read refused"
    assert ranked(lessons(0.0), query) == ["a-chamber", "z-lamp"]
    assert ranked(lessons(0.2), query) == ["z-lamp", "a-chamber"]
    assert ranked(lessons(0.2), "chamber warming, plate read refused")[0] == "a-chamber"


def test_a_negated_word_is_not_looked_for_in_the_lessons():
    deps = lessons(0.2)
    assert ranked(deps, "plate read refused, the chamber is warming; no new lamp")[0] == "a-chamber"
    query_text = deps.embedder.token_calls[-1][0]
    assert "lamp" not in query_text and "chamber" in query_text


def test_maxsim_is_the_mean_of_each_query_tokens_best_match():
    a, b, c = np.eye(3)
    assert maxsim(np.array([a, b]), np.array([a, c])) == pytest.approx(0.5)
    assert maxsim(np.array([a]), np.zeros((0, 3))) == 0.0


def test_blending_moves_scores_around_the_candidates_mean_within_0_1():
    assert blended([0.5, 0.5], [0.9, 0.1], 0.5) == pytest.approx([0.7, 0.3])
    assert blended([0.99, 0.0], [1.0, 0.0], 1.0) == [1.0, 0.0]


def test_with_rare_on_a_token_the_candidates_all_match_counts_less_than_one_only_some_match():
    from chalicelib.domain.interaction import best_matches, late_scores

    # rows: texts, columns: query tokens; token 0 is matched well by both texts, token 1 by one
    best = np.array([[1.0, 0.2], [0.6, 0.6]], dtype=np.float32)
    assert late_scores(best) == pytest.approx([0.6, 0.6])
    assert late_scores(best, rare=True) == pytest.approx([0.4, 0.6])
    a, b = np.eye(2)
    assert best_matches(np.array([a, b]), [np.array([a]), np.zeros((0, 2))]).tolist() == [[1.0, 0.0], [0.0, 0.0]]


def test_late_interaction_runs_on_the_token_vectors_it_is_given_not_on_those_an_embedder_happens_to_have():
    """Capabilities are stated where the adapters are chosen, never probed for: this embedder
    has ``token_vectors``, but no one said it gives them."""
    deps = lessons(0.2, token_embedder=None)
    assert not deps.late_on
    assert ranked(deps, "new lamp fitted yesterday, plate read refused") == ["a-chamber", "z-lamp"]
    assert deps.embedder.token_calls == []


def test_the_composition_root_states_what_the_adapters_give_late_interaction(tmp_path):
    from chalicelib.container import build_embedded
    from chalicelib.settings import Settings

    minilm = build_embedded(Settings(data_dir=str(tmp_path / "minilm"), embedder="minilm", admin_key="k"))
    assert minilm.token_embedder is minilm.embedder and minilm.token_pass is minilm.embedder
    assert minilm.token_index is minilm.index and minilm.late_on and minilm.keeps_late_tokens
    hashed = build_embedded(Settings(data_dir=str(tmp_path / "hash"), embedder="hash", admin_key="k"))
    assert (hashed.token_embedder, hashed.token_pass, hashed.late_on, hashed.keeps_late_tokens) == (None, None, False, False)
