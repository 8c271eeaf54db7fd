"""hindsight_xp: record agent runs, recall the lessons hindsight learned from them.

The public surface is what this module exports; modules starting with ``_`` are private. Names
are imported on first use: the hook commands a coding agent runs on every tool call import
``hindsight_xp.hooks`` alone, without the HTTP client's dependencies.
"""
from __future__ import annotations

TYPE_CHECKING = False  # typing itself is left out: the hook commands import this package too
if TYPE_CHECKING:
    from typing import Any

    from ._retry import NO_RETRY, RetryPolicy
    from .advice import advice_for, with_advice
    from .anomalies import Anomaly, AnomalyDetector
    from .client import AsyncHindsight, Hindsight
    from .config import Config
    from .errors import (
        APIError,
        ConfigurationError,
        Conflict,
        HindsightError,
        InvalidRequest,
        NotFound,
        PayloadTooLarge,
        RateLimited,
        ServerError,
        TransportError,
        Unauthorized,
    )
    from .models import (
        AdviseResult,
        AdviseWarning,
        DecayReport,
        EventsAccepted,
        Experience,
        ExperiencePage,
        Explanation,
        FailedReview,
        Health,
        Hit,
        KeyRotated,
        RecallResult,
        ReindexReport,
        Stats,
        Tenant,
        TenantCreated,
        Trajectory,
    )
    from .recorder import TrajectoryRecorder

__version__ = "0.1.0"

_WHERE = {
    "._retry": ("NO_RETRY", "RetryPolicy"),
    ".advice": ("advice_for", "with_advice"),
    ".anomalies": ("Anomaly", "AnomalyDetector"),
    ".client": ("AsyncHindsight", "Hindsight"),
    ".config": ("Config",),
    ".errors": ("APIError", "ConfigurationError", "Conflict", "HindsightError", "InvalidRequest", "NotFound",
                "PayloadTooLarge", "RateLimited", "ServerError", "TransportError", "Unauthorized"),
    ".models": ("AdviseResult", "AdviseWarning", "DecayReport", "EventsAccepted", "Experience", "ExperiencePage",
                "Explanation", "FailedReview", "Health", "Hit", "KeyRotated", "RecallResult", "ReindexReport", "Stats",
                "Tenant", "TenantCreated", "Trajectory"),
    ".recorder": ("TrajectoryRecorder",),
}  # fmt: skip
_MODULE_OF = {name: module for module, names in _WHERE.items() for name in names}

__all__ = [
    "APIError", "AdviseResult", "AdviseWarning", "Anomaly", "AnomalyDetector", "AsyncHindsight", "Config", "ConfigurationError", "Conflict",
    "DecayReport", "EventsAccepted", "Experience", "ExperiencePage", "Explanation", "FailedReview", "Health", "Hindsight",
    "HindsightError", "Hit", "InvalidRequest", "KeyRotated", "NO_RETRY", "NotFound", "PayloadTooLarge",
    "RateLimited", "RecallResult", "ReindexReport", "RetryPolicy", "ServerError", "Stats", "Tenant",
    "TenantCreated", "Trajectory", "TrajectoryRecorder", "TransportError", "Unauthorized", "advice_for",
    "with_advice",
]  # fmt: skip


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module  # not at import: the hook commands import this package too

    value = getattr(import_module(module, __name__), name)
    globals()[name] = value  # the next lookup is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
