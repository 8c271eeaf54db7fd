"""What to do now: hybrid retrieval of the lessons of similar situations, rendered as advice.

Candidates come from two searches under the same rule filter (tenant, scope, status, tools, task
type, intent): vector k-NN over what the situation means, BM25 over the words that matter (tool
names, parameters, error strings). Their union is scored by ``domain.scoring``, with an explanation
per hit.
"""
from __future__ import annotations

from typing import Sequence

from ..domain.advice import render_advice
from ..domain.models import Experience
from ..domain.lexical import scaled
from ..domain.models import ExperienceStatus, Hit, RecallQuery
from ..domain.negation import split_negation
from ..domain.scoring import as_seen_at, score_hit
from ..domain.vectors import rebased
from ..ports import IndexFilter
from .deps import Deps


def query_text(q: RecallQuery, query: str | None = None) -> str:
    parts = [q.query if query is None else query]
    if q.intent:
        parts.append(f"Intent: {q.intent}.")
    return " ".join(parts)


def embedded_texts(q: RecallQuery, negation: bool = True) -> tuple[str, ...]:
    """What recall embeds for the query: its text and, when it negates something
    (``domain.negation``) and ``negation`` is on, its text without the negated words."""
    text = query_text(q)
    split = split_negation(q.query) if negation else None
    if split is None or not split.has_negation:
        return (text,)
    return text, query_text(q, split.asserted)


def query_vector(deps: Deps, q: RecallQuery):
    """The query's embedding; for a query that negates something, the normalised sum of the
    embeddings of ``embedded_texts``: what it negates weighs half of what it asserts. A negated word
    is a fact the query denies ("the patron owes nothing") or the failure it reports ("won't
    import"), which look-alike situations share; what tells them apart is what the query asserts."""
    vectors = deps.embedder.embed(list(embedded_texts(q, deps.recall_negation)), query=True)
    if len(vectors) == 1:
        return vectors[0]
    total = vectors[0] + vectors[1]
    norm = float((total @ total) ** 0.5)
    return total / norm if norm else total


def recall(
    deps: Deps,
    tenant_id: str,
    query: str,
    agent_id: str | None = None,
    user_id: str | None = None,
    task_type: str | None = None,
    tools: Sequence[str] = (),
    intent: str | None = None,
    tags: Sequence[str] = (),
    top_k: int = RecallQuery.top_k,
    min_score: float = RecallQuery.min_score,
) -> tuple[list[Hit], str]:
    """The best ``top_k`` lessons for the situation, and the advice block they make."""
    q = RecallQuery(tenant_id, query, agent_id, user_id, task_type, tuple(tools), intent, tuple(tags), top_k, min_score)
    text = query_text(q)
    vector = query_vector(deps, q)
    flt = IndexFilter(
        agent_id=q.agent_id, user_id=q.user_id, tools=q.tools,
        task_type=q.task_type if deps.recall_filter_task_type else None,
        intent=q.intent if deps.recall_filter_intent else None,
    )
    k = max(deps.recall_candidates, q.top_k * 4)
    semantic, lexical = deps.index.hybrid_search(q.tenant_id, vector, text, flt, k)
    lexical = scaled(lexical, deps.lexical_fusion, deps.lexical_half)
    stored = deps.experiences.get_many(q.tenant_id, list(semantic))
    now = deps.clock.now()
    hits: list[Hit] = []
    for exp_id, similarity in semantic.items():
        exp = stored.get(exp_id)
        # The store is the source of truth: an index entry it no longer backs is never returned.
        if exp is None or exp.status is not ExperienceStatus.ACTIVE or not exp.scope.visible_to(q.agent_id, q.user_id):
            continue
        score, explanation = score_hit(
            exp, rebased(similarity, deps.similarity_floor), q, now, deps.weights, deps.decay, lexical=lexical.get(exp_id, 0.0)
        )
        if score >= q.min_score:
            hits.append(Hit(exp, score, explanation))
    hits.sort(key=lambda h: (-h.score, h.experience.experience_id))
    if deps.recall_late_weight > 0 and hasattr(deps.embedder, "token_vectors"):
        hits = late_interaction(deps, q, hits)
    # only the lessons served are copied as seen now (ranking and _distinct read no freshness)
    hits = [
        Hit(as_seen_at(h.experience, now, deps.decay.half_life_days), h.score, h.explanation)
        for h in _distinct(hits)[: q.top_k]
    ]
    return hits, render_advice(hits, deps.advice_max_items)


def late_text(exp: Experience, which: str) -> str:
    """The text of a lesson whose tokens the query's meet in ``late_interaction``."""
    if which == "examples":
        return " ".join(exp.embedding_texts())
    if which == "search":
        return exp.search_text()
    return exp.embedding_text()


def late_interaction(deps: Deps, q: RecallQuery, hits: list[Hit]) -> list[Hit]:
    """The leading ``recall_late_candidates`` hits re-scored by late interaction
    (``domain.interaction``): a word that tells a situation from its look-alike must find its match
    in the lesson, which one pooled vector per text washes out. The query's negated words
    (``domain.negation``) are left out: they name what the situation is not."""
    from ..domain.interaction import best_matches, blended, late_scores

    head, tail = hits[: deps.recall_late_candidates], hits[deps.recall_late_candidates :]
    if len(head) < 2:
        return hits
    split = split_negation(q.query) if deps.recall_negation else None
    asserted = split.asserted if split is not None and split.has_negation else None
    vectors = deps.embedder.token_vectors([query_text(q, asserted), *(late_text(h.experience, deps.recall_late_text) for h in head)])
    late = late_scores(best_matches(vectors[0], vectors[1:]), deps.recall_late_rare)
    scores = blended([h.score for h in head], late, deps.recall_late_weight)
    head = [Hit(h.experience, round(s, 4), h.explanation) for h, s in zip(head, scores)]
    head.sort(key=lambda h: (-h.score, h.experience.experience_id))
    return head + tail


def _distinct(hits: list[Hit]) -> list[Hit]:
    """One hit per lesson: the same fix learned in two scopes, or worded identically, would only
    take the place of another lesson in the handful an agent reads."""
    seen: set[str] = set()
    out = []
    for hit in hits:
        keys = {" ".join(hit.experience.advice.lower().split())}
        if hit.experience.fingerprint:
            keys.add(hit.experience.fingerprint)
        if keys & seen:
            continue
        seen |= keys
        out.append(hit)
    return out
