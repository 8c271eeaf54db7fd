from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from ..domain.scoring import DecayPolicy, ScoringWeights
from ..ports import (
    Clock,
    Embedder,
    ExperienceStore,
    RateLimiter,
    ReviewQueue,
    Reviewer,
    TenantStore,
    TrajectoryStore,
    VectorIndex,
)


@dataclass
class Deps:
    """The ports a service needs, built once by the composition root (or by a test)."""

    tenants: TenantStore
    trajectories: TrajectoryStore
    experiences: ExperienceStore
    index: VectorIndex
    embedder: Embedder
    reviewer: Reviewer
    queue: ReviewQueue
    clock: Clock
    weights: ScoringWeights = field(default_factory=ScoringWeights)
    decay: DecayPolicy = field(default_factory=DecayPolicy)
    admin_key: str | None = None
    rate_limiter: RateLimiter | None = None  # None: tenants are not limited
    recall_candidates: int = 50
    recall_filter_task_type: bool = True  # a lesson of another task type is not a candidate
    recall_filter_intent: bool = True  # nor one of another intent
    advice_max_items: int = 5
    advice_placement: str = "after_tools"
    review_max_attempts: int = 5
    review_lease_seconds: float = 60.0
    review_min_events: int = 3  # smaller successful trajectories without trouble are not reviewed
    merge_threshold: float = 0.92  # cosine above which a new lesson merges into a known one
    supersede_threshold: float = 0.8  # cosine of two situations for a new fix to replace an old one
    local_reviews: bool = True  # anomalies during ingest start a review of the events around them
    notify_review: Callable[[], None] = lambda: None  # wakes a local worker; no-op in the cloud
