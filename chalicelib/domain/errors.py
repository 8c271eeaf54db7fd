"""Errors the services raise; entrypoints map each to one HTTP status.

    HindsightError
    ├── InvalidInput       400/422  the request is well-formed JSON but not acceptable
    ├── PayloadTooLarge    413      a limit on count or size was exceeded
    ├── Unauthorized       401      missing, unknown or wrong-kind key
    ├── NotFound           404      unknown id, or an id of another tenant (never 403)
    ├── Conflict           409      the state forbids the change (e.g. events after finalize)
    ├── RateLimited        429      too many requests for this tenant
    └── Unavailable        503      a dependency (store, index, LLM) failed; retry later
"""
from __future__ import annotations


class HindsightError(Exception):
    status = 500
    code = "internal_error"

    def __init__(self, message: str, *, details: object | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details = details


class InvalidInput(HindsightError):
    status = 422
    code = "invalid_input"


class MalformedRequest(InvalidInput):
    status = 400
    code = "malformed_request"


class PayloadTooLarge(HindsightError):
    status = 413
    code = "payload_too_large"


class Unauthorized(HindsightError):
    status = 401
    code = "unauthorized"


class NotFound(HindsightError):
    status = 404
    code = "not_found"


class Conflict(HindsightError):
    status = 409
    code = "conflict"


class RateLimited(HindsightError):
    status = 429
    code = "rate_limited"

    def __init__(self, message: str, *, retry_after: int = 1) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class Unavailable(HindsightError):
    """Raised by adapters (``from`` the SDK's error) when their service cannot answer."""

    status = 503
    code = "unavailable"
    retry_after = 1
