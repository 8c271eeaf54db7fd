"""Stage parameters: ``infra/stages.json`` (defaults, then the stage's own entry), then overrides.

A stage name picks its table prefix (``hindsight-<stage>-``), resource names, the OpenSearch
flavour and sizes. Overrides come from ``synth.py --set key=value`` or, under the ``cdk`` CLI,
``-c key=value`` (values are parsed as JSON when they parse, so ``-c embedding_dim=1024`` is a
number). A stage not listed in the file gets the defaults (handy for a personal stage).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Mapping

STAGES_FILE = Path(__file__).resolve().parent.parent / "stages.json"
OPENSEARCH_KINDS = ("serverless", "domain")
AUTHORIZER_TTL_RANGE = (60, 300)
# SAM's DeploymentPreference types (CodeDeploy's predefined Lambda configurations)
DEPLOYMENT_PREFERENCES = (
    "AllAtOnce",
    "Canary10Percent5Minutes", "Canary10Percent10Minutes", "Canary10Percent15Minutes", "Canary10Percent30Minutes",
    "Linear10PercentEvery1Minute", "Linear10PercentEvery2Minutes", "Linear10PercentEvery3Minutes",
    "Linear10PercentEvery10Minutes",
)
# OpenSearch Serverless policy names are at most 32 characters: "hindsight-<stage>-data"
_STAGE = re.compile(r"^[a-z][a-z0-9-]{0,15}$")


@dataclass(frozen=True)
class StageConfig:
    stage: str
    app_name: str
    table_prefix: str
    opensearch: str  # serverless | domain
    opensearch_index: str
    serverless_standby_replicas: bool
    domain_instance_type: str
    domain_instance_count: int
    domain_volume_gb: int
    embedding_model: str
    embedding_dim: int
    openai_base_url: str | None
    openai_api_key_secret: str | None  # name or ARN of an existing Secrets Manager secret
    lambda_memory_mb: int
    lambda_timeout_s: dict[str, int]
    stream_maximum_retry_attempts: int
    stream_maximum_record_age_s: int
    stream_bisect_on_error: bool
    # the review worker's concurrency (docs/architecture.md, "Review throughput"): concurrent
    # batches per stream shard, the wait to gather a batch, and the most instances at once
    stream_parallelization_factor: int
    stream_batching_window_s: int
    review_worker_reserved_concurrency: int | None
    dlq_retention_days: int
    log_retention_days: int
    iterator_age_alarm_ms: int
    alarm_email: str | None
    retain_data: bool
    tracing: bool
    # the edge: API Gateway's cache of the authorizer's answer per key (Allow or Deny), the
    # stage's throttling and each listed method's ("POST /v1/recall": {"rate", "burst"}), the
    # WAF's per-address limit (requests in 5 minutes), and the API's endpoint type
    authorizer_ttl_s: int
    api_throttle: dict[str, float]
    api_method_throttle: dict[str, dict[str, float]]
    waf_requests_per_5min_per_ip: int
    # alarms that see customers: the API's 5XX share and p99 latency, judged over ``alarm_periods``
    # minutes of which ``alarm_datapoints`` must breach (M of N)
    api_5xx_percent: float
    api_p99_latency_ms: int
    alarm_datapoints: int
    alarm_periods: int
    # how a new version of the API and authorizer functions takes traffic (CodeDeploy through SAM:
    # AllAtOnce, Canary10Percent5Minutes, Linear10PercentEvery1Minute...), rolled back by the alarms
    deployment_preference: str
    # create the account's API Gateway logging role (API Gateway needs one per account and region
    # to write access logs); false where the account has one already
    apigateway_logging_role: bool
    environment: dict[str, str] = field(default_factory=dict)  # further HINDSIGHT_* settings
    # a managed domain's index: primary shards and replicas when the custom resource creates it
    # (HINDSIGHT_OPENSEARCH_SHARDS / _REPLICAS of the functions); fixed at creation, another shard
    # count needs a new index and a reindex (docs/decisions/0402). Serverless places shards itself
    opensearch_shards: int = 1
    opensearch_replicas: int | None = None
    # the decay worker's most concurrent invocations (its SQS event source mapping's
    # MaximumConcurrency, at least 2): how hard a pass may press on DynamoDB and OpenSearch at once
    decay_max_concurrency: int = 2

    @property
    def resource_name(self) -> str:
        """``hindsight-dev``: the base of every physical name (collection, domain, queue, functions)."""
        return f"{self.app_name}-{self.stage}"

    @property
    def opensearch_service(self) -> str:
        """The SigV4 service name the application signs with (settings.opensearch_service)."""
        return "aoss" if self.opensearch == "serverless" else "es"

    def timeout(self, function: str) -> int:
        return int(self.lambda_timeout_s.get(function, self.lambda_timeout_s["default"]))


def _parse(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except ValueError:
        return value


def load_stage(stage: str, overrides: Mapping[str, Any] | None = None, stages_file: Path = STAGES_FILE) -> StageConfig:
    if not _STAGE.match(stage):
        raise ValueError(f"stage {stage!r}: lowercase letters, digits and '-', starting with a letter, at most 16 characters")
    doc = json.loads(stages_file.read_text())
    merged: dict[str, Any] = {**doc["defaults"], **doc.get("stages", {}).get(stage, {})}
    known = {f.name for f in fields(StageConfig)} - {"stage"}
    for key, value in (overrides or {}).items():
        if key not in known:
            raise ValueError(f"unknown stage parameter {key!r} (known: {', '.join(sorted(known))})")
        value = _parse(value)
        if isinstance(merged.get(key), dict) and isinstance(value, dict):
            value = {**merged[key], **value}
        merged[key] = value
    unknown = set(merged) - known
    if unknown:
        raise ValueError(f"{stages_file}: unknown stage parameters {sorted(unknown)}")
    for key in ("table_prefix", "openai_api_key_secret"):
        if isinstance(merged.get(key), str):
            merged[key] = merged[key].format(app_name=merged["app_name"], stage=stage)
    if merged["opensearch"] not in OPENSEARCH_KINDS:
        raise ValueError(f"opensearch must be one of {OPENSEARCH_KINDS}, not {merged['opensearch']!r}")
    for key, value in merged["environment"].items():
        if not key.startswith("HINDSIGHT_"):
            raise ValueError(f"environment: {key!r} is not a HINDSIGHT_* setting")
    if not AUTHORIZER_TTL_RANGE[0] <= merged["authorizer_ttl_s"] <= AUTHORIZER_TTL_RANGE[1]:
        raise ValueError(f"authorizer_ttl_s must be {AUTHORIZER_TTL_RANGE[0]}-{AUTHORIZER_TTL_RANGE[1]} s: long enough to "
                         "spare the authorizer a flood of one key, short enough for a revoked key to stop working soon")
    if not 0 < merged["alarm_datapoints"] <= merged["alarm_periods"]:
        raise ValueError("alarm_datapoints must be between 1 and alarm_periods")
    if merged["deployment_preference"] not in DEPLOYMENT_PREFERENCES:
        raise ValueError(f"deployment_preference must be one of {DEPLOYMENT_PREFERENCES}")
    if not isinstance(merged.get("opensearch_shards", 1), int) or merged.get("opensearch_shards", 1) < 1:
        raise ValueError("opensearch_shards must be a whole number >= 1")
    for name, limits in [("api_throttle", merged["api_throttle"]), *merged["api_method_throttle"].items()]:
        if set(limits) != {"rate", "burst"} or not all(v > 0 for v in limits.values()):
            raise ValueError(f"{name}: wants {{\"rate\": requests per second, \"burst\": requests}}, both > 0")
    return StageConfig(stage=stage, **merged)
