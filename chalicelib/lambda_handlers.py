"""The cloud's background work, behind thin Chalice event handlers in app.py (the review
worker's, deployed, behind ``review_worker_lambda.handler``, which spares it app.py's import).

* ``review_stream``: the review-jobs table's DynamoDB stream. A record that makes a job pending
  (inserted, or sent back by a retry or an operator) wakes the reviewer, which claims due jobs
  from the queue and runs them with the same retry and dead-letter rules as the embedded worker.
  The batch reports partial failures (``batchItemFailures`` by sequence number), so only a record
  whose processing failed (the queue itself unreachable) is retried by Lambda and, after the
  retries of the event source mapping, sent to its on-failure destination (the SQS DLQ); a batch
  whose every record failed raises, and is retried whole. Powertools idempotency keyed on the
  record's eventID makes a redelivered record a no-op. (Not Powertools' BatchProcessor: with
  pydantic loaded, importing it builds every one of Powertools' parser models, a large part of the
  worker's cold start, for a loop of ten lines.)
* ``sweep``: a schedule that re-queues lost jobs and runs jobs whose retry came due.
* ``tenant_jobs``: a schedule; the tenant exports and deletions under way go on from their
  checkpoints within the invocation's remaining time.
* ``decay``: a schedule; each run goes on from the pass's checkpoint within the invocation's
  remaining time, and archives by conditional writes (safe to run twice).

* ``decay``: a schedule. With a decay queue (the cloud's), a run fans the pass out: one message
  per tenant, sent in batches from the pass's checkpoint; without one, it goes on with the pass
  from its checkpoint within the invocation's remaining time. Archives are conditional writes
  (safe to run twice).
* ``decay_worker``: the decay queue's batches: each message is one tenant's share of a pass, done
  within the invocation's time and ``decay_tenant_seconds`` from the tenant's own checkpoint (a
  tenant not finished sends its next step back to the queue). Partial failures are reported
  (``batchItemFailures`` by message id): a failed message is delivered again, and after the
  queue's ``maxReceiveCount`` lands in the decay DLQ.
"""
from __future__ import annotations

import functools
import os
import time
from typing import Any, Callable

from . import gc_pause
from . import observability as obs
from .container import get_deps, get_settings
from .services.indexing import VectorCache
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
    """Claim and run due review jobs, ``review_batch_size`` at a time, until a claim takes fewer
    than that or the time budget is spent.

    A claim that took fewer than it could found no other job due, so a second claim would find
    nothing (on DynamoDB it costs about ten requests): a job enqueued since starts an invocation of
    its own through the stream, and a retry that comes due later is the sweeper's. (A DynamoDB
    claim reads the turns of the 32 least recently served tenants: when stale turns fill them, a
    job of a tenant past them waits for the next wake or the sweeper's minute.)"""
    deps, ran, deadline = get_deps(), 0, time.monotonic() + budget_seconds
    while time.monotonic() < deadline:
        n = process_review_jobs(deps, deps.review_batch_size, _vectors())
        ran += n
        if n < deps.review_batch_size:
            break
    return ran


@functools.lru_cache(maxsize=1)
def _idempotent_runner():
    """The record handler, wrapped once in Powertools idempotency (one persistence layer per config).

    Built at the first batch of a cold start, with what it loads (Powertools, boto3, the Deps and
    their botocore client: half of the worker's modules) scanned by no collection (gc_pause)."""
    with gc_pause.loading():
        from aws_lambda_powertools.utilities.idempotency import (
            DynamoDBPersistenceLayer,
            IdempotencyConfig,
            idempotent_function,
        )

        settings = get_settings()
        persistence = DynamoDBPersistenceLayer(
            table_name=settings.idempotency_table or f"{settings.table_prefix}idempotency",
            boto3_client=_dynamodb_client(),
        )
        config = IdempotencyConfig(expires_after_seconds=24 * 3600)

    @idempotent_function(data_keyword_argument="event_id", persistence_store=persistence, config=config)
    def run(event_id: str) -> int:
        return run_due_jobs()

    return run, config


def _dynamodb_client():
    """The stores' botocore DynamoDB client (pynamodb's, pointed wherever the settings say) for
    the idempotency records too: a second client would load botocore's service model and endpoint
    data again on a cold start. None (Powertools builds its own) when the stores are not DynamoDB's."""
    tables = getattr(get_deps().queue, "tables", None)
    return tables.connection.client if tables is not None else None


class StreamBatchFailed(RuntimeError):
    """Every record of a batch failed: Lambda retries the batch whole (and counts an error)."""


def _record_handler(record: dict[str, Any]) -> None:
    if _wakes_reviewer(record):
        run, _ = _idempotent_runner()
        run(event_id=record["eventID"])


def _failed(record: dict[str, Any]) -> bool:
    try:
        _record_handler(record)
    except Exception as exc:  # noqa: BLE001 -- reported to Lambda as this record's failure
        obs.logger().warning("review stream record failed", extra={
            "sequence_number": record["dynamodb"]["SequenceNumber"], "error": f"{type(exc).__name__}: {exc}"[:300]})
        return True
    return False


def review_stream(event: dict[str, Any], context: Any) -> dict[str, Any]:
    _, config = _idempotent_runner()
    if context is not None and hasattr(context, "get_remaining_time_in_millis"):
        config.register_lambda_context(context)
    records = event.get("Records", [])
    with obs.traced("review_stream", records=len(records)):
        failed = [r["dynamodb"]["SequenceNumber"] for r in records if _failed(r)]
    obs.count("StreamRecords", len(records))
    obs.count("StreamRecordsFailed", len(failed))
    obs.logger().info("review stream batch", extra={"records": len(records), "failed": len(failed)})
    obs.flush()
    if records and len(failed) == len(records):
        raise StreamBatchFailed(f"all {len(records)} records of the batch failed")
    return {"batchItemFailures": [{"itemIdentifier": seq} for seq in failed]}


def sweep() -> dict[str, int]:
    with obs.traced("review_sweep"):
        requeued = requeue_unreviewed(get_deps())
        result = {"requeued": requeued, "ran": run_due_jobs(budget_seconds=float(os.environ.get("HINDSIGHT_SWEEP_SECONDS", "50")))}
    obs.count("ReviewJobsRequeued", requeued)
    obs.count("ReviewJobsRun", result["ran"])
    obs.logger().info("review sweep", extra=result)
    obs.flush()
    return result


def remaining_seconds(context: Any, budget_seconds: float) -> Callable[[], float]:
    """The invocation's remaining time (``get_remaining_time_in_millis``), else ``budget_seconds``
    from now (a call without a Lambda context: tests, a local run)."""
    if context is not None and hasattr(context, "get_remaining_time_in_millis"):
        return lambda: context.get_remaining_time_in_millis() / 1000.0
    deadline = time.monotonic() + budget_seconds
    return lambda: deadline - time.monotonic()


def decay(context: Any = None) -> dict[str, int]:
    """One run of the decay pass: from its checkpoint, until the invocation's time runs short
    (``decay_reserve_seconds`` left). A failure raises: the schedule's asynchronous invocation is
    retried, then sent to the function's on-failure destination (infra/), and the checkpoint keeps
    what was done before it."""
    from datetime import timedelta

    from .services.maintenance import run_decay_pass  # the schedule's alone: not on a review's cold start

    settings = get_settings()
    deps = get_deps()
    if deps.decay_queue is not None and deps.checkpoints is not None:
        from .services.maintenance import fan_out_decay_pass

        with obs.traced("decay_fan_out"):
            fanned = fan_out_decay_pass(
                deps, remaining_seconds(context, settings.decay_budget_seconds),
                interval=timedelta(seconds=settings.decay_interval_seconds),
                reserve_seconds=settings.decay_reserve_seconds,
            )
        out = {"enqueued": fanned.enqueued, "complete": int(fanned.complete)}
        obs.count("DecayTenantsEnqueued", fanned.enqueued)
        obs.logger().info("decay fan-out", extra=out)
        obs.flush()
        return out
    with obs.traced("decay"):
        report = run_decay_pass(
            get_deps(), remaining_seconds(context, settings.decay_budget_seconds),
            interval=timedelta(seconds=settings.decay_interval_seconds),
            reserve_seconds=settings.decay_reserve_seconds, page_size=settings.decay_page_size,
        )
    result = {"examined": report.examined, "archived": report.archived, "written": report.written,
              "conflicts": report.conflicts, "complete": int(report.complete)}
    obs.count("ExperiencesExamined", report.examined)
    obs.count("ExperiencesArchived", report.archived)
    obs.count("ExperienceArchiveConflicts", report.conflicts)
    obs.logger().info("decay", extra=result)
    obs.flush()
    return result


def tenant_jobs(context: Any = None) -> dict[str, int]:
    """One run of the tenant exports and deletions under way (``services.tenant_jobs.run_pending``),
    until the invocation's time runs short (``tenant_jobs_reserve_seconds`` left). A failure raises
    (retried, then the on-failure destination); each job's checkpoint keeps what was done."""
    from .services.tenant_jobs import run_pending

    settings = get_settings()
    with obs.traced("tenant_jobs"):
        result = run_pending(get_deps(), remaining_seconds(context, settings.tenant_jobs_budget_seconds),
                             reserve_seconds=settings.tenant_jobs_reserve_seconds)
    obs.count("TenantJobsWorked", result["worked"])
    obs.count("TenantJobsFinished", result["finished"])
    obs.logger().info("tenant jobs", extra=result)
    obs.flush()
    return result

class DecayBatchFailed(RuntimeError):
    """Every message of a decay batch failed: Lambda retries the batch whole (and counts an error)."""


def decay_worker(event: dict[str, Any], context: Any = None) -> dict[str, Any]:
    """A batch of the decay queue: each message one tenant's share of a pass (``decay_tenant``),
    given the invocation's remaining time less ``decay_reserve_seconds``, at most
    ``decay_tenant_seconds``. Returns the failed messages' ids (``batchItemFailures``)."""
    import json

    from .services.maintenance import decay_tenant

    settings, deps = get_settings(), get_deps()
    invocation = remaining_seconds(context, settings.decay_budget_seconds)
    records = event.get("Records", [])
    failed: list[str] = []
    totals = {"tenants": 0, "skipped": 0, "continued": 0, "examined": 0, "archived": 0, "conflicts": 0}
    with obs.traced("decay_worker", records=len(records)):
        for record in records:
            deadline = time.monotonic() + settings.decay_tenant_seconds
            budget = lambda: min(invocation(), deadline - time.monotonic() + settings.decay_reserve_seconds)  # noqa: E731
            try:
                done = decay_tenant(deps, json.loads(record["body"]), budget,
                                    reserve_seconds=settings.decay_reserve_seconds, page_size=settings.decay_page_size,
                                    invocation_seconds=invocation)
            except Exception as exc:  # noqa: BLE001 -- reported to Lambda as this message's failure
                obs.logger().warning("decay message failed", extra={
                    "message_id": record.get("messageId"), "error": f"{type(exc).__name__}: {exc}"[:300]})
                failed.append(record["messageId"])
                continue
            totals["tenants"] += 1
            totals["skipped"] += int(done.skipped)
            totals["continued"] += int(done.next_step is not None)
            totals["examined"] += done.report.examined
            totals["archived"] += done.report.archived
            totals["conflicts"] += done.report.conflicts
    obs.count("ExperiencesExamined", totals["examined"])
    obs.count("ExperiencesArchived", totals["archived"])
    obs.count("ExperienceArchiveConflicts", totals["conflicts"])
    obs.logger().info("decay batch", extra={**totals, "failed": len(failed)})
    obs.flush()
    if records and len(failed) == len(records):
        raise DecayBatchFailed(f"all {len(records)} messages of the batch failed")
    return {"batchItemFailures": [{"itemIdentifier": m} for m in failed], **totals}
