"""What to do now: rank the lessons of similar situations and render them as advice."""
from __future__ import annotations

from ..domain.advice import render_advice
from ..domain.models import ExperienceStatus, Hit, RecallQuery
from ..domain.scoring import score_hit
from ..ports import IndexFilter
from .deps import Deps


def query_text(q: RecallQuery) -> str:
    parts = [q.query]
    if q.intent:
        parts.append(f"Intent: {q.intent}.")
    return " ".join(parts)


def recall(deps: Deps, q: RecallQuery) -> tuple[list[Hit], str]:
    vector = deps.embedder.embed([query_text(q)])[0]
    flt = IndexFilter(agent_id=q.agent_id, user_id=q.user_id, tools=q.tools)
    k = max(deps.recall_candidates, q.top_k * 4)
    candidates = deps.index.search(q.tenant_id, vector, flt, k)
    stored = deps.experiences.get_many(q.tenant_id, [i for i, _ in candidates])
    now = deps.clock.now()
    hits: list[Hit] = []
    for exp_id, similarity in candidates:
        exp = stored.get(exp_id)
        # The store is the source of truth: an index entry it no longer backs is never returned.
        if exp is None or exp.status is not ExperienceStatus.ACTIVE or not exp.scope.visible_to(q.agent_id, q.user_id):
            continue
        score, explanation = score_hit(exp, similarity, q, now, deps.weights, deps.decay)
        if score >= q.min_score:
            hits.append(Hit(exp, score, explanation))
    hits.sort(key=lambda h: (-h.score, h.experience.experience_id))
    hits = hits[: q.top_k]
    return hits, render_advice(hits)
