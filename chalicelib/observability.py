"""Powertools logging, metrics and tracing, built once per process and only where used (the
Lambda event handlers), so the API's cold start does not pay for them.

Tracing pulls in the X-Ray SDK (~200 ms of import): the tracer is built, and the SDK imported,
only when ``Settings.tracing`` is on (HINDSIGHT_TRACING=true).
"""
from __future__ import annotations

import contextlib
import functools
from typing import Any, Iterator

from .domain.usage import NAMESPACE, STAGE_DIMENSION

SERVICE = "hindsight-worker"  # not the Chalice app's name: the two would share a logger and log twice


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
    """Powertools metrics of the event handlers, with the deployment's stage as a dimension beside
    the service (two stages in one account keep apart)."""
    from aws_lambda_powertools import Metrics

    from .container import get_settings

    built = Metrics(namespace=NAMESPACE, service=SERVICE)
    stage = get_settings().stage
    if stage:
        built.set_default_dimensions(**{STAGE_DIMENSION: stage})
    return built


@functools.lru_cache(maxsize=1)
def tracer() -> Any | None:
    """The Powertools tracer (it patches boto3 and requests, so DynamoDB, OpenSearch and LLM calls
    show in the trace), or None when tracing is off."""
    from .container import get_settings

    if not get_settings().tracing:
        return None
    from aws_lambda_powertools import Tracer

    return Tracer(service=SERVICE)


@contextlib.contextmanager
def traced(name: str, **annotations: Any) -> Iterator[Any | None]:
    """A subsegment ``## name`` with ``annotations`` when tracing is on; otherwise nothing."""
    built = tracer()
    if built is None:
        yield None
        return
    with built.provider.in_subsegment(name=f"## {name}") as subsegment:
        for key, value in annotations.items():
            subsegment.put_annotation(key, value)
        yield subsegment


def count(name: str, value: float = 1) -> None:
    from aws_lambda_powertools.metrics import MetricUnit

    metrics().add_metric(name=name, unit=MetricUnit.Count, value=value)


def flush() -> None:
    """Chalice event handlers take one argument, so Powertools' decorators do not fit: flush here."""
    metrics().flush_metrics()
