"""Late interaction with the lessons' token vectors kept by the index: made by the pass that embeds
a lesson when it is indexed, read at recall, so that a recall runs the model once, for the query."""
from __future__ import annotations

import sqlite3
from dataclasses import replace

import pytest

from chalicelib.adapters.embedded.index import NumpyVectorIndex
from chalicelib.adapters.embedded.db import SqliteDatabase
from chalicelib.services import recall
from chalicelib.services.experiences import forget
from chalicelib.services.indexing import Embedded, VectorCache, embed_texts, index_experiences
from tests.service.test_late_interaction import DIM, PooledTieEmbedder, lessons, ranked, word_tokens

QUERY = "new lamp fitted yesterday, plate read refused"


class PassCountingEmbedder(PooledTieEmbedder):
    """Records every pass of the model: the texts of each ``embed`` or ``embed_with_tokens`` call
    (``token_calls``: those of ``token_vectors``, the tokens made at recall)."""

    def __init__(self) -> None:
        super().__init__()
        self.passes: list[list[str]] = []

    def embed(self, texts, query: bool = False):
        self.passes.append(list(texts))
        return super().embed(texts, query)

    def embed_with_tokens(self, texts, query: bool = False):
        self.passes.append(list(texts))
        return PooledTieEmbedder.embed(self, texts, query), word_tokens(texts)


def numpy_index(tmp_path) -> NumpyVectorIndex:
    return NumpyVectorIndex(SqliteDatabase(str(tmp_path / "vectors.db")), DIM)


def keeping(weight: float, embedder: PassCountingEmbedder, tmp_path):
    """``lessons`` with an embedder that makes token vectors in its embedding pass and an index that
    keeps them, both stated as the composition root states them."""
    index = numpy_index(tmp_path)
    return lessons(weight, embedder, index=index, token_pass=embedder, token_index=index)


def kept_rows(tmp_path) -> dict[str, str]:
    """experience id -> tenant of every row of token vectors in the index's file."""
    with sqlite3.connect(tmp_path / "vectors.db") as conn:
        return dict(conn.execute("SELECT experience_id, tenant_id FROM token_vectors"))


def test_a_lessons_token_vectors_are_made_as_it_is_embedded_and_recall_makes_none(tmp_path):
    embedder = PassCountingEmbedder()
    deps = keeping(0.2, embedder, tmp_path)
    assert len(embedder.passes) == 2 and embedder.token_calls == []  # one pass per lesson written
    assert kept_rows(tmp_path) == {"z-lamp": "t1", "a-chamber": "t1"}
    embedder.passes.clear()
    assert ranked(deps, QUERY) == ["z-lamp", "a-chamber"]
    assert embedder.token_calls == []  # neither the candidates' tokens nor the query's made apart
    assert embedder.passes == [[QUERY]]


def test_the_kept_token_vectors_score_as_those_made_at_recall(tmp_path):
    kept = keeping(0.2, PassCountingEmbedder(), tmp_path)
    made = lessons(0.2)  # an embedder without a joint pass: every token vector made at recall
    for query in (QUERY, "chamber warming, plate read refused"):
        a, _ = recall.recall(kept, "t1", query, tools=["plate_reader_run"])
        b, _ = recall.recall(made, "t1", query, tools=["plate_reader_run"])
        assert [h.experience.experience_id for h in a] == [h.experience.experience_id for h in b]
        assert [h.score for h in a] == pytest.approx([h.score for h in b], abs=2e-3)
    assert made.embedder.token_calls and not kept.embedder.token_calls


def test_a_lesson_indexed_without_its_token_vectors_has_them_made_at_recall(tmp_path):
    embedder = PassCountingEmbedder()
    deps = replace(keeping(0.0, embedder, tmp_path), recall_late_weight=0.2)
    assert kept_rows(tmp_path) == {}  # late interaction off: nothing made nor kept
    assert all(len(p) == 1 for p in embedder.passes)
    assert ranked(deps, QUERY) == ["z-lamp", "a-chamber"]
    (made,) = embedder.token_calls
    assert sorted(made) == sorted(h.experience.embedding_text() for h in recall.recall(deps, "t1", QUERY)[0])


def test_a_lesson_whose_text_changed_is_not_read_with_the_old_texts_tokens(tmp_path):
    embedder = PassCountingEmbedder()
    deps = keeping(0.2, embedder, tmp_path)
    lamp = deps.experiences.get("t1", "z-lamp")
    changed = replace(lamp, situation=lamp.situation.replace("lamp", "bulb"))
    deps.experiences.put(changed)  # in the store, not yet indexed again
    ranked(deps, QUERY)
    assert embedder.token_calls == [[changed.embedding_text()]]


def test_a_forgotten_lessons_token_vectors_are_gone(tmp_path):
    deps = keeping(0.2, PassCountingEmbedder(), tmp_path)
    forget(deps, "t1", "z-lamp", "wrong")
    assert kept_rows(tmp_path) == {"a-chamber": "t1"}


def test_indexing_takes_the_token_vectors_of_the_pass_a_review_made(tmp_path):
    embedder = PassCountingEmbedder()
    deps = keeping(0.2, embedder, tmp_path)
    lamp = deps.experiences.get("t1", "z-lamp")
    embedder.passes.clear()
    known = Embedded()
    embed_texts(deps, list(lamp.embedding_texts()), known)  # as distill embeds a new lesson's texts
    index_experiences(deps, "t1", [lamp], known)
    assert len(embedder.passes) == 1
    # a worker's cache keeps vectors across batches, token vectors for one batch: the next batch
    # that indexes the lesson (learned again, merged) takes those the index keeps from the same text
    cache = VectorCache(10)
    embed_texts(deps, list(lamp.embedding_texts()), cache)
    cache.trim()
    index_experiences(deps, "t1", [lamp], cache)
    index_experiences(deps, "t1", [lamp], cache)
    assert len(embedder.passes) == 2 and embedder.token_calls == []
    assert set(kept_rows(tmp_path)) == {"z-lamp", "a-chamber"}
    # ... and recall reads them as they were made
    assert ranked(deps, QUERY) == ["z-lamp", "a-chamber"] and embedder.token_calls == []


def test_a_lesson_indexed_again_with_a_new_text_has_its_token_vectors_made_again(tmp_path):
    embedder = PassCountingEmbedder()
    deps = keeping(0.2, embedder, tmp_path)
    lamp = deps.experiences.get("t1", "z-lamp")
    changed = replace(lamp, situation=lamp.situation.replace("lamp", "bulb"))
    cache = VectorCache(10)
    embed_texts(deps, list(changed.embedding_texts()), cache)
    cache.trim()  # its vectors kept, its token vectors not
    embedder.passes.clear()
    index_experiences(deps, "t1", [changed], cache)
    # the index's token vectors are of the old text: the new one's are made, in one pass
    assert embedder.passes == [[changed.embedding_text()]]
    # a lesson of another id (another scope) from a text the tenant's index holds takes its tokens
    cache.trim()  # the batch's token vectors gone: only the index has them
    embedder.passes.clear()
    index_experiences(deps, "t1", [replace(changed, experience_id="z-bulb-2", user_id="u2")], cache)
    assert embedder.passes == []
    # another tenant's lesson (the same id, the same text) is never given t1's
    embedder.passes.clear()
    index_experiences(deps, "t2", [replace(lamp, tenant_id="t2")], cache)
    assert embedder.passes == [[lamp.embedding_text()]]


def test_a_reindex_makes_every_token_vector_again(tmp_path):
    from chalicelib.services.maintenance import reindex_tenant

    embedder = PassCountingEmbedder()
    deps = keeping(0.2, embedder, tmp_path)
    active = [e.experience_id for e in deps.experiences.list("t1", limit=100).items]
    embedder.passes.clear()
    assert reindex_tenant(deps, "t1") == len(active)
    # the index keeps every lesson's token vectors from the same texts: a reindex (after the
    # embedder changed, say) makes them again all the same
    made = [t for p in embedder.passes for t in p]
    lessons_texts = {e.embedding_text() for e in deps.experiences.list("t1", limit=100).items}
    assert lessons_texts <= set(made)
