"""The one place that knows how a call is made: request, retries, answer parsing, error mapping.

It does no I/O. ``exchange`` is a generator that *yields* what it needs done (send this request,
sleep this long) and is *sent* the outcome; a sync driver and an async driver (``_transport``)
perform those steps with httpx.Client or httpx.AsyncClient. So retry and parsing logic exists
once, and each driver is a dozen lines.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Generator, Generic, Literal, Mapping, TypeVar, Union

import httpx

from ._retry import RetryPolicy
from .errors import ConfigurationError, HindsightError, error_from_response, error_from_transport

T = TypeVar("T")
Auth = Literal["tenant", "admin", "none"]


@dataclass(frozen=True)
class Call(Generic[T]):
    """One API call as data: what to send and how to read the answer."""

    method: str
    path: str
    parse: Callable[[Any], T]
    json: Any = None
    params: Mapping[str, Any] | None = None
    auth: Auth = "tenant"
    # True when sending it twice has the effect of sending it once (reads, writes with client ids).
    idempotent: bool = True
    timeout: float | None = None  # seconds for this call alone; None: the client's
    text: bool = False  # the answer is text, not JSON (a tenant export's JSON Lines): ``parse`` gets it as it is


@dataclass(frozen=True)
class Credentials:
    api_key: str | None = field(default=None, repr=False)
    admin_key: str | None = field(default=None, repr=False)

    def header(self, auth: Auth) -> dict[str, str]:
        if auth == "none":
            return {}
        key = self.api_key if auth == "tenant" else self.admin_key
        if not key:
            hint = "HINDSIGHT_API_KEY (a tenant key)" if auth == "tenant" else "HINDSIGHT_ADMIN_KEY"
            raise ConfigurationError(f"this call needs {hint}; set it or pass it to the client")
        return {"Authorization": f"Bearer {key}"}


@dataclass(frozen=True)
class Send:
    request: httpx.Request


@dataclass(frozen=True)
class Sleep:
    seconds: float


Step = Union[Send, Sleep]
Outcome = Union[httpx.Response, httpx.TransportError, None]


def build_request(http: httpx.Client | httpx.AsyncClient, call: Call[Any], credentials: Credentials) -> httpx.Request:
    params = {k: v for k, v in (call.params or {}).items() if v is not None}
    extra: dict[str, Any] = {"timeout": call.timeout} if call.timeout is not None else {}
    return http.build_request(
        call.method, call.path, json=call.json, params=params or None, headers=credentials.header(call.auth), **extra
    )


def decode(response: httpx.Response) -> Any:
    if not response.content:
        return {}
    try:
        return response.json()
    except ValueError as exc:
        raise HindsightError(f"{response.request.method} {response.request.url} answered non-JSON: {response.text[:200]!r}") from exc


def exchange(request: httpx.Request, call: Call[T], policy: RetryPolicy) -> Generator[Step, Outcome, T]:
    """Send ``request`` until it succeeds or the policy gives up; return the parsed answer."""
    attempt = 0
    while True:
        outcome = yield Send(request)
        if isinstance(outcome, httpx.Response) and outcome.is_success:
            return call.parse(outcome.text if call.text else decode(outcome))
        assert outcome is not None
        delay = policy.delay(outcome, attempt, call.idempotent)
        if delay is None:
            if isinstance(outcome, httpx.Response):
                raise error_from_response(outcome)
            raise error_from_transport(outcome, request.method, str(request.url)) from outcome
        attempt += 1
        yield Sleep(delay)
