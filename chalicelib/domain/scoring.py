"""How much a lesson is worth now: freshness, utility, confidence and the recall score.

Everything here is a pure function of its arguments; ``now`` is always passed in.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from functools import lru_cache
from typing import Iterable

from .generalize import names
from .models import Candidate, Experience, ExperienceStatus, Explanation, RecallQuery, Signal, match_key, match_keys


@dataclass(frozen=True)
class ScoringWeights:
    """Weights of the recall score; they are normalised, so only their ratios matter."""

    semantic: float
    lexical: float
    tag_match: float
    freshness: float
    utility: float
    confidence: float
    # the lexical weight of a lesson that names no tool (a note in a person's own words: its words
    # are all a query can match it on); None: ``lexical``. A lesson that names tools is found
    # through them (filter, tag_match), and its text is mostly tool, error and template words that
    # look-alike lessons share.
    lexical_untooled: float | None = None

    def lexical_for(self, exp: Experience | Candidate) -> float:
        return self.lexical if exp.tools or self.lexical_untooled is None else self.lexical_untooled


@dataclass(frozen=True)
class DecayPolicy:
    half_life_days: float
    archive_below: float  # of the keep score below
    min_age_days: float  # nothing younger than this is archived


def freshness_at(renewed_at: datetime, now: datetime, half_life_days: float) -> float:
    """Exponential decay since the lesson was last written or used: 1.0 now, 0.5 per half-life."""
    age_days = max(0.0, (now - renewed_at).total_seconds() / 86400.0)
    return float(0.5 ** (age_days / half_life_days))


def current_freshness(exp: Experience | Candidate, now: datetime, half_life_days: float) -> float:
    """The one freshness of a lesson at ``now``: what a read shows, recall scores and stats counts.

    The stored value is the freshness as of the last write that set it (a decay, feedback, a
    merge); a decay may have run ``as_of`` a moment the clock has not reached yet, to age lessons
    ahead of time. Freshness only falls between renewals, and a renewal writes ``renewed_at`` and
    ``freshness`` = 1.0 together, so the lower of the stored value and the clock's own is the
    freshness at the latest moment either has seen.
    """
    return round(min(exp.freshness, freshness_at(exp.renewed_at, now, half_life_days)), 6)


def as_seen_at(exp: Experience, now: datetime, half_life_days: float) -> Experience:
    """The lesson as it is shown at ``now``: its ``freshness`` is ``current_freshness``."""
    return replace(exp, freshness=current_freshness(exp, now, half_life_days))


def keep_score(freshness: float, utility: float, confidence: float) -> float:
    """Whether a lesson still earns its place, in [0, 1].

    A lesson lives on freshness while it is neutral (utility 0.5), loses it quickly when it keeps
    failing (utility and confidence fall), and outlives its freshness once it has proven useful.
    """
    trust = min(1.0, 2 * utility) * min(1.0, 2 * confidence)
    proven = max(0.0, (utility - 0.5) * 2) * confidence
    return max(freshness * trust, proven)


# (utility target, confidence target, renews freshness) per feedback signal
_SIGNAL_EFFECT = {
    Signal.ADOPTED: (1.0, None, True),
    Signal.SUCCEEDED: (1.0, 1.0, True),
    Signal.IGNORED: (0.0, None, False),
    Signal.FAILED: (0.0, 0.0, False),
}
_SIGNAL_RATE = {Signal.ADOPTED: 0.1, Signal.SUCCEEDED: 0.25, Signal.IGNORED: 0.1, Signal.FAILED: 0.25}


def apply_feedback(exp: Experience, signal: Signal, now: datetime, policy: DecayPolicy) -> Experience:
    """Move utility and confidence towards the signal's target; use renews freshness.

    A lesson whose keep score falls below the archive threshold is archived at once.
    """
    utility_target, confidence_target, renews = _SIGNAL_EFFECT[signal]
    rate = _SIGNAL_RATE[signal]
    utility = exp.utility + rate * (utility_target - exp.utility)
    confidence = exp.confidence
    if confidence_target is not None:
        confidence = exp.confidence + rate * (confidence_target - exp.confidence)
    renewed_at = now if renews else exp.renewed_at
    freshness = freshness_at(renewed_at, now, policy.half_life_days)
    updated = replace(
        exp,
        utility=round(utility, 6),
        confidence=round(confidence, 6),
        renewed_at=renewed_at,
        freshness=round(freshness, 6),
        updated_at=now,
    )
    if updated.status is ExperienceStatus.ACTIVE and keep_score(freshness, utility, confidence) < policy.archive_below:
        updated = replace(updated, status=ExperienceStatus.ARCHIVED, status_reason=f"feedback:{signal.value}")
    return updated


def decay(exp: Experience, now: datetime, policy: DecayPolicy) -> Experience:
    """Freshness as of ``now``; archive lessons that are old, stale and not useful."""
    freshness = round(freshness_at(exp.renewed_at, now, policy.half_life_days), 6)
    updated = replace(exp, freshness=freshness)
    age_days = (now - exp.created_at).total_seconds() / 86400.0
    if (
        exp.status is ExperienceStatus.ACTIVE
        and age_days >= policy.min_age_days
        and keep_score(freshness, exp.utility, exp.confidence) < policy.archive_below
    ):
        updated = replace(updated, status=ExperienceStatus.ARCHIVED, status_reason="decayed", updated_at=now)
    return updated


@dataclass(frozen=True)
class Match:
    score: float | None
    tools: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    task_type: bool | None = None
    anchors: tuple[str, ...] = ()


@lru_cache(maxsize=1024)
def _cached_keys(values: tuple[str | None, ...]) -> frozenset[str]:
    return frozenset(match_keys(values))


def _query_keys(values: Iterable[str | None]) -> frozenset[str] | set[str]:
    """``match_keys`` of a query's tools or tags, made once per query rather than once per candidate."""
    return _cached_keys(values) if isinstance(values, tuple) else match_keys(values)


def _overlap(query_values: Iterable[str], lesson_values: list[str], over_lesson: bool) -> tuple[tuple[str, ...], float | None]:
    """The keys a query and a lesson share, and their share of the lesson's keys (``over_lesson``)
    or of the query's; None when either names none. The lesson's keys are made only for a query
    that names some: nothing else can match."""
    if not query_values or not (q_keys := _query_keys(query_values)):
        return (), None
    e_keys = match_keys(lesson_values)
    common = q_keys & e_keys
    matched = tuple(sorted(common)) if common else ()
    if not e_keys:
        return matched, None
    return matched, len(matched) / len(e_keys if over_lesson else q_keys)


def tag_match(exp: Experience | Candidate, query: RecallQuery) -> Match:
    """How well the lesson's tools, tags, task type, intent and anchors fit the query, in [0, 1].

    Only what the query names counts, and the anchors: literal values every task the lesson was
    learned from named ("main"); a query naming none of them is less likely its situation.
    ``score`` is ``None`` when there is nothing to compare.
    """
    parts: list[float] = []
    # the share of the lesson's tools the query names; the share of the query's tags the lesson has
    matched_tools, part = _overlap(query.tools, exp.tools, over_lesson=True)
    if part is not None:
        parts.append(part)
    matched_tags, part = _overlap(query.tags, exp.tags, over_lesson=False)
    if part is not None:
        parts.append(part)
    task_match = None
    if query.task_type and exp.task_type:
        task_match = match_key(query.task_type) == match_key(exp.task_type)
        parts.append(1.0 if task_match else 0.0)
    if query.intent and exp.intent:
        parts.append(1.0 if match_key(query.intent) == match_key(exp.intent) else 0.0)
    anchors = tuple(a for a in exp.anchors if names(query.query, a))
    if exp.anchors:
        parts.append(len(anchors) / len(exp.anchors))
    return Match(sum(parts) / len(parts) if parts else None, matched_tools, matched_tags, task_match, anchors)


def _scored(
    exp: Experience | Candidate, similarity: float, query: RecallQuery, now: datetime, weights: ScoringWeights, policy: DecayPolicy,
    lexical: float,
) -> tuple[float, float, Match, float]:
    """The recall score and what explains it: (score, semantic part, tag match, freshness)."""
    semantic = min(1.0, max(0.0, similarity))
    match = tag_match(exp, query)
    tags = match.score
    freshness = current_freshness(exp, now, policy.half_life_days)
    # the weighted mean of the parts, each sum taken left to right in this order (semantic, lexical,
    # freshness, utility, confidence, tag match): written out, it runs for every candidate of a recall
    w_lexical = weights.lexical_for(exp)
    total_weight = weights.semantic + w_lexical + weights.freshness + weights.utility + weights.confidence
    total = (weights.semantic * semantic + w_lexical * lexical + weights.freshness * freshness
             + weights.utility * exp.utility + weights.confidence * exp.confidence)
    if tags is not None:  # nothing to compare: the part is left out, not counted as 0
        total_weight += weights.tag_match
        total += weights.tag_match * tags
    score = total / total_weight if total_weight else 0.0
    return score, semantic, match, freshness


def recall_score(
    exp: Experience | Candidate,
    similarity: float,
    query: RecallQuery,
    now: datetime,
    weights: ScoringWeights,
    policy: DecayPolicy,
    lexical: float = 0.0,
) -> float:
    """``score_hit``'s score without its explanation: recall ranks every candidate (a ``Candidate``
    holds what it reads) and explains only the handful it returns."""
    return _scored(exp, similarity, query, now, weights, policy, lexical)[0]


def score_hit(
    exp: Experience,
    similarity: float,
    query: RecallQuery,
    now: datetime,
    weights: ScoringWeights,
    policy: DecayPolicy,
    lexical: float = 0.0,
) -> tuple[float, Explanation]:
    """The recall score in [0, 1] and its parts. Cosine similarity below 0 counts as 0;
    ``lexical`` is the saturated BM25 score in [0, 1)."""
    score, semantic, match, freshness = _scored(exp, similarity, query, now, weights, policy, lexical)
    tags = match.score
    explanation = Explanation(
        semantic=round(semantic, 4),
        tag_match=round(tags if tags is not None else 0.0, 4),
        freshness=round(freshness, 4),
        utility=round(exp.utility, 4),
        confidence=round(exp.confidence, 4),
        lexical=round(lexical, 4),
        matched_tools=match.tools,
        matched_tags=match.tags,
        task_type_match=match.task_type,
        matched_anchors=match.anchors,
    )
    return score, explanation
