"""Keeping the vector index in step with the experiences: a lesson's vector and its entry."""
from __future__ import annotations

from typing import Any

from ..domain.models import Experience
from ..ports import IndexEntry
from .deps import Deps


def embed_texts(deps: Deps, texts: list[str], known: dict[str, Any]) -> dict[str, Any]:
    """Vectors of ``texts`` by text; ``known`` ones are reused and the cache is filled in place
    (embedding is the costly step of a review)."""
    missing = [t for t in dict.fromkeys(texts) if t not in known]
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
    the other texts are embedded."""
    if not experiences:
        return
    vectors = embed_texts(deps, [t for e in experiences for t in e.embedding_texts()], dict(known or {}))
    deps.index.upsert(
        tenant_id,
        [
            IndexEntry(e.experience_id, experience_vector(e, vectors), e.agent_id, e.user_id, tuple(e.tools), e.task_type,
                       tuple(e.tags), e.search_text(), e.intent)
            for e in experiences
        ],
    )
