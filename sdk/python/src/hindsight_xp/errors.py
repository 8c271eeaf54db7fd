"""Every error the SDK raises, in one tree::

    HindsightError
    ├── ConfigurationError     no URL or key to make the call with (nothing was sent)
    ├── TransportError         the service could not be reached, or the connection broke
    └── APIError               the service answered with an error (.status, .code, .message)
        ├── InvalidRequest     400, 422: the request is not acceptable; fix it, do not retry
        ├── Unauthorized       401: missing, unknown, revoked or wrong-kind key
        ├── NotFound           404: unknown id, or an id of another tenant
        ├── Conflict           409: the state forbids it (e.g. events after finalize)
        ├── PayloadTooLarge    413: too many events, or an event or body too large
        ├── RateLimited        429: slow down (.retry_after seconds, when the service said)
        └── ServerError        5xx: the service failed; retried for idempotent calls

Calls raise these only after the retry policy gave up.
"""
from __future__ import annotations

import json
from typing import Any

import httpx


class HindsightError(Exception):
    """Base of every error raised by hindsight_xp."""


class ConfigurationError(HindsightError):
    """A setting needed for the call is missing; raised before anything is sent."""


class TransportError(HindsightError):
    """The request did not get an HTTP answer (connection refused, timeout, broken connection)."""


class APIError(HindsightError):
    """The service answered with an error body ``{"error": {"code", "message"}}``."""

    def __init__(self, status: int, code: str, message: str, details: Any = None) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.details = details


class InvalidRequest(APIError):
    pass


class Unauthorized(APIError):
    pass


class NotFound(APIError):
    pass


class Conflict(APIError):
    pass


class PayloadTooLarge(APIError):
    pass


class RateLimited(APIError):
    def __init__(self, status: int, code: str, message: str, details: Any = None, retry_after: float | None = None) -> None:
        super().__init__(status, code, message, details)
        self.retry_after = retry_after


class ServerError(APIError):
    pass


_BY_STATUS: dict[int, type[APIError]] = {
    400: InvalidRequest,
    401: Unauthorized,
    403: Unauthorized,
    404: NotFound,
    409: Conflict,
    413: PayloadTooLarge,
    422: InvalidRequest,
    429: RateLimited,
}


def retry_after_seconds(response: httpx.Response) -> float | None:
    """Retry-After in seconds; only the delta-seconds form, which is what the service sends."""
    value = response.headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


def error_from_response(response: httpx.Response) -> APIError:
    """Translate an HTTP error answer into the tree above, whatever its body looks like."""
    code, message, details = f"http_{response.status_code}", response.reason_phrase or "error", None
    try:
        body = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError, ValueError):
        body = None
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        err = body["error"]
        code = str(err.get("code") or code)
        message = str(err.get("message") or message)
        details = err.get("details")
    elif response.text:
        # A proxy or load balancer in front of the service answers in its own format.
        message = response.text[:300]
    status = response.status_code
    if status == 429:
        return RateLimited(status, code, message, details, retry_after_seconds(response))
    cls = _BY_STATUS.get(status, ServerError if status >= 500 else APIError)
    return cls(status, code, message, details)


def error_from_transport(exc: httpx.TransportError, method: str, url: str) -> TransportError:
    kind = type(exc).__name__
    return TransportError(f"{method} {url} failed: {kind}: {exc}")
