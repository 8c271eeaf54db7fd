"""Keeping the vector index in step with the experiences: a lesson's vector and its entry."""
from __future__ import annotations

import threading
from collections import OrderedDict
from itertools import islice
from typing import Any

from ..domain.models import Experience
from ..ports import IndexEntry
from .deps import Deps


class VectorCache(OrderedDict):
    """Vectors by text, kept from one review to the next by a worker: a lesson that recurs (the
    same failure in many tasks, written with its literals generalized) has the same texts each
    time, and embedding them is most of a review's cost. Entries go, least recently used first,
    only when ``trim`` is called (between batches), never while a review holds them. Reviews
    running at once may share it: an entry is never removed while they run."""

    def __init__(self, max_entries: int) -> None:
        super().__init__()
        self.max_entries = max_entries
        self.hits = self.misses = 0
        self.lock = threading.Lock()

    def touch(self, texts: list[str]) -> None:
        for t in texts:
            self.move_to_end(t)  # the most recently used

    def trim(self) -> None:
        for t in list(islice(iter(self), max(0, len(self) - self.max_entries))):
            del self[t]


def embed_texts(deps: Deps, texts: list[str], known: dict[str, Any]) -> dict[str, Any]:
    """Vectors of ``texts`` by text; ``known`` ones are reused and the cache is filled in place
    (embedding is the costly step of a review)."""
    wanted = list(dict.fromkeys(texts))
    if isinstance(known, VectorCache):
        with known.lock:
            missing = [t for t in wanted if t not in known]
            known.touch([t for t in wanted if t in known])
            known.hits += len(wanted) - len(missing)
            known.misses += len(missing)
        if missing:
            vectors = deps.embedder.embed(missing)  # outside the lock: the others' reviews go on
            with known.lock:
                known.update(zip(missing, vectors))
        return known
    missing = [t for t in wanted if t not in known]
    if missing:
        known.update(zip(missing, deps.embedder.embed(missing)))
    return known


def experience_vector(exp: Experience, vectors: dict[str, Any]) -> Any:
    """The lesson's vector: the normalised sum of its texts' vectors (the lesson in its situation,
    and each task it was learned from), so it sits among the tasks it helps with."""
    total = sum(vectors[t] for t in exp.embedding_texts())
    norm = float((total @ total) ** 0.5)
    return total / norm if norm else total


def index_experiences(deps: Deps, tenant_id: str, experiences: list[Experience], known: dict[str, Any] | None = None) -> None:
    """Upsert the experiences' index entries. ``known``: vectors already computed, by text; only
    the other texts are embedded (and added to it)."""
    if not experiences:
        return
    vectors = embed_texts(deps, [t for e in experiences for t in e.embedding_texts()], {} if known is None else known)
    deps.index.upsert(
        tenant_id,
        [
            IndexEntry(e.experience_id, experience_vector(e, vectors), e.agent_id, e.user_id, tuple(e.tools), e.task_type,
                       tuple(e.tags), e.search_text(), e.intent)
            for e in experiences
        ],
    )
