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
    environment: dict[str, str] = field(default_factory=dict)  # further HINDSIGHT_* settings

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
    return StageConfig(stage=stage, **merged)
