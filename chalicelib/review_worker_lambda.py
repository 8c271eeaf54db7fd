"""The review worker's Lambda handler as deployed: infra/ points the function at ``handler``.

app.py declares the function (``@app.on_dynamodb_record``: its name, its stream, its batch size,
and the same handler under ``chalice local`` and the test client), but importing app.py loads the
API for a function that serves no request: Chalice, the routes, the request and answer models and
their presenters, about 50 ms of a cold start spent before the first record. Lambda imports this
module instead; the work is ``lambda_handlers.review_stream`` either way.
"""
from __future__ import annotations

from typing import Any

from . import gc_pause

with gc_pause.loading():  # the handler's imports, scanned by no collection (gc_pause)
    from . import redaction

    # what importing app.py does first: the Lambda runtime's handler on the root logger masks keys
    # before anything is logged
    redaction.install()

    from .lambda_handlers import review_stream


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """Lambda's (event, context) for a batch of the review-jobs stream; partial failures as
    ``batchItemFailures`` (the mapping's ReportBatchItemFailures)."""
    return review_stream(event, context)
