"""What recall reads of the store: what ranking needs of every candidate (``recall_candidates``),
and the whole lesson only for those it returns, with the same answer as from whole lessons."""
from __future__ import annotations

import random

import numpy as np
import pytest

from chalicelib.adapters.embedders.hash import HashEmbedder
from chalicelib.adapters.embedded.db import SqliteDatabase
from chalicelib.adapters.embedded.stores import SqliteExperienceStore
from chalicelib.domain.models import Experience, ExperienceStatus
from chalicelib.services import recall
from chalicelib.services.indexing import index_experiences
from tests.support.fakes import FakeClock, InMemoryExperienceStore, fake_deps

TOOLS = ["sql_query", "http_get", "send_email", "kubectl_apply"]
WORDS = "timeout retry schema page limit quote column header token expired namespace rollout".split()


class Counting(SqliteExperienceStore):
    def __init__(self, db: SqliteDatabase) -> None:
        super().__init__(db)
        self.whole_reads: list[str] = []
        self.candidate_reads = 0

    def get_many(self, tenant_id, ids):
        self.whole_reads += list(ids)
        return super().get_many(tenant_id, ids)

    def recall_candidates(self, tenant_id, ids):
        self.candidate_reads += len(ids)
        return super().recall_candidates(tenant_id, ids)


class TokenHashEmbedder(HashEmbedder):
    """The hash embedder with a token vector per word: late interaction runs (it is on by default)."""

    def __init__(self) -> None:
        super().__init__()
        self.token_texts: list[str] = []

    def token_vectors(self, texts):
        self.token_texts += texts
        return [self.embed(t.split()).astype(np.float16) for t in texts]


def lessons(clock: FakeClock, n: int = 40) -> list[Experience]:
    rng = random.Random(5)
    out = []
    for i in range(n):
        words = " ".join(rng.sample(WORDS, 4))
        tools = rng.sample(TOOLS, rng.randint(0, 2))
        now = clock.now()
        out.append(Experience(
            tenant_id="t1", experience_id=f"exp_{i:03d}", situation=f"The call hit {words}.", action="", result="",
            lesson=f"Mind the {words}.", advice=f"Advice {i}: mind the {words}." if i % 7 else "Shared advice.",
            created_at=now, updated_at=now, renewed_at=now, tools=tools, tags=rng.sample(["db", "net", "ops"], 1),
            agent_id="a1" if i % 5 == 0 else None, utility=rng.uniform(0.2, 0.9), confidence=rng.uniform(0.3, 0.9),
            fingerprint=f"fp{i % 9}" if i % 3 == 0 else None,
        ))
    return out


@pytest.mark.parametrize("late", [False, True], ids=["pooled", "late interaction"])
def test_recall_reads_whole_lessons_only_for_its_hits_and_answers_as_from_whole_lessons(tmp_path, late):
    """Late interaction reads the leading candidates' text (``Candidate.embedding_text``), not
    their whole lessons."""
    clock = FakeClock()
    store = Counting(SqliteDatabase(str(tmp_path / "hindsight.db")))
    embedder = TokenHashEmbedder() if late else HashEmbedder()
    tokens = {"token_embedder": embedder} if late else {}
    sqlite_deps = fake_deps(clock, embedder=embedder, experiences=store, **tokens)
    memory_deps = fake_deps(clock, embedder=embedder, experiences=InMemoryExperienceStore(), **tokens)
    for deps in (sqlite_deps, memory_deps):
        for exp in lessons(clock):
            deps.experiences.put(exp)
        index_experiences(deps, "t1", lessons(clock))
    queries = [dict(query=" ".join(random.Random(i).sample(WORDS, 3)), tools=TOOLS[i % 4:i % 4 + 1] if i % 2 else [],
                    agent_id="a1" if i % 3 == 0 else None, top_k=1 + i % 6) for i in range(12)]
    for q in queries:
        store.whole_reads.clear()
        got, advice = recall.recall(sqlite_deps, "t1", **q)
        want, want_advice = recall.recall(memory_deps, "t1", **q)  # whole lessons in hand from the start
        assert [(h.experience, h.score, h.explanation) for h in got] == [(h.experience, h.score, h.explanation) for h in want]
        assert advice == want_advice
        assert got and sorted(store.whole_reads) == sorted(h.experience.experience_id for h in got)
    assert store.candidate_reads > sum(q["top_k"] for q in queries)
    if late:  # it ran, on the lessons' own texts
        lesson_texts = {e.embedding_text() for e in lessons(clock)}
        made = set(embedder.token_texts) - {q["query"] for q in queries}
        assert made and made <= lesson_texts


def test_a_lesson_forgotten_between_the_two_reads_is_not_returned(tmp_path):
    clock = FakeClock()
    store = Counting(SqliteDatabase(str(tmp_path / "hindsight.db")))
    deps = fake_deps(clock, experiences=store)
    exps = lessons(clock, 10)
    for exp in exps:
        store.put(exp)
    index_experiences(deps, "t1", exps)
    first = recall.recall(deps, "t1", "timeout retry", top_k=3)[0]
    gone = first[0].experience

    class ForgetsMeanwhile(Counting):
        def recall_candidates(self, tenant_id, ids):
            read = super().recall_candidates(tenant_id, ids)
            self.put(Experience(**{**gone.__dict__, "status": ExperienceStatus.FORGOTTEN}))  # a forget in between
            return read

    racing = ForgetsMeanwhile(store.db)
    hits, _ = recall.recall(fake_deps(clock, experiences=racing, index=deps.index), "t1", "timeout retry", top_k=3)
    assert gone.experience_id not in [h.experience.experience_id for h in hits]
    assert [h.experience.experience_id for h in hits] == [h.experience.experience_id for h in first[1:]]


def test_a_store_that_read_whole_lessons_for_the_candidates_is_not_asked_for_them_again():
    """DynamoDB reads whole items anyway (``Candidate.whole``): a second read would be a second round trip."""

    class WholeReads(InMemoryExperienceStore):
        def __init__(self) -> None:
            super().__init__()
            self.get_many_calls = 0

        def get_many(self, tenant_id, ids):
            self.get_many_calls += 1
            return super().get_many(tenant_id, ids)

    clock = FakeClock()
    store = WholeReads()
    deps = fake_deps(clock, experiences=store)
    exps = lessons(clock, 12)
    for exp in exps:
        store.put(exp)
    index_experiences(deps, "t1", exps)
    store.get_many_calls = 0
    hits, _ = recall.recall(deps, "t1", "timeout retry", top_k=4)
    assert len(hits) == 4 and store.get_many_calls == 1  # recall_candidates' own read, and no other
