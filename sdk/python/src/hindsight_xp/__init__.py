"""hindsight_xp: record agent runs, recall the lessons hindsight learned from them.

The public surface is what this module exports; modules starting with ``_`` are private.
"""
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

__all__ = [
    "APIError", "AdviseResult", "AdviseWarning", "Anomaly", "AnomalyDetector", "AsyncHindsight", "Config", "ConfigurationError", "Conflict",
    "DecayReport", "EventsAccepted", "Experience", "ExperiencePage", "Explanation", "FailedReview", "Health", "Hindsight",
    "HindsightError", "Hit", "InvalidRequest", "KeyRotated", "NO_RETRY", "NotFound", "PayloadTooLarge",
    "RateLimited", "RecallResult", "ReindexReport", "RetryPolicy", "ServerError", "Stats", "Tenant",
    "TenantCreated", "Trajectory", "TrajectoryRecorder", "TransportError", "Unauthorized", "advice_for",
    "with_advice",
]  # fmt: skip
