"""Keeping the vector index in step with the experiences: a lesson's vector and its entry."""
from __future__ import annotations

import threading
from collections import OrderedDict
from contextlib import nullcontext
from itertools import islice
from typing import Any

from ..domain.models import Experience, ExperienceStatus
from ..ports import IndexEntry, TokenVectors
from .deps import Deps


class Embedded(dict):
    """Vectors by text; and ``tokens``: the token vectors the same passes made, by text, when the
    index keeps lessons' token vectors (``Deps.keeps_late_tokens``), so that indexing a lesson
    never runs the model a second time for them."""

    def __init__(self) -> None:
        super().__init__()
        self.tokens: dict[str, Any] = {}


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
        # token vectors of the texts embedded since the last trim (``Embedded.tokens``): kept for
        # the batch that made them: a text's weigh about ten times its vector
        self.tokens: dict[str, Any] = {}

    def touch(self, texts: list[str]) -> None:
        for t in texts:
            self.move_to_end(t)  # the most recently used

    def trim(self) -> None:
        for t in list(islice(iter(self), max(0, len(self) - self.max_entries))):
            del self[t]
        self.tokens.clear()


def embed_texts(deps: Deps, texts: list[str], known: dict[str, Any]) -> dict[str, Any]:
    """Vectors of ``texts`` by text; ``known`` ones are reused and the cache is filled in place
    (embedding is the costly step of a review). When the index keeps lessons' token vectors, the
    same pass makes those of the texts embedded here, into ``known.tokens`` if it has them."""
    wanted = list(dict.fromkeys(texts))
    tokens = getattr(known, "tokens", None) if deps.keeps_late_tokens else None
    if isinstance(known, VectorCache):
        with known.lock:
            missing = [t for t in wanted if t not in known]
            known.touch([t for t in wanted if t in known])
            known.hits += len(wanted) - len(missing)
            known.misses += len(missing)
        if missing:
            vectors, made = _embed(deps, missing, tokens is not None)  # outside the lock: the others' reviews go on
            with known.lock:
                known.update(zip(missing, vectors))
                known.tokens.update(zip(missing, made))
        return known
    missing = [t for t in wanted if t not in known]
    if missing:
        vectors, made = _embed(deps, missing, tokens is not None)
        known.update(zip(missing, vectors))
        if tokens is not None:
            tokens.update(zip(missing, made))
    return known


def _embed(deps: Deps, texts: list[str], with_tokens: bool) -> tuple[Any, list[Any]]:
    if with_tokens and deps.token_pass is not None:
        return deps.token_pass.embed_with_tokens(texts)
    return deps.embedder.embed(texts), []


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
    vectors = embed_texts(deps, [t for e in experiences for t in e.embedding_texts()], Embedded() if known is None else known)
    late = late_tokens(deps, experiences, vectors, tenant_id) if deps.keeps_late_tokens else {}
    deps.index.upsert(
        tenant_id,
        [
            IndexEntry(e.experience_id, experience_vector(e, vectors), e.agent_id, e.user_id, tuple(e.tools), e.task_type,
                       tuple(e.tags), e.search_text(), e.intent, late.get(e.experience_id))
            for e in experiences
        ],
    )


def index_still_active(deps: Deps, tenant_id: str, experiences: list[Experience], known: dict[str, Any] | None = None) -> None:
    """``index_experiences``, then the lessons read again: one forgotten or archived since it was
    read leaves the index again. Its forget wrote the store before deleting the entry, so either
    this read sees it or that delete comes after this upsert: a stale entry never stays."""
    index_experiences(deps, tenant_id, experiences, known)
    if not experiences:
        return
    now = deps.experiences.recall_candidates(tenant_id, [e.experience_id for e in experiences])
    gone = [e.experience_id for e in experiences if (c := now.get(e.experience_id)) is None or c.status is not ExperienceStatus.ACTIVE]
    if gone:
        deps.index.delete(tenant_id, gone)


def late_tokens(
    deps: Deps, experiences: list[Experience], known: dict[str, Any], tenant_id: str | None = None
) -> dict[str, TokenVectors]:
    """Each lesson's token vectors, of the text late interaction reads (``recall.late_text``), by
    experience id: those the pass that embedded the text made (``embed_texts``); else, given the
    ``tenant_id``, those the index already keeps for one of the tenant's lessons from the same text
    (a lesson learned again, merged with what is known or in another scope: its text is the same,
    its vector is not); only the others are embedded again (a text whose vector came from a
    worker's cache of an earlier batch)."""
    from ..domain.interaction import text_key
    from .recall import late_text

    index, embedder = deps.token_index, deps.token_pass
    if index is None or embedder is None:  # nothing makes them in a pass, or nothing keeps them
        return {}
    texts = {e.experience_id: late_text(e, deps.recall_late_text) for e in experiences}
    lock, kept = getattr(known, "lock", None) or nullcontext(), getattr(known, "tokens", None)
    with lock:
        tokens = {t: kept[t] for t in set(texts.values()) if kept and t in kept}
    if tenant_id is not None and len(tokens) < len(set(texts.values())):
        wanted = {text_key(t): t for t in texts.values() if t not in tokens}
        for key, stored in index.token_vectors_of_texts(tenant_id, wanted).items():
            tokens.setdefault(wanted[key], stored)
    missing = [t for t in dict.fromkeys(texts.values()) if t not in tokens]
    if missing:
        made = dict(zip(missing, embedder.embed_with_tokens(missing)[1]))
        tokens.update(made)
        if kept is not None:
            with lock:
                kept.update(made)
    return {i: TokenVectors(text_key(t), tokens[t]) for i, t in texts.items()}
