"""All configuration, read from the environment (prefix ``HINDSIGHT_``) in one place."""
from __future__ import annotations

import os
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

ENV_PREFIX = "HINDSIGHT_"
_ENV_NAMES = {"port": ("HINDSIGHT_PORT", "PORT")}  # the platform's PORT too


class Settings(BaseModel):
    """Keyword arguments win, then the environment (``HINDSIGHT_<FIELD>``, any case), then the
    defaults below; values are validated (lax: "true", "8000", "0.5" from the environment).

    A plain model with a ten-line environment reader rather than pydantic-settings, whose imports
    cost ~120 ms of every Lambda cold start for features (dotenv files, JSON values, secrets
    directories, CLI) nothing here uses.
    """

    # its validator is built when the settings are first read (the first request), not at import
    model_config = ConfigDict(extra="ignore", defer_build=True)

    def __init__(self, **values: Any) -> None:
        super().__init__(**{**from_environment(type(self).model_fields), **values})

    @property
    def llm_configured(self) -> bool:
        """Whether the LLM reviews: an endpoint, a key or the key's secret is set."""
        return bool(self.openai_base_url or self.openai_api_key or self.openai_api_key_secret)

    backend: Literal["embedded", "aws"] = "embedded"
    data_dir: str = "./.hindsight"
    admin_key: str | None = None
    admin_key_secret: str | None = None  # AWS: Secrets Manager secret (ARN or name) holding the admin key
    embedder: Literal["minilm", "e5", "minilm+e5", "hash", "openai"] = "minilm"
    embedding_model: str = "text-embedding-3-small"  # with embedder=openai
    embedding_dim: int = 512  # with embedder=openai (text-embedding-3 models shorten on request)
    embedder_threads: int | None = None
    # the embedder's cosine of unrelated texts (domain.vectors.rebased); None: the model's own
    similarity_floor: float | None = Field(default=None, ge=0.0, lt=1.0)
    index_threads: int = Field(default=1, ge=1)  # threads of one embedded vector search (local/server.py: the cores)

    # AWS backend: DynamoDB tables and an OpenSearch index (endpoints overridable for local stacks)
    aws_region: str = "us-east-1"
    table_prefix: str = "hindsight-dev-"
    dynamodb_endpoint: str | None = None  # e.g. a moto server; None: the region's endpoint
    create_tables: bool = False  # local stacks only: the cloud's tables come from infra/
    opensearch_endpoint: str = "http://127.0.0.1:9200"
    opensearch_service: Literal["es", "aoss", "none"] = "none"  # SigV4 service, or unsigned
    opensearch_index: str = "hindsight-experiences"
    opensearch_engine: Literal["lucene", "faiss"] = "lucene"
    # create the index (and add fields it lacks) on first use; false: it is made at deploy time
    # (infra/'s custom resource) and the functions only read and write documents
    opensearch_create_index: bool = True
    # primary shards and replicas of the index when it is created (here on first use, or by infra/'s
    # custom resource); a shard count is fixed at creation: another needs a new index and a reindex.
    # Replicas: None leaves the cluster's default. Neither applies to Serverless
    opensearch_shards: int = Field(default=1, ge=1, le=1024)
    opensearch_replicas: int | None = Field(default=None, ge=0)
    # "tenant": every request about a tenant's documents carries routing=<tenant>, so its searches
    # visit one shard; "none": documents placed by id (an index of several shards made without routing,
    # until it is reindexed)
    opensearch_routing: Literal["tenant", "none"] = "tenant"
    idempotency_table: str | None = None  # Powertools idempotency of stream records (default: prefix + "idempotency")
    # tenant exports (services.tenant_jobs): the S3 bucket their parts go to (aws; unset: no export),
    # and an endpoint override (a moto server)
    export_bucket: str | None = None
    s3_endpoint: str | None = None
    # a run of the tenant jobs (export, deletion) stops taking steps with this much of its time left
    tenant_jobs_reserve_seconds: float = Field(default=10.0, ge=0)
    # a run's time when it has no Lambda context to ask (a local run, the embedded worker's timer)
    tenant_jobs_budget_seconds: float = Field(default=20.0, gt=0)

    # LLM reviewer: any OpenAI-compatible endpoint; off unless a base URL or an API key is set (llm_configured)
    openai_base_url: str | None = None
    openai_api_key: str | None = None
    openai_api_key_secret: str | None = None  # AWS: Secrets Manager secret (ARN or name) holding the API key
    review_model_full: str = "gpt-4.1-mini"
    review_model_local: str | None = None  # default: the full review's model
    llm_timeout_seconds: float = 60.0
    llm_max_retries: int = 2
    # "lessons": ask for the lessons alone (a shorter answer, for a small model); "all": the whole review
    llm_answer: Literal["all", "lessons"] = "all"
    llm_max_tokens: int | None = None  # a cap on each answer (a cut-off answer is dropped and counted)
    # recall's own client of the OpenAI-compatible embeddings (embedder=openai): seconds per connect
    # and per read, and retries; past them recall answers from BM25 alone, marked ``degraded``
    recall_embed_timeout_seconds: float = Field(default=2.0, gt=0)
    recall_embed_max_retries: int = Field(default=1, ge=0)
    llm_timeout_fallback: bool = False  # true: a timed-out review keeps the rules' lessons instead of being retried

    # Review worker (embedded backend)
    worker: bool = True
    worker_poll_seconds: float = 0.25
    review_lease_seconds: float = 60.0
    # jobs a worker claims at once (tenants in turns): their lessons are embedded in one call
    review_batch_size: int = Field(default=8, ge=1, le=100)
    # texts whose vectors a review worker keeps between reviews (a recurring lesson is not embedded
    # again); 4,096 MiniLM vectors are about 6 MB. 0: none kept
    review_vector_cache: int = Field(default=4096, ge=0)
    # embedded worker: threads a batch is split over, by tenant (one tenant's jobs stay in order)
    review_workers: int = Field(default=4, ge=1, le=16)
    review_max_attempts: int = 5
    review_min_events: int = 3
    local_reviews: bool = True
    # the most local (anomaly) reviews one trajectory gets; anomalies while one is queued join it
    max_local_reviews_per_trajectory: int = Field(default=5, ge=0)
    # the most events one trajectory holds: the append that would pass it answers 409
    max_events_per_trajectory: int = Field(default=10_000, ge=1)
    # days a trajectory's events are kept (from its start; a tenant may have its own, set by the
    # admin); 0: kept for good. Lessons never expire (docs/decisions/0403-event-retention.md)
    event_retention_days: int = Field(default=90, ge=0, le=3650)
    # lessons and trajectories one GET /v1/stats reads at most: a larger tenant's counts come from
    # a pass spread over several requests (services.maintenance.tenant_stats)
    stats_items_per_request: int = Field(default=1000, ge=10)
    # an OpenTelemetry trace whose root span never arrives is finalized this long after its last
    # batch (POST /v1/otlp/v1/traces); 0: never, it stays open
    otlp_idle_seconds: float = Field(default=900.0, ge=0)
    merge_threshold: float = 0.92
    # cosine of two lessons' tasks for another fix to replace a lesson (else both stay)
    supersede_threshold: float = 0.9

    # Forgetting
    half_life_days: float = 30.0
    archive_below: float = 0.2
    archive_min_age_days: float = 7.0
    # how often a decay pass over every tenant starts (the embedded timer's period; in the cloud a
    # schedule every few minutes goes on with a pass under way or starts one this long after the last)
    decay_interval_seconds: float = 3600.0
    # a decay run stops taking pages with this much of its invocation's time left, and saves its place
    decay_reserve_seconds: float = Field(default=20.0, ge=0)
    # active lessons a decay run reads per page
    decay_page_size: int = Field(default=200, ge=1, le=1000)
    # a decay run's time when it has no Lambda context to ask (a local run)
    decay_budget_seconds: float = Field(default=240.0, gt=0)
    # the SQS queue a decay pass is fanned out to, one message per tenant (infra/ sets it); unset: the
    # schedule walks every tenant itself with one checkpointed cursor
    decay_queue_url: str | None = None
    # the most of an invocation one tenant's decay takes before the rest of its pass goes back to the
    # queue (from its own checkpoint), so a big tenant never holds up the others
    decay_tenant_seconds: float = Field(default=60.0, gt=0)

    # Recall
    weight_semantic: float = 0.55
    weight_lexical: float = 0.15
    weight_tag_match: float = 0.15
    weight_freshness: float = 0.06
    weight_utility: float = 0.05
    weight_confidence: float = 0.04
    # the lexical weight of lessons that name no tool (None: weight_lexical); domain.scoring.ScoringWeights
    weight_lexical_untooled: float | None = 0.8
    recall_candidates: int = Field(default=50, ge=1)
    # BM25 of both indexes (numpy and OpenSearch; an OpenSearch index keeps the pair it was created with)
    lexical_k1: float = Field(default=1.2, ge=0)
    lexical_b: float = Field(default=0.4, ge=0, le=1)
    # plural: plurals folded; light: also -ing, -ed and a final e (an OpenSearch index needs a reindex after a change)
    lexical_stemmer: Literal["plural", "light"] = "light"
    # how a BM25 score becomes recall's lexical part in [0, 1] (domain.lexical.scaled)
    lexical_fusion: Literal["saturate", "relative"] = "saturate"
    lexical_half: float = Field(default=4.0, ge=0)
    recall_filter_task_type: bool = True
    recall_filter_intent: bool = True
    # what a query negates ("no", "not", "nothing", "n't" and their scope) weighs half in its vector
    recall_negation: bool = True
    # late interaction (recall.late_interaction): weight of the query tokens' best matches among a
    # lesson's tokens, over the leading candidates; 0 turns it off; only embedders with token vectors
    recall_late_weight: float = Field(default=0.4, ge=0)
    recall_late_candidates: int = Field(default=20, ge=2)
    recall_late_text: Literal["lesson", "examples", "search"] = "lesson"
    recall_late_rare: bool = True  # each query token weighed by how little the candidates match it
    advice_max_items: int = Field(default=5, ge=1, le=20)
    recall_ttl_days: float = Field(default=14.0, gt=0)  # a recall id credits its lessons until then
    advise_candidates: int = Field(default=100, ge=1)  # lessons naming the tool that advise holds a call against
    # where the advice block belongs in the agent's prompt; returned with every recall
    advice_placement: Literal["after_tools", "system_start", "system_end", "before_user"] = "after_tools"

    # Limits of the HTTP API
    max_body_bytes: int = 1_048_576
    max_events_per_call: int = 100
    max_event_bytes: int = 65_536

    # Per-tenant rate limit (token bucket): requests per second and the burst; 0 turns it off
    rate_limit_per_second: float = Field(default=100.0, ge=0)
    rate_limit_burst: int = Field(default=200, ge=0)
    # the file the embedded server's processes keep the buckets in (local/server.py sets it for its ingest
    # processes: ``adapters.shared_rate_limiter``); unset: buckets in this process's memory
    rate_limit_file: str | None = None
    # what a request costs in tokens (``domain.ratelimit.CostPolicy``): a recall 1 + top_k / this
    # + query characters / the next; an append events / the last, rounded up
    rate_cost_hits_per_token: int = Field(default=10, ge=1)
    rate_cost_query_chars_per_token: int = Field(default=500, ge=1)
    rate_cost_events_per_token: int = Field(default=20, ge=1)
    # a reindex batch (POST /v1/maintenance/reindex: its ``limit`` lessons embedded and indexed again)
    # costs 1 token per this many lessons, rounded up: the pace of a tenant's reindex is its rate limit's
    rate_cost_lessons_per_token: int = Field(default=2, ge=1)

    # X-Ray tracing of the Lambda event handlers (infra/ sets it with its ``tracing`` option)
    tracing: bool = False
    # the deployment's stage (infra/ sets it): the ``stage`` dimension of the metrics the cloud
    # functions write (usage per tenant, dead review jobs: ``domain.usage``); unset: none written
    stage: str | None = None

    # Log level of the embedded server (DEBUG, INFO, ...); keys are redacted at every level
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"] = "INFO"

    # Embedded server
    host: str = "127.0.0.1"
    port: int = 8000
    threads: int = 16
    # open connections the embedded server holds (idle keep-alive ones included) before it stops
    # accepting: waitress's default, 100, let 99 idle sockets shut everyone else out
    connection_limit: int = Field(default=1000, ge=1)
    # an idle connection (no request in progress) is closed after this many seconds
    channel_timeout_seconds: int = Field(default=30, ge=1)
    # child processes the embedded server runs ingest's requests in (starts, appends, finalize:
    # ``local/ingest.py``), so that they use more than one core; None: one more than the cores
    # when there are at least two, else none; 0: every request in the server's own process
    ingest_processes: int | None = Field(default=None, ge=0, le=16)
    # a request handed to an ingest process is answered 503 (to retry) if the process has not
    # answered it within this many seconds; a process that does not answer the server's ping
    # (every half second) within ``ingest_ping_deadline_seconds`` is killed and started again
    ingest_deadline_seconds: float = Field(default=10.0, gt=0)
    ingest_ping_deadline_seconds: float = Field(default=3.0, gt=0)
    # the embedded server's review worker in a child process of its own (``local/review.py``),
    # with its own interpreter lock; None: when there are at least two cores
    review_process: bool | None = None
    # the review process lets go of a tenant's index partition after this long without a review of
    # the tenant (the server keeps every one: it answers recalls); loaded again when next needed
    review_index_idle_seconds: float = Field(default=600.0, ge=0)


def from_environment(fields: Any, environ: Any = None) -> dict[str, str]:
    """The raw values the environment sets for ``fields`` (names), by their variable names."""
    env = {k.upper(): v for k, v in (os.environ if environ is None else environ).items()}
    out = {}
    for name in fields:
        for var in _ENV_NAMES.get(name, (f"{ENV_PREFIX}{name.upper()}",)):
            if var in env:
                out[name] = env[var]
                break
    return out
