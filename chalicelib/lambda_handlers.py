"""The cloud's background work, behind thin Chalice event handlers in app.py.

* ``review_stream``: the review-jobs table's DynamoDB stream. A record that makes a job pending
  (inserted, or sent back by a retry or an operator) wakes the reviewer, which claims due jobs
  from the queue and runs them with the same retry and dead-letter rules as the embedded worker.
  Powertools' BatchProcessor reports partial batch failures, so only a record whose processing
  failed (the queue itself unreachable) is retried by Lambda and, after the retries of the event
  source mapping, sent to its on-failure destination (the SQS DLQ). Powertools idempotency keyed
  on the record's eventID makes a redelivered record a no-op.
* ``sweep``: a schedule that re-queues lost jobs and runs jobs whose retry came due.
* ``decay``: a schedule; paginated, and safe to run twice.
"""
from __future__ import annotations

import functools
import os
import time
from typing import Any

from . import observability as obs
from .container import get_deps, get_settings
from .services.indexing import VectorCache
from .services.maintenance import run_decay
from .services.review_jobs import process_review_jobs, requeue_unreviewed

WAKING_STATES = ("pending",)


def _wakes_reviewer(record: dict[str, Any]) -> bool:
    """Only a job becoming pending matters; lease, completion and retry bookkeeping do not."""
    change = record.get("dynamodb") or {}
    new = (change.get("NewImage") or {}).get("state", {}).get("S")
    old = (change.get("OldImage") or {}).get("state", {}).get("S")
    return record.get("eventName") in ("INSERT", "MODIFY") and new in WAKING_STATES and old not in WAKING_STATES


@functools.lru_cache(maxsize=1)
def _vectors() -> VectorCache:
    """Kept while the Lambda environment stays warm: a recurring lesson is not embedded again."""
    return VectorCache(get_deps().review_vector_cache)


def run_due_jobs(budget_seconds: float = 60.0) -> int:
    """Claim and run due review jobs, ``review_batch_size`` at a time, until none is left or the
    time budget is spent."""
    deps, ran, deadline = get_deps(), 0, time.monotonic() + budget_seconds
    while time.monotonic() < deadline:
        n = process_review_jobs(deps, deps.review_batch_size, _vectors())
        if not n:
            break
        ran += n
    return ran


@functools.lru_cache(maxsize=1)
def _idempotent_runner():
    """The record handler, wrapped once in Powertools idempotency (one persistence layer per config)."""
    from aws_lambda_powertools.utilities.idempotency import (
        DynamoDBPersistenceLayer,
        IdempotencyConfig,
        idempotent_function,
    )

    settings = get_settings()
    client = None
    if settings.dynamodb_endpoint:  # a local stack: the persistence layer follows the endpoint override
        import boto3

        client = boto3.client("dynamodb", endpoint_url=settings.dynamodb_endpoint, region_name=settings.aws_region)
    persistence = DynamoDBPersistenceLayer(
        table_name=settings.idempotency_table or f"{settings.table_prefix}idempotency", boto3_client=client
    )
    config = IdempotencyConfig(expires_after_seconds=24 * 3600)

    @idempotent_function(data_keyword_argument="event_id", persistence_store=persistence, config=config)
    def run(event_id: str) -> int:
        return run_due_jobs()

    return run, config


def _record_handler(record) -> None:  # Powertools requires the parameter to be named ``record``
    raw = record.raw_event
    if _wakes_reviewer(raw):
        run, _ = _idempotent_runner()
        run(event_id=raw["eventID"])


def review_stream(event: dict[str, Any], context: Any) -> dict[str, Any]:
    from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response

    _, config = _idempotent_runner()
    if context is not None and hasattr(context, "get_remaining_time_in_millis"):
        config.register_lambda_context(context)
    processor = BatchProcessor(event_type=EventType.DynamoDBStreams)
    with obs.traced("review_stream", records=len(event.get("Records", []))):
        result = process_partial_response(event=event, record_handler=_record_handler, processor=processor, context=context)
    failed = len(result.get("batchItemFailures", []))
    obs.count("StreamRecords", len(event.get("Records", [])))
    obs.count("StreamRecordsFailed", failed)
    obs.logger().info("review stream batch", extra={"records": len(event.get("Records", [])), "failed": failed})
    obs.flush()
    return result


def sweep() -> dict[str, int]:
    with obs.traced("review_sweep"):
        requeued = requeue_unreviewed(get_deps())
        result = {"requeued": requeued, "ran": run_due_jobs(budget_seconds=float(os.environ.get("HINDSIGHT_SWEEP_SECONDS", "50")))}
    obs.count("ReviewJobsRequeued", requeued)
    obs.count("ReviewJobsRun", result["ran"])
    obs.logger().info("review sweep", extra=result)
    obs.flush()
    return result


def decay() -> dict[str, int]:
    with obs.traced("decay"):
        report = run_decay(get_deps())
    result = {"decayed": report.decayed, "archived": report.archived}
    obs.count("ExperiencesDecayed", report.decayed)
    obs.count("ExperiencesArchived", report.archived)
    obs.logger().info("decay", extra=result)
    obs.flush()
    return result
