"""A small client for OpenAI-compatible endpoints: chat completions and embeddings over urllib3.

The service needs two calls of the OpenAI API; importing the openai SDK (httpx, a typed model of
every resource) took longer than the whole app's import on a cold Lambda, where urllib3 is already
loaded by botocore. What the SDK did for these two calls is kept:
a bearer key, a connect and read timeout (per socket operation, as httpx applies it), retries with
exponential backoff and jitter on connection errors, timeouts, 408, 409, 429 and 5xx, honouring
``Retry-After`` (``retry-after-ms``, seconds or an HTTP date, up to two minutes), and the same error
classes by status, so a failed review records the same ``APITimeoutError: Request timed out.``

Errors (``raise ... from`` the urllib3 exception where there is one)::

    APIError                        message, status_code, body
    ├── APIConnectionError          refused, reset, TLS, a broken answer
    │   └── APITimeoutError         connect or read timeout
    ├── APIResponseValidationError  a 2xx answer that is not the API's shape
    └── APIStatusError              any other non-2xx answer
        ├── BadRequestError 400, AuthenticationError 401, PermissionDeniedError 403,
        ├── NotFoundError 404, ConflictError 409, UnprocessableEntityError 422,
        └── RateLimitError 429, InternalServerError 5xx
"""
from __future__ import annotations

import array
import base64
import binascii
import email.utils
import json
import logging
import random
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any, Sequence
from urllib.parse import urlsplit

import urllib3

from chalicelib.adapters.tls import verified_context

log = logging.getLogger(__name__)

DEFAULT_BASE_URL = "https://api.openai.com/v1"
INITIAL_RETRY_DELAY = 0.5
MAX_RETRY_DELAY = 8.0
MAX_RETRY_AFTER = 120.0  # a server asking for a longer wait is not retried
RETRY_STATUSES = frozenset({408, 409, 429})  # and every 5xx


class APIError(Exception):
    """Any failure of a call; ``message`` is the text shown after the class name."""

    def __init__(self, message: str, *, status_code: int | None = None, body: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.status_code = status_code
        self.body = body


class APIConnectionError(APIError):
    def __init__(self, message: str = "Connection error.") -> None:
        super().__init__(message)


class APITimeoutError(APIConnectionError):
    def __init__(self) -> None:
        super().__init__("Request timed out.")


class APIResponseValidationError(APIError):
    """A 2xx answer that is not what the API returns (not JSON, no choice, no data)."""


class APIStatusError(APIError):
    """A non-2xx answer; the subclasses below name the usual statuses."""


class BadRequestError(APIStatusError):
    """400"""


class AuthenticationError(APIStatusError):
    """401"""


class PermissionDeniedError(APIStatusError):
    """403"""


class NotFoundError(APIStatusError):
    """404"""


class ConflictError(APIStatusError):
    """409"""


class UnprocessableEntityError(APIStatusError):
    """422"""


class RateLimitError(APIStatusError):
    """429"""


class InternalServerError(APIStatusError):
    """5xx"""


_BY_STATUS = {400: BadRequestError, 401: AuthenticationError, 403: PermissionDeniedError, 404: NotFoundError,
              409: ConflictError, 422: UnprocessableEntityError, 429: RateLimitError}


def status_error(status: int, raw: bytes) -> APIStatusError:
    """The error for a non-2xx answer: ``Error code: 429 - <the API's error message>``."""
    text = raw.decode("utf-8", "replace").strip()
    body: Any = text
    message = f"Error code: {status}"
    try:
        body = json.loads(text)
    except ValueError:
        pass
    else:
        error = body.get("error", body) if isinstance(body, dict) else None
        if isinstance(error, dict) and isinstance(error.get("message"), str) and error["message"]:
            message += f" - {error['message']}"
        body = error if isinstance(error, dict) else body
    cls = InternalServerError if status >= 500 else _BY_STATUS.get(status, APIStatusError)
    return cls(message, status_code=status, body=body)


def retry_after(headers: Any) -> float | None:
    """Seconds the server asks to wait (``retry-after-ms``, ``retry-after`` in seconds or as a
    date), or None when it does not say."""
    for name, divisor in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            return float(value) / divisor
        except ValueError:
            pass
    value = headers.get("retry-after")
    parsed = email.utils.parsedate_tz(value) if value else None
    return email.utils.mktime_tz(parsed) - time.time() if parsed else None


def backoff(attempt: int, server_delay: float | None) -> float:
    """The wait before retry number ``attempt + 1``: the server's, when it gave a usable one, else
    0.5 s doubling up to 8 s, less up to 25% of jitter."""
    if server_delay is not None and 0 < server_delay <= MAX_RETRY_AFTER:
        return server_delay
    return min(INITIAL_RETRY_DELAY * 2.0 ** attempt, MAX_RETRY_DELAY) * (1 - 0.25 * random.random())


@dataclass(frozen=True)
class ChatChoice:
    """The first choice of a chat completion: its text and why the model stopped (``length``: cut
    off at ``max_tokens``), and the tokens the call used (prompt and answer; 0 when the endpoint
    does not say)."""

    content: str | None
    finish_reason: str | None
    total_tokens: int = 0


@dataclass(frozen=True)
class Embedding:
    index: int  # the input it belongs to: the API does not promise the order
    embedding: list[float]


def _floats(embedding: str | list[float]) -> list[float]:
    if not isinstance(embedding, str):
        return embedding
    values = array.array("f", base64.b64decode(embedding, validate=True))
    if sys.byteorder == "big":  # the API sends little-endian float32
        values.byteswap()
    return values.tolist()


def _pool(base_url: str, maxsize: int) -> urllib3.PoolManager:
    """Connections kept alive per host; through the proxy the environment names for this host, as
    the SDK's httpx did (``HTTPS_PROXY``, ``NO_PROXY``)."""
    import urllib.request  # its proxy lookup only: a module the first ingest does not otherwise load

    parts = urlsplit(base_url)
    kwargs: dict[str, Any] = {"maxsize": maxsize}
    try:
        import certifi  # the CA bundle the SDK used; the system's otherwise
    except ImportError:
        pass
    else:
        if parts.scheme == "https":  # loaded once, not at every new connection (adapters.tls)
            kwargs["ssl_context"] = verified_context(certifi.where())
    proxy = urllib.request.getproxies().get(parts.scheme)
    if proxy and not urllib.request.proxy_bypass(parts.hostname or ""):
        return urllib3.ProxyManager(proxy, **kwargs)
    return urllib3.PoolManager(**kwargs)


class OpenAICompatibleClient:
    """``chat`` and ``embeddings`` of an OpenAI-compatible endpoint. Thread-safe: the embedded
    review workers share one client (``maxsize`` connections per host are kept alive).

    ``timeout``: seconds for the connection and for each read of the answer (not a total deadline).
    ``max_retries``: retries after the first attempt, for the retryable failures only.
    """

    def __init__(self, base_url: str | None = None, api_key: str | None = None, timeout: float = 60.0,
                 max_retries: int = 2, maxsize: int = 16, sleep=time.sleep) -> None:
        self.base_url = (base_url or DEFAULT_BASE_URL).rstrip("/")
        if urlsplit(self.base_url).scheme not in ("http", "https"):
            raise ValueError(f"the OpenAI base URL must be http(s)://..., got {self.base_url!r}")
        self.timeout = timeout
        self.max_retries = max_retries
        self._headers = {"Content-Type": "application/json", "Accept": "application/json", "User-Agent": "hindsight"}
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"
        self._maxsize = maxsize
        self._pool_manager: urllib3.PoolManager | None = None
        self._pool_lock = threading.Lock()
        self._sleep = sleep  # tests see the waits without waiting

    @property
    def _pool(self) -> urllib3.PoolManager:
        """Built at the first request: its TLS context parses the CA bundle (adapters.tls), which a
        process that never calls the endpoint (the API's ingest, with this client in its Deps)
        should not pay for."""
        if self._pool_manager is None:
            with self._pool_lock:
                if self._pool_manager is None:
                    self._pool_manager = _pool(self.base_url, self._maxsize)
        return self._pool_manager

    def chat(self, *, model: str, messages: Sequence[dict[str, Any]], **params: Any) -> ChatChoice:
        """``POST /chat/completions``; ``params`` go into the body as they are (temperature,
        response_format, max_tokens...)."""
        answer = self._post("/chat/completions", {"model": model, "messages": list(messages), **params})
        try:
            choice = answer["choices"][0]
            content = choice["message"].get("content")
        except (KeyError, IndexError, TypeError, AttributeError):
            raise APIResponseValidationError("the chat completion has no choice with a message", body=answer) from None
        return ChatChoice(content, choice.get("finish_reason"), _total_tokens(answer))

    def embeddings(self, *, model: str, input: Sequence[str], dimensions: int | None = None) -> list[Embedding]:
        """``POST /embeddings``: one vector per input, each with the index of its input. Asked as
        base64 float32, as the SDK asks (a quarter of the JSON text of the floats); an endpoint that
        answers with floats anyway is read as well."""
        body: dict[str, Any] = {"model": model, "input": list(input)}
        if dimensions is not None:
            body["dimensions"] = dimensions
        body["encoding_format"] = "base64"
        answer = self._post("/embeddings", body)
        try:
            return [Embedding(int(item["index"]), _floats(item["embedding"])) for item in answer["data"]]
        except (KeyError, TypeError, ValueError, binascii.Error):
            raise APIResponseValidationError("the embeddings answer has no data with index and embedding",
                                             body=answer) from None

    def _post(self, path: str, body: dict[str, Any]) -> Any:
        data = json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()
        timeout = urllib3.Timeout(connect=self.timeout, read=self.timeout)
        attempt = 0
        while True:
            try:
                response = self._pool.request("POST", self.base_url + path, body=data, headers=self._headers,
                                              timeout=timeout, retries=False)
            except urllib3.exceptions.HTTPError as exc:  # refused, reset, timed out, TLS, protocol
                error = transport_error(exc)
                if attempt == self.max_retries:
                    raise error from exc
                server_delay = None
            else:
                if 200 <= response.status < 300:
                    try:
                        return json.loads(response.data)
                    except ValueError:
                        raise APIResponseValidationError("the answer is not JSON", status_code=response.status) from None
                error = status_error(response.status, response.data)
                server_delay = retry_after(response.headers)
                if attempt == self.max_retries or not retryable(response.status, server_delay):
                    raise error
            wait = backoff(attempt, server_delay)
            log.info("POST %s: %s; retry %d of %d in %.2f s", path, error.message, attempt + 1, self.max_retries, wait)
            self._sleep(wait)
            attempt += 1


def _total_tokens(answer: Any) -> int:
    """``usage.total_tokens`` of an answer, 0 when it has none (some compatible endpoints omit it)."""
    usage = answer.get("usage") if isinstance(answer, dict) else None
    total = usage.get("total_tokens") if isinstance(usage, dict) else None
    return total if isinstance(total, int) and total > 0 else 0


def transport_error(exc: Exception) -> APIError:
    """A timeout (connect or read) or another connection failure. urllib3 makes a refused
    connection a subclass of its connect timeout: it is a connection error here, as in the SDK."""
    timed_out = isinstance(exc, urllib3.exceptions.TimeoutError) and not isinstance(exc, urllib3.exceptions.NewConnectionError)
    return APITimeoutError() if timed_out else APIConnectionError()


def retryable(status: int, server_delay: float | None) -> bool:
    if server_delay is not None and server_delay > MAX_RETRY_AFTER:
        return False
    return status in RETRY_STATUSES or status >= 500
