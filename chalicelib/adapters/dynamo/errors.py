"""The error boundary of the DynamoDB adapters: no pynamodb or botocore exception gets past it.

    pynamodb / botocore exception                          what the caller sees
    ─────────────────────────────────────────────────────  ─────────────────────────────────────
    ConditionalCheckFailed / TransactionCanceled           handled where it happens: NotFound,
      (a condition of ours failed)                         Conflict, a duplicate, or a retry
    TransactionConflict (a concurrent transaction)         retried, then StoreUnavailable
    DoesNotExist (GetItem found nothing)                   NotFound, where it happens
    anything else: throttling past botocore's retries,     StoreUnavailable(...) from exc
      a missing table, credentials, network, timeouts
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Callable, Iterator

from botocore.exceptions import BotoCoreError, ClientError
from pynamodb.exceptions import DeleteError, PutError, PynamoDBException, TransactWriteError, UpdateError

from chalicelib.domain.errors import HindsightError, Unavailable

CONDITION_FAILED = "ConditionalCheckFailed"  # the code inside a transaction's cancellation reasons
CONDITIONAL_CHECK_FAILED = "ConditionalCheckFailedException"  # the code of a single-item write


class StoreUnavailable(Unavailable, RuntimeError):
    """DynamoDB could not do the request: unreachable, throttled past retries, table missing, or
    contended past the retries of an optimistic write. Worth a retry later (HTTP 503)."""


def failed_condition(exc: PynamoDBException) -> bool:
    """True when a single-item write failed only because its condition did not hold."""
    return exc.cause_response_code == CONDITIONAL_CHECK_FAILED


def written_if(write: Callable[[], Any]) -> bool:
    """Make a conditional single-item write (a save, update or delete): True if it was made, False
    if its condition did not hold; any other failure propagates."""
    try:
        write()
        return True
    except (PutError, UpdateError, DeleteError) as exc:
        if failed_condition(exc):
            return False
        raise


def cancellation_codes(exc: TransactWriteError) -> list[str | None]:
    """One code per item of the cancelled transaction, in request order (None: that item was fine)."""
    return [r.code if r is not None else None for r in exc.cancellation_reasons]


@contextmanager
def boundary(operation: str) -> Iterator[None]:
    """Translate whatever the SDK raises inside into ``StoreUnavailable``; domain errors pass."""
    try:
        yield
    except HindsightError:
        raise
    except (PynamoDBException, BotoCoreError, ClientError) as exc:
        code = getattr(exc, "cause_response_code", None) or type(exc).__name__
        raise StoreUnavailable(f"DynamoDB {operation} failed: {code}") from exc
