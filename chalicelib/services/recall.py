"""What to do now: hybrid retrieval of the lessons of similar situations, rendered as advice.

Candidates come from two searches under the same rule filter (tenant, scope, status, tools, task
type, intent): vector k-NN over what the situation means, BM25 over the words that matter (tool
names, parameters, error strings). Their union is scored by ``domain.scoring``, with an explanation
per hit.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING, Literal, Sequence

from ..domain.advice import render_advice
from ..domain.corrections import corrections_first
from ..domain.lexical import scaled
from ..domain.models import Candidate, Experience, ExperienceStatus, Hit, RecallQuery
from ..domain.negation import split_negation
from ..domain.scoring import as_seen_at, recall_score, score_hit
from ..domain.vectors import rebased
from ..ports import IndexFilter
from .deps import Deps

log = logging.getLogger(__name__)

if TYPE_CHECKING:  # the Lambda package has no numpy
    import numpy as np

    from ..domain.vectors import Vector


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
    return query_embedding(deps, q)[0]


def query_embedding(deps: Deps, q: RecallQuery):
    """``query_vector`` and, when late interaction is on and the embedder gives them in the same
    pass, the token vectors of the text it reads (the query without its negated words: the last of
    ``embedded_texts``), else None."""
    texts = list(embedded_texts(q, deps.recall_negation))
    tokens = None
    vectors: np.ndarray | Sequence[Vector]
    if deps.late_on and deps.token_pass is not None:
        vectors, made = deps.token_pass.embed_with_tokens(texts, query=True)
        tokens = made[-1]
    else:
        vectors = (deps.query_embedder or deps.embedder).embed(texts, query=True)
    if len(vectors) == 1:
        return vectors[0], tokens
    total = vectors[0] + vectors[1]
    norm = float((total @ total) ** 0.5)
    return (total / norm if norm else total), tokens


@dataclass(frozen=True, slots=True)
class Ranked:
    """A candidate as recall ranks it: its score, the lesson (whole, or the ``Candidate`` of what
    ranking reads of it), and the similarities the score was made of."""

    score: float
    lesson: Experience | Candidate
    cosine: float
    lexical: float


def _rank_order(r: Ranked) -> tuple[float, str]:
    """Best first; ties by id, so that a recall answers the same whatever order the search gave."""
    return -r.score, r.lesson.experience_id


@dataclass(frozen=True)
class RecallAnswer:
    """What recall answers: the hits, the advice block they make, and, when there is no hit, how
    many lessons of the tenant would have matched but belong to another agent or user
    (``hidden_by_scope``: ``{"agent_id": {agent: count}, "user_id": {user: count}}``; counts only)."""

    hits: list[Hit]
    advice: str
    hidden_by_scope: dict[str, dict[str, int]]
    degraded: Literal["lexical_only"] | None = None  # None, or LEXICAL_ONLY


# ``RecallAnswer.degraded`` when the query could not be embedded (the embedder failed or timed out):
# the lessons were ranked by BM25 and the other parts of the score, without semantic similarity
LEXICAL_ONLY: Literal["lexical_only"] = "lexical_only"


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
    answer = recall_answer(deps, tenant_id, query, agent_id, user_id, task_type, tools, intent, tags, top_k, min_score,
                           count_hidden=False)  # fmt: skip
    return answer.hits, answer.advice


def _filter(deps: Deps, q: RecallQuery, all_scopes: bool = False) -> IndexFilter:
    return IndexFilter(
        agent_id=q.agent_id, user_id=q.user_id, tools=q.tools,
        task_type=q.task_type if deps.recall_filter_task_type else None,
        intent=q.intent if deps.recall_filter_intent else None, all_scopes=all_scopes,
    )


def _scored(deps: Deps, q: RecallQuery, vector, text: str, flt: IndexFilter, now: datetime) -> list[tuple[Ranked, bool]]:
    """The active candidates of the two searches that score at least ``min_score``, each with
    whether the reader may see it."""
    k = max(deps.recall_candidates, q.top_k * 4)
    semantic: dict[str, float | None]
    if vector is not None:
        semantic, lexical = deps.index.hybrid_search(q.tenant_id, vector, text, flt, k)  # type: ignore[assignment]
    else:  # the query could not be embedded: the words alone
        lexical = dict(deps.index.lexical_search(q.tenant_id, text, flt, k))
        semantic = {i: None for i in lexical}  # candidates without a cosine: the semantic part is 0
    lexical = scaled(lexical, deps.lexical_fusion, deps.lexical_half)
    stored = deps.experiences.recall_candidates(q.tenant_id, list(semantic))
    out: list[tuple[Ranked, bool]] = []
    for exp_id, similarity in semantic.items():
        exp = stored.get(exp_id)
        # The store is the source of truth: an index entry it no longer backs is never returned.
        if exp is None or exp.status is not ExperienceStatus.ACTIVE:
            continue
        cosine = 0.0 if similarity is None else rebased(similarity, deps.similarity_floor)
        words = lexical.get(exp_id, 0.0)
        score = recall_score(exp, cosine, q, now, deps.weights, deps.decay, lexical=words)
        if score >= q.min_score:
            out.append((Ranked(score, exp, cosine, words), exp.scope.visible_to(q.agent_id, q.user_id)))
    return out


def hidden_by_scope(deps: Deps, q: RecallQuery, vector, text: str) -> dict[str, dict[str, int]]:
    """How many lessons would have matched the query under the same filters but for their scope,
    by the agent or user they belong to (one hidden by both counts under both). The search runs
    in the reader's tenant only and the lessons it finds are counted, never served."""
    counts: dict[str, dict[str, int]] = {}
    for ranked, visible in _scored(deps, q, vector, text, _filter(deps, q, all_scopes=True), deps.clock.now()):
        if visible:
            continue
        for field, value in ranked.lesson.scope.hidden_by(q.agent_id, q.user_id):
            by_value = counts.setdefault(field, {})
            by_value[value] = by_value.get(value, 0) + 1
    return {field: dict(sorted(by_value.items())) for field, by_value in sorted(counts.items())}


def recall_answer(
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
    count_hidden: bool = True,
) -> RecallAnswer:
    """``recall``'s hits and advice; with ``count_hidden``, an answer without hits also counts the
    lessons its scope hid (a second search, over every scope of the tenant). When the query cannot
    be embedded (the embedder raised: down, refusing, past its timeout and retries), the answer
    comes from BM25 alone and says so (``degraded``): an agent gets the lessons that share its
    words rather than an error."""
    q = RecallQuery(tenant_id, query, agent_id, user_id, task_type, tuple(tools), intent, tuple(tags), top_k, min_score)
    text = query_text(q)
    degraded: Literal["lexical_only"] | None = None
    try:
        vector, query_tokens = query_embedding(deps, q)
    except Exception as exc:  # noqa: BLE001 -- any failure of the embedder: answer from the words
        log.warning("recall answered from BM25 alone: the query's embedding failed (%s: %s)", type(exc).__name__, str(exc)[:200])
        vector, query_tokens, degraded = None, None, LEXICAL_ONLY
    now = deps.clock.now()
    # every candidate is ranked by its score; only those returned are explained (score_hit)
    ranked = [r for r, visible in _scored(deps, q, vector, text, _filter(deps, q), now) if visible]
    ranked.sort(key=_rank_order)
    if deps.late_on and degraded is None:
        # a candidate holds the text of ``lesson`` (its embedding text): the other texts need the whole lesson
        head = ranked if deps.recall_late_text == "lesson" else _with_whole(deps, q, ranked, deps.recall_late_candidates)
        ranked = late_interaction(deps, q, head, query_tokens)
    chosen = _distinct(ranked, q.top_k)
    wholes = _wholes(deps, q.tenant_id, [r.lesson for r in chosen])
    hits: list[Hit] = []
    # only the lessons served are copied as seen now (ranking and _distinct read no freshness)
    for r in chosen:
        whole = wholes.get(r.lesson.experience_id)
        if whole is None or whole.status is not ExperienceStatus.ACTIVE or not whole.scope.visible_to(q.agent_id, q.user_id):
            continue  # forgotten (or moved) between the two reads: left out, as a recall after the change would
        # the ranking's score (equal to the explained one unless late interaction moved it)
        _, explanation = score_hit(whole, r.cosine, q, now, deps.weights, deps.decay, lexical=r.lexical)
        hits.append(Hit(as_seen_at(whole, now, deps.decay.half_life_days), round(r.score, 4), explanation))
    hits = corrections_first(hits)
    hidden = hidden_by_scope(deps, q, vector, text) if count_hidden and not hits else {}
    return RecallAnswer(hits, render_advice(hits, deps.advice_max_items), hidden, degraded)


def _wholes(deps: Deps, tenant_id: str, items: Sequence[Experience | Candidate]) -> dict[str, Experience]:
    """The whole lessons of ranked candidates, by id: read from the store for those that hold only
    what ranking needs."""
    out: dict[str, Experience] = {}
    missing: list[str] = []
    for item in items:
        whole = item if isinstance(item, Experience) else item.whole
        if whole is None:
            missing.append(item.experience_id)
        else:
            out[item.experience_id] = whole
    if missing:
        out.update(deps.experiences.get_many(tenant_id, missing))
    return out


def _with_whole(deps: Deps, q: RecallQuery, ranked: list[Ranked], count: int) -> list[Ranked]:
    """``ranked`` with its first ``count`` candidates as whole lessons (late interaction reads their
    texts); one no longer stored is left out."""
    head, tail = ranked[:count], ranked[count:]
    wholes = _wholes(deps, q.tenant_id, [r.lesson for r in head])
    return [replace(r, lesson=wholes[r.lesson.experience_id]) for r in head if r.lesson.experience_id in wholes] + tail


def late_text(exp: Experience | Candidate, which: str) -> str:
    """The text of a lesson whose tokens the query's meet in ``late_interaction`` (a ``Candidate``
    holds only the text of ``lesson``)."""
    if which not in ("examples", "search"):
        return exp.embedding_text()
    if not isinstance(exp, Experience):
        raise TypeError(f"the {which} text of a lesson is read from the whole lesson, not its ranking candidate")
    return " ".join(exp.embedding_texts()) if which == "examples" else exp.search_text()


def late_interaction(deps: Deps, q: RecallQuery, ranked: list[Ranked], query_tokens=None) -> list[Ranked]:
    """The leading ``recall_late_candidates`` candidates re-scored by late interaction
    (``domain.interaction``): a word that tells a situation from its look-alike must find its match
    in the lesson, which one pooled vector per text washes out. The query's negated words
    (``domain.negation``) are left out: they name what the situation is not. The lessons' token
    vectors are read where the index keeps them (``ports.TokenVectorIndex``) and made for the
    others; ``query_tokens``: the query's, from the pass that embedded it (made here if None)."""
    from ..domain.interaction import best_matches, blended, late_scores, text_key

    head, tail = ranked[: deps.recall_late_candidates], ranked[deps.recall_late_candidates :]
    embedder = deps.token_embedder
    if len(head) < 2 or embedder is None:
        return ranked
    texts = [late_text(r.lesson, deps.recall_late_text) for r in head]
    index = deps.token_index
    ids = [r.lesson.experience_id for r in head]
    kept = index.token_vectors(q.tenant_id, {i: text_key(t) for i, t in zip(ids, texts)}) if index is not None else {}
    wanted = [t for i, t in zip(ids, texts) if i not in kept]
    if query_tokens is None:
        split = split_negation(q.query) if deps.recall_negation else None
        asserted = split.asserted if split is not None and split.has_negation else None
        wanted.insert(0, query_text(q, asserted))
    made = iter(embedder.token_vectors(wanted) if wanted else ())
    if query_tokens is None:
        query_tokens = next(made)
    docs = [kept[i] if i in kept else next(made) for i in ids]
    late = late_scores(best_matches(query_tokens, docs), deps.recall_late_rare)
    scores = blended([r.score for r in head], late, deps.recall_late_weight)
    head = [replace(r, score=s) for r, s in zip(head, scores)]
    head.sort(key=_rank_order)
    return head + tail


def _distinct(ranked: list[Ranked], limit: int) -> list[Ranked]:
    """The first ``limit`` of one hit per lesson: the same fix learned in two scopes, or worded
    identically, would only take the place of another lesson in the handful an agent reads."""
    seen: set[str] = set()
    out: list[Ranked] = []
    for item in ranked:
        if len(out) >= limit:
            break
        exp = item.lesson
        keys = {" ".join(exp.advice.lower().split())}
        if exp.fingerprint:
            keys.add(exp.fingerprint)
        if keys & seen:
            continue
        seen |= keys
        out.append(item)
    return out
