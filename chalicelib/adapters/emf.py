"""Implements ``ports.Meter`` as CloudWatch embedded metric format (EMF): one JSON line per record
on stdout, which Lambda sends to the function's log group and CloudWatch turns into metrics.

The metrics have one dimension, the stage: every tenant adds to the same few metrics, which the
alarms and the dashboard read (infra/). The tenant is a property of the line, not a dimension:
a dimension per tenant would make a custom metric per tenant and name (about $0.30 a month each,
$12k a month at 10,000 tenants). Per-tenant sums for metering come from the same lines with
CloudWatch Logs Insights (the stack saves the query: ``stats sum(Requests) ... by tenant``).

No Powertools here: its import is not paid by the API's cold start for one ``json.dumps``.
"""
from __future__ import annotations

import json
import logging
import sys
import time
from typing import Callable, Mapping, TextIO

from ..domain.usage import NAMESPACE, STAGE_DIMENSION

log = logging.getLogger(__name__)


def emf_line(stage: str, tenant_id: str | None, counts: Mapping[str, float], timestamp_ms: int) -> str:
    """The EMF document of one record (one line of JSON)."""
    doc: dict = {
        "_aws": {
            "Timestamp": timestamp_ms,
            "CloudWatchMetrics": [{
                "Namespace": NAMESPACE,
                "Dimensions": [[STAGE_DIMENSION]],
                "Metrics": [{"Name": name, "Unit": "Count"} for name in counts],
            }],
        },
        STAGE_DIMENSION: stage,
    }
    if tenant_id is not None:
        doc["tenant"] = tenant_id
    doc.update(counts)
    return json.dumps(doc, separators=(",", ":"))


class EmfMeter:
    def __init__(self, stage: str, out: TextIO | None = None, clock: Callable[[], float] = time.time) -> None:
        self.stage = stage
        self._out = out
        self._clock = clock

    def record(self, tenant_id: str | None, counts: Mapping[str, float]) -> None:
        counts = {name: value for name, value in counts.items() if value}
        if not counts:
            return
        try:
            line = emf_line(self.stage, tenant_id, counts, int(self._clock() * 1000))
            out = self._out or sys.stdout
            out.write(line + "\n")
            out.flush()
        except Exception as exc:  # noqa: BLE001 -- a lost count never fails the request it counts
            log.warning("usage not recorded: %s", f"{type(exc).__name__}: {exc}"[:200])
