"""Advice before a tool call: the lessons about this tool whose checks the call breaks, first.

The candidates are the lessons that name the tool (one BM25 search, the tool filter of recall):
no embedding and no model on this path, so it answers in milliseconds. Each candidate's call rule
(``domain.call_rule``, stored with it) is held against the call (``domain.advise``); the structured
match ranks, text only breaks ties.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from ..domain.advice import render_advice
from ..domain.advise import MAX_RECENT_EVENTS, MAX_TAIL_EVENTS, Situation, advise_score, evaluate, warning_message
from ..domain.errors import NotFound
from ..domain.inert import inert_line
from ..domain.lexical import saturate
from ..domain.models import Event, ExperienceStatus, Explanation, Hit
from ..domain.scoring import freshness_at
from ..ports import IndexFilter
from .deps import Deps
from .recall_ids import remember


@dataclass(frozen=True)
class Warning:
    experience_id: str
    message: str
    fix: str


@dataclass(frozen=True)
class Advice:
    recall_id: str
    warnings: list[Warning]
    hits: list[Hit]
    advice: str


def _recent(deps: Deps, tenant_id: str, trajectory_id: str | None,
            recent_events: Sequence[Mapping[str, Any]]) -> tuple[list[Event], frozenset[str] | None]:
    """What the agent did just before: as sent, else the trajectory's last events; and the tools
    that worked over the whole stored trajectory (its summary: no read of all its events)."""
    if recent_events:
        now = deps.clock.now()
        return [
            Event(event_id=e.get("event_id") or f"recent-{i}", type=e["type"], timestamp=e.get("timestamp") or now,
                  content=dict(e.get("content") or {}), seq=i + 1)
            for i, e in enumerate(list(recent_events)[-MAX_RECENT_EVENTS:])
        ], None
    if not trajectory_id:
        return [], None
    try:
        summary = deps.trajectories.trajectory_summary(tenant_id, trajectory_id, MAX_TAIL_EVENTS)
    except NotFound:  # not recorded yet, or another tenant's id: advise on the call alone
        return [], None
    return list(summary.recent), summary.tools_ok


def advise(
    deps: Deps,
    tenant_id: str,
    tool: str,
    params: Mapping[str, Any] | None = None,
    *,
    goal: str = "",
    agent_id: str | None = None,
    user_id: str | None = None,
    trajectory_id: str | None = None,
    recent_events: Sequence[Mapping[str, Any]] = (),
    top_k: int = 5,
) -> Advice:
    """``recent_events``: what the agent did just before, oldest first, as events of the contract
    (``type`` and ``content``, the rest optional); the last 20 count."""
    params = dict(params or {})
    recent, called = _recent(deps, tenant_id, trajectory_id, recent_events)
    sit = Situation(tool, params, goal or "", recent, called)
    text = " ".join([tool, *map(str, params), goal or ""])
    flt = IndexFilter(agent_id=agent_id, user_id=user_id, tools=(tool,))
    lexical = dict(deps.index.lexical_search(tenant_id, text, flt, deps.advise_candidates))
    stored = deps.experiences.get_many(tenant_id, list(lexical))
    now = deps.clock.now()
    scored: list[tuple[float, Hit, str | None]] = []
    for exp_id, bm25 in lexical.items():
        exp = stored.get(exp_id)
        if exp is None or exp.status is not ExperienceStatus.ACTIVE or not exp.scope.visible_to(agent_id, user_id):
            continue
        rule = exp.rule
        if rule is None:
            continue
        finding = evaluate(rule, sit, exp.error_class, exp.support)
        if not finding.applies:
            continue
        text_sim = saturate(bm25)
        freshness = freshness_at(exp.renewed_at, now, deps.decay.half_life_days)
        score = advise_score(finding, text_sim, exp.utility, freshness)
        explanation = Explanation(
            semantic=0.0, tag_match=finding.structured, freshness=round(freshness, 4), utility=round(exp.utility, 4),
            confidence=round(exp.confidence, 4), lexical=round(text_sim, 4), matched_tools=(rule.tool,),
        )
        message = warning_message(rule, finding, exp.error_class) if finding.violations else None
        scored.append((score, Hit(exp, score, explanation), message))
    scored.sort(key=lambda s: (-s[0], s[1].experience.experience_id))
    scored = scored[:top_k]
    hits = [h for _, h, _ in scored]
    warnings = [Warning(h.experience.experience_id, inert_line(m), inert_line(h.experience.advice)) for _, h, m in scored if m]
    advice_text = render_advice(hits, deps.advice_max_items, warned={w.experience_id for w in warnings})
    recall_id = remember(deps, tenant_id, [h.experience.experience_id for h in hits], kind="advise", tool=tool,
                         agent_id=agent_id, user_id=user_id, trajectory_id=trajectory_id)
    return Advice(recall_id, warnings, hits, advice_text)
