"""The OpenSearch index, made at deploy time: the handler of a CloudFormation custom resource.

The stack (infra/) runs this function when it is created or updated: it creates the index with
the mapping of ``adapters.opensearch.queries`` (or adds the fields an older index lacks, and checks
its vector dimension), then answers CloudFormation. The API and the background functions are
given ``HINDSIGHT_OPENSEARCH_CREATE_INDEX=false`` and roles that reach documents only, so no request
ever creates or changes the index. Deleting the resource leaves the index alone: it holds the
tenants' lessons, and goes with the collection or domain when the stage does.

A new collection can refuse the first requests for a minute or two (its endpoint's DNS, the data
access policy taking effect): failures are retried until half a minute before the function's
time runs out, then reported as FAILED, which rolls the deployment back.
"""
from __future__ import annotations

import json
import logging
import time
from typing import Any, Callable

log = logging.getLogger(__name__)

SAFETY_SECONDS = 30.0  # left to answer CloudFormation before Lambda stops the function
FIRST_WAIT, MAX_WAIT = 2.0, 20.0


def ensure_index(deadline: float, clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep,
                 index: Any = None) -> int:
    """``ensure_index`` on the deployment's index until it succeeds or ``deadline`` (the clock's)
    passes; returns the attempts it took, raises the last failure."""
    if index is None:
        from .container import get_deps

        index = get_deps().index
    attempt, wait = 0, FIRST_WAIT
    while True:
        attempt += 1
        try:
            index.ensure_index(force=True)
            return attempt
        except Exception as exc:  # noqa: BLE001 -- retried until the deadline, then reported
            if clock() + wait > deadline:
                raise
            log.warning("index setup attempt %d failed, retrying in %.0f s: %s", attempt, wait, f"{type(exc).__name__}: {exc}"[:300])
            sleep(wait)
            wait = min(wait * 2, MAX_WAIT)


def answer(event: dict[str, Any], status: str, reason: str, physical_id: str) -> dict[str, Any]:
    """The response document CloudFormation waits for at the event's ResponseURL."""
    return {
        "Status": status,
        "Reason": reason or status,
        "PhysicalResourceId": physical_id,
        "StackId": event["StackId"],
        "RequestId": event["RequestId"],
        "LogicalResourceId": event["LogicalResourceId"],
        "NoEcho": False,
        "Data": {"IndexName": physical_id},
    }


def send(url: str, document: dict[str, Any]) -> int:
    """PUT the response to CloudFormation's pre-signed URL (an empty Content-Type, as S3 signed it)."""
    import urllib3
    from botocore.httpsession import get_cert_path  # the CA bundle the package ships (certifi's)

    body = json.dumps(document).encode()
    pool = urllib3.PoolManager(cert_reqs="CERT_REQUIRED", ca_certs=get_cert_path(True))
    response = pool.request("PUT", url, body=body, headers={"Content-Type": "", "Content-Length": str(len(body))},
                            timeout=urllib3.Timeout(connect=10, read=30), retries=urllib3.Retry(3))
    return response.status


def handler(event: dict[str, Any], context: Any, *, index: Any = None) -> dict[str, Any]:
    props = event.get("ResourceProperties") or {}
    physical_id = event.get("PhysicalResourceId") or props.get("IndexName") or "opensearch-index"
    if event["RequestType"] in ("Create", "Update"):
        physical_id = props.get("IndexName") or physical_id
    status, reason = "SUCCESS", ""
    try:
        if event["RequestType"] in ("Create", "Update"):
            remaining = context.get_remaining_time_in_millis() / 1000 if context is not None else 60.0
            attempts = ensure_index(time.monotonic() + remaining - SAFETY_SECONDS, index=index)
            reason = f"index {physical_id} ready after {attempts} attempt(s)"
    except Exception as exc:  # noqa: BLE001 -- CloudFormation must hear of it, or it waits for an hour
        status, reason = "FAILED", f"{type(exc).__name__}: {exc}"[:1000]
        log.error("index setup failed: %s", reason)
    document = answer(event, status, reason, physical_id)
    send(event["ResponseURL"], document)
    return document
