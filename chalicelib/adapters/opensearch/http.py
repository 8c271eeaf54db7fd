"""A small OpenSearch client over urllib3: JSON requests to one node or domain endpoint, signed with
SigV4 for Amazon OpenSearch Service (``es``) and Serverless (``aoss``) by botocore's signer.

The index adapter sends a handful of request shapes (``_search``, ``_msearch``, ``_bulk``,
``_count``, the index's GET and PUT). opensearch-py, a client for the whole API, cost the review
function's cold start ~200 ms of imports (requests, asyncio, its API classes) and the Lambda
package 4 MB; urllib3 and botocore are loaded by the DynamoDB stores anyway. The methods keep
opensearch-py's names and arguments for the requests this project sends, so the adapter, the tests
and the benches read the same.

What is sent again, as opensearch-py does by default: a request that could not be sent or whose
answer could not be read (connection refused or reset, a connect timeout), and an answer 502, 503 or
504, up to ``max_retries`` more times, at once. Not a read timeout: the node may have applied the
request (``ConnectionTimeout``). An answer outside 2xx raises the ``TransportError`` of its status,
with ``status_code``, ``error`` (the body's ``error.type``, else its text) and ``info`` (the body).
HEAD answers True or False (``indices.exists``).

    OpenSearchError(Exception)
    ├── ConnectionFailed        could not send the request or read the answer (sent again)
    │   └── ConnectionTimeout   no answer within ``timeout`` (not sent again)
    ├── SerializationError      a body that is not JSON, either way
    └── TransportError          an answer outside 2xx
        ├── RequestError            400
        ├── AuthenticationError     401
        ├── AuthorizationError      403
        ├── NotFoundError           404
        └── ConflictError           409
"""
from __future__ import annotations

import hashlib
import json
from typing import Any, Callable, Sequence
from urllib.parse import quote, urlencode, urlsplit

import urllib3
from urllib3.exceptions import HTTPError, ReadTimeoutError

from chalicelib.adapters.tls import verified_context

RETRY_STATUSES = (502, 503, 504)

Signer = Callable[[str, str, "bytes | None", "dict[str, str]"], "dict[str, str]"]


class OpenSearchError(Exception):
    """Every error of this client."""


class ConnectionFailed(OpenSearchError):
    """The request could not be sent, or its answer not read."""


class ConnectionTimeout(ConnectionFailed):
    """No answer within the client's timeout."""


class SerializationError(OpenSearchError):
    """A request or an answer body that is not JSON."""


class TransportError(OpenSearchError):
    """An answer outside 2xx."""

    def __init__(self, status_code: int, error: str, info: Any = None) -> None:
        super().__init__(status_code, error, info)
        self.status_code, self.error, self.info = status_code, error, info

    def __str__(self) -> str:
        reason = _reason(self.info)
        return f"{type(self).__name__}({self.status_code}, {self.error!r}" + (f", {reason!r})" if reason else ")")


class RequestError(TransportError):
    """400"""


class AuthenticationError(TransportError):
    """401"""


class AuthorizationError(TransportError):
    """403"""


class NotFoundError(TransportError):
    """404"""


class ConflictError(TransportError):
    """409"""


_BY_STATUS = {400: RequestError, 401: AuthenticationError, 403: AuthorizationError, 404: NotFoundError, 409: ConflictError}


def _reason(info: Any) -> str | None:
    error = info.get("error") if isinstance(info, dict) else None
    if not isinstance(error, dict):
        return None
    first = (error.get("root_cause") or [error])[0]
    return first.get("reason") if isinstance(first, dict) else None


def _error(status: int, data: bytes) -> TransportError:
    text = data.decode("utf-8", "replace")
    try:
        info: Any = json.loads(text)
    except ValueError:
        info = text
    error = info.get("error", text) if isinstance(info, dict) else text
    if isinstance(error, dict):
        error = error.get("type", json.dumps(error))
    return _BY_STATUS.get(status, TransportError)(status, str(error), info)


def _encode(body: Any) -> tuple[bytes | None, str]:
    """A dict as JSON; a list as NDJSON, one document a line (``_bulk``, ``_msearch``)."""
    if body is None:
        return None, ""
    try:
        if isinstance(body, (list, tuple)):
            text = "".join(json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n" for line in body)
            return text.encode(), "application/x-ndjson"
        return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode(), "application/json"
    except (TypeError, ValueError) as exc:
        raise SerializationError(f"a request body that is not JSON: {exc}") from exc


def _decode(data: bytes) -> Any:
    if not data:
        return {}
    try:
        return json.loads(data)
    except ValueError as exc:
        raise SerializationError(f"an answer that is not JSON: {data[:200]!r}") from exc


def _param(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return ",".join(_param(v) for v in value)
    return str(value)


def _path(*parts: Any) -> str:
    return "/" + "/".join(quote(_param(p), safe=",*") for p in parts if p is not None)


class SigV4Signer:
    """Signs a request with SigV4 for ``service`` (``es`` or ``aoss``) in ``region``. The
    credentials are read at every request, so refreshed ones (a Lambda role's) are used."""

    def __init__(self, credentials: Any, region: str, service: str) -> None:
        self.credentials, self.region, self.service = credentials, region, service

    def __call__(self, method: str, url: str, body: bytes | None, headers: dict[str, str]) -> dict[str, str]:
        from botocore.auth import SigV4Auth
        from botocore.awsrequest import AWSRequest

        headers = dict(headers)
        if self.service == "aoss":  # Serverless requires the payload's hash as a header
            headers["X-Amz-Content-SHA256"] = hashlib.sha256(body or b"").hexdigest()
        request = AWSRequest(method=method, url=url, data=body, headers=headers)
        SigV4Auth(self.credentials.get_frozen_credentials(), self.service, self.region).add_auth(request)
        return dict(request.headers.items())


class OpenSearchHttp:
    """JSON over HTTP to one endpoint. ``url``: scheme, host and port; ``signer``: a
    ``SigV4Signer`` for AWS, None for an unsigned node; ``ca_certs``: the bundle that checks an
    https endpoint's certificate."""

    def __init__(
        self, url: str, *, timeout: float = 10.0, max_retries: int = 3, pool_maxsize: int = 10,
        signer: Signer | None = None, ca_certs: str | None = None,
    ) -> None:
        parts = urlsplit(url)
        tls = parts.scheme == "https"
        self.url = f"{parts.scheme}://{parts.hostname}:{parts.port or (443 if tls else 80)}"
        self.timeout = timeout
        self.max_retries = max_retries
        self.signer = signer
        options: dict[str, Any] = {"maxsize": pool_maxsize, "timeout": urllib3.Timeout(connect=timeout, read=timeout)}
        if tls:
            options["cert_reqs"] = "CERT_REQUIRED"
            if ca_certs:  # loaded once, not at every new connection (adapters.tls)
                options["ssl_context"] = verified_context(ca_certs)
        self.pool = urllib3.connection_from_url(self.url, **options)
        self.indices = _Indices(self)
        self.nodes = _Nodes(self)

    def request(self, method: str, path: str, *, params: dict[str, Any] | None = None, body: Any = None) -> Any:
        """The parsed answer of ``method path?params`` (HEAD: whether it was found)."""
        data, content_type = _encode(body)
        query = urlencode({k: _param(v) for k, v in (params or {}).items() if v is not None}, quote_via=quote)
        target = f"{path}?{query}" if query else path
        headers = {"Content-Type": content_type} if data is not None else {}
        if self.signer is not None:
            headers = self.signer(method, self.url + target, data, headers)
        for attempt in range(self.max_retries + 1):
            last = attempt == self.max_retries
            try:
                response = self.pool.urlopen(method, target, body=data, headers=headers, retries=False)
            except ReadTimeoutError as exc:
                raise ConnectionTimeout(f"{method} {path}: no answer within {self.timeout} s") from exc
            except HTTPError as exc:
                if last:
                    raise ConnectionFailed(f"{method} {path}: {exc}") from exc
                continue
            if 200 <= response.status < 300:
                return True if method == "HEAD" else _decode(response.data)
            if method == "HEAD" and response.status == 404:
                return False
            if response.status in RETRY_STATUSES and not last:
                continue
            raise _error(response.status, response.data)
        raise AssertionError("unreachable: the last attempt returns or raises")

    # --- the requests, with opensearch-py's names and arguments ---------------------------------

    def info(self) -> dict:
        return self.request("GET", "/")

    def search(self, index: str | None = None, body: dict | None = None, **params: Any) -> dict:
        return self.request("POST" if body is not None else "GET", _path(index, "_search"), params=params, body=body)

    def msearch(self, body: Sequence[dict], index: str | None = None, **params: Any) -> dict:
        return self.request("POST", _path(index, "_msearch"), params=params, body=list(body))

    def bulk(self, body: Sequence[dict], index: str | None = None, **params: Any) -> dict:
        return self.request("POST", _path(index, "_bulk"), params=params, body=list(body))

    def count(self, index: str | None = None, body: dict | None = None, **params: Any) -> dict:
        return self.request("POST" if body is not None else "GET", _path(index, "_count"), params=params, body=body)

    def index(self, index: str, body: dict, id: str | None = None, **params: Any) -> dict:  # noqa: A002
        if id is None:
            return self.request("POST", _path(index, "_doc"), params=params, body=body)
        return self.request("PUT", _path(index, "_doc", id), params=params, body=body)

    def get(self, index: str, id: str, **params: Any) -> dict:  # noqa: A002
        return self.request("GET", _path(index, "_doc", id), params=params)

    def close(self) -> None:
        self.pool.close()


class _Indices:
    def __init__(self, client: OpenSearchHttp) -> None:
        self._client = client

    def get(self, index: str, **params: Any) -> dict:
        return self._client.request("GET", _path(index), params=params)

    def exists(self, index: str, **params: Any) -> bool:
        return self._client.request("HEAD", _path(index), params=params)

    def create(self, index: str, body: dict | None = None, **params: Any) -> dict:
        return self._client.request("PUT", _path(index), params=params, body=body)

    def delete(self, index: str, **params: Any) -> dict:
        return self._client.request("DELETE", _path(index), params=params)

    def put_mapping(self, body: dict, index: str | None = None, **params: Any) -> dict:
        return self._client.request("PUT", _path(index, "_mapping"), params=params, body=body)

    def put_settings(self, body: dict, index: str | None = None, **params: Any) -> dict:
        return self._client.request("PUT", _path(index, "_settings"), params=params, body=body)

    def refresh(self, index: str | None = None, **params: Any) -> dict:
        return self._client.request("POST", _path(index, "_refresh"), params=params)

    def segments(self, index: str | None = None, **params: Any) -> dict:
        return self._client.request("GET", _path(index, "_segments"), params=params)

    def stats(self, index: str | None = None, metric: str | None = None, **params: Any) -> dict:
        return self._client.request("GET", _path(index, "_stats", metric), params=params)


class _Nodes:
    def __init__(self, client: OpenSearchHttp) -> None:
        self._client = client

    def info(self, metric: str | None = None, **params: Any) -> dict:
        return self._client.request("GET", _path("_nodes", metric), params=params)

    def stats(self, metric: str | None = None, **params: Any) -> dict:
        return self._client.request("GET", _path("_nodes", "stats", metric), params=params)
