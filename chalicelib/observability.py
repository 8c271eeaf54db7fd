"""Powertools logging, metrics and tracing, built once per process and only where used (the
Lambda event handlers), so the API's cold start does not pay for them.

Tracing pulls in the X-Ray SDK (~200 ms of import): it is on only with HINDSIGHT_TRACING=true.
"""
from __future__ import annotations

import functools
import os
from typing import Any

SERVICE = "hindsight-worker"  # not the Chalice app's name: the two would share a logger and log twice
NAMESPACE = "hindsight"


@functools.lru_cache(maxsize=1)
def logger() -> Any:
    import logging

    from aws_lambda_powertools import Logger

    from .redaction import install

    built = Logger(service=SERVICE)
    install(logging.getLogger(SERVICE))  # the logger Powertools writes through
    return built


@functools.lru_cache(maxsize=1)
def metrics() -> Any:
    from aws_lambda_powertools import Metrics

    return Metrics(namespace=NAMESPACE, service=SERVICE)


@functools.lru_cache(maxsize=1)
def tracer() -> Any | None:
    if os.environ.get("HINDSIGHT_TRACING", "").lower() not in ("1", "true", "yes"):
        return None
    from aws_lambda_powertools import Tracer

    return Tracer(service=SERVICE)


def count(name: str, value: float = 1) -> None:
    from aws_lambda_powertools.metrics import MetricUnit

    metrics().add_metric(name=name, unit=MetricUnit.Count, value=value)


def flush() -> None:
    """Chalice event handlers take one argument, so Powertools' decorators do not fit: flush here."""
    metrics().flush_metrics()
