from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:  # annotations only: the composition root imports this module before any request
    from ..domain.scoring import DecayPolicy, ScoringWeights
    from ..ports import (
        Checkpoints,
        Clock,
        Embedder,
        ExperienceStore,
        ExportStore,
        Meter,
        RateLimiter,
        RecallLedger,
        Reviewer,
        ReviewNotifier,
        ReviewQueue,
        TenantData,
        TenantStore,
        TokenEmbedder,
        TokenPassEmbedder,
        TokenVectorIndex,
        TrajectoryStore,
        VectorIndex,
        WorkQueue,
    )
    from ..settings import Settings


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
    # the policies: one value each from Settings (``policies``), whose defaults are the only ones
    weights: ScoringWeights
    decay: DecayPolicy
    recall_candidates: int
    lexical_fusion: str  # how BM25 scores become the lexical part: saturate | relative (domain.lexical.scaled)
    lexical_half: float  # the BM25 score that weighs half (saturate), or the damping of the best (relative)
    recall_filter_task_type: bool  # a lesson of another task type is not a candidate
    recall_filter_intent: bool  # nor one of another intent
    recall_negation: bool  # what a query negates weighs half in its vector (recall.query_vector)
    advice_max_items: int
    advice_placement: str
    review_max_attempts: int
    review_lease_seconds: float
    review_batch_size: int  # jobs a worker claims and runs together (``review_jobs.process_review_jobs``)
    review_vector_cache: int  # texts whose vectors a review worker keeps between reviews
    review_workers: int  # threads of the embedded worker a batch is split over, by tenant
    review_min_events: int  # smaller successful trajectories without trouble are not reviewed
    merge_threshold: float  # cosine above which a new lesson merges into a known one
    supersede_threshold: float  # cosine of two lessons' tasks for a new fix to replace an old one
    local_reviews: bool  # anomalies during ingest start a review of the events around them
    recall_ttl_days: float  # how long a recall id can still be credited
    advise_candidates: int  # lessons naming the tool that advise holds a call against
    max_local_reviews: int  # per trajectory; anomalies while one is queued join it
    max_events_per_trajectory: int
    # the key, or what reads it when first asked (the cloud's, from Secrets Manager); None: no admin
    admin_key: str | Callable[[], str | None] | None = None
    rate_limiter: RateLimiter | None = None  # None: tenants are not limited
    # told when a review job is queued (the embedded worker waits on it); None: nobody to wake,
    # the queue itself starts the review (the jobs table's stream in the cloud)
    review_notifier: ReviewNotifier | None = None
    recalls: RecallLedger | None = None  # None: served recalls are not kept, so nothing is credited
    # late interaction over the leading candidates (``recall.late_interaction``); weight 0: off
    recall_late_weight: float = 0.0
    recall_late_candidates: int = 20
    recall_late_text: str = "lesson"  # which of a lesson's texts its tokens come from
    recall_late_rare: bool = False  # query tokens weighed by how little the candidates match them
    # what late interaction can use of the adapters, stated where they are chosen (None: not theirs)
    token_embedder: TokenEmbedder | None = None  # the embedder, when it gives its tokens' vectors
    token_pass: TokenPassEmbedder | None = None  # the same, when it gives them in its embedding pass
    token_index: TokenVectorIndex | None = None  # the index, when it keeps them beside its entries
    # usage per tenant and operational counts (``domain.usage``); None: not counted
    meter: Meter | None = None
    # where maintenance that outlasts one run keeps its progress (decay's pass); None: every
    # decay pass starts from the first tenant and runs to the end
    checkpoints: Checkpoints | None = None
    # where the decay schedule fans a pass out, one message per tenant (the cloud's SQS queue, read by
    # the decay worker); None: the schedule walks every tenant itself (``run_decay_pass``)
    decay_queue: WorkQueue | None = None
    # the embedder of recall's queries, when it needs a client of its own (the cloud's OpenAI one:
    # a short timeout, one retry, then BM25 alone); None: ``embedder``
    query_embedder: Embedder | None = None
    # a whole tenant's data, for its export and deletion (``services.tenant_jobs``); None: neither runs
    tenant_data: TenantData | None = None
    exports: ExportStore | None = None  # where tenant exports are written; None: no export
    otlp_idle_seconds: float = 900.0  # a trace without its root is finalized this long after its last batch; 0: never
    stats_items_per_request: int = 1000  # lessons and trajectories one stats request reads at most (the stats job)
    event_retention_days: int = 0  # a trajectory's events are kept this long unless its tenant says otherwise; 0: for good

    @property
    def late_on(self) -> bool:
        """Late interaction re-scores recall's leading candidates: a weight, and token vectors."""
        return self.recall_late_weight > 0 and self.token_embedder is not None

    @property
    def keeps_late_tokens(self) -> bool:
        """Lessons' token vectors are made by the pass that embeds them and kept by the index beside
        their entries, to be read at recall instead of made: late interaction on, over the lesson's
        own text (the one its vector is embedded from), an embedder that gives them in its
        embedding pass and an index that keeps them (``ports.TokenVectorIndex``)."""
        return (self.recall_late_weight > 0 and self.recall_late_text == "lesson"
                and self.token_pass is not None and self.token_index is not None)

    @property
    def similarity_floor(self) -> float:
        """Where the embedder puts unrelated texts (``domain.vectors.rebased``)."""
        return self.embedder.similarity_floor


def policies(settings: Settings) -> dict[str, Any]:
    """The Deps fields that come straight from settings, whatever the backend."""
    from ..domain.scoring import DecayPolicy, ScoringWeights

    return dict(
        weights=ScoringWeights(
            semantic=settings.weight_semantic,
            lexical=settings.weight_lexical,
            tag_match=settings.weight_tag_match,
            freshness=settings.weight_freshness,
            utility=settings.weight_utility,
            confidence=settings.weight_confidence,
            lexical_untooled=settings.weight_lexical_untooled,
        ),
        decay=DecayPolicy(
            half_life_days=settings.half_life_days,
            archive_below=settings.archive_below,
            min_age_days=settings.archive_min_age_days,
        ),
        recall_candidates=settings.recall_candidates,
        lexical_fusion=settings.lexical_fusion,
        lexical_half=settings.lexical_half,
        recall_filter_task_type=settings.recall_filter_task_type,
        recall_filter_intent=settings.recall_filter_intent,
        recall_negation=settings.recall_negation,
        recall_late_weight=settings.recall_late_weight,
        recall_late_candidates=settings.recall_late_candidates,
        recall_late_text=settings.recall_late_text,
        recall_late_rare=settings.recall_late_rare,
        advice_max_items=settings.advice_max_items,
        advice_placement=settings.advice_placement,
        review_max_attempts=settings.review_max_attempts,
        review_lease_seconds=settings.review_lease_seconds,
        review_batch_size=settings.review_batch_size,
        review_vector_cache=settings.review_vector_cache,
        review_workers=settings.review_workers,
        review_min_events=settings.review_min_events,
        local_reviews=settings.local_reviews,
        max_local_reviews=settings.max_local_reviews_per_trajectory,
        max_events_per_trajectory=settings.max_events_per_trajectory,
        merge_threshold=settings.merge_threshold,
        supersede_threshold=settings.supersede_threshold,
        recall_ttl_days=settings.recall_ttl_days,
        advise_candidates=settings.advise_candidates,
        otlp_idle_seconds=settings.otlp_idle_seconds,
        event_retention_days=settings.event_retention_days,
        stats_items_per_request=settings.stats_items_per_request,
    )
