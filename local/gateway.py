"""Chalice's API Gateway emulation in front of the app, with what it recomputed per request computed
once: the route matcher (percent-encoded paths, as API Gateway matches them), the authorizer and
the Lambda context. The embedded server and each ingest child put it in front of the same app."""
from __future__ import annotations

import re
import threading
from typing import Any
from urllib.parse import parse_qs, quote, unquote, unquote_to_bytes, urlparse

from chalice.config import Config
from chalice.local import (
    ForbiddenError,
    LambdaContext,
    LambdaEventConverter,
    LocalChalice,
    LocalGateway,
    LocalGatewayAuthorizer,
    LocalGatewayException,
    MatchResult,
    RouteMatcher,
)

from chalicelib.api.http import error_answer

DENIED_DEFAULT = "User is not authorized to access this resource"  # API Gateway's own words


class AccessDenied(LocalGatewayException):
    """The authorizer denied the key: what the deployed API answers (its ACCESS_DENIED gateway
    response, infra/), the contract's 401 with the authorizer's reason, in place of Chalice's 403."""

    CODE = 401

    def __init__(self, reason: str | None) -> None:
        _, headers, body = error_answer(401, "unauthorized", reason or DENIED_DEFAULT)
        super().__init__(headers, body.encode())


def thread_safe(chalice_app: Any) -> Any:
    """Chalice keeps the request being handled in one attribute of the app (``current_request``):
    right for Lambda, one request per process, wrong for a pool of threads, where requests would
    read each other's body and key. Chalice's own LocalChalice keeps it per thread; the app takes
    its class, as ``chalice local`` does."""
    if not isinstance(chalice_app, LocalChalice):
        chalice_app.__class__ = type("ThreadLocalChalice", (LocalChalice, chalice_app.__class__), {})
    return chalice_app


class DecodingRouteMatcher(RouteMatcher):
    """Matches a percent-encoded path, then decodes each path parameter, as API Gateway does.

    The answer is Chalice's (``RouteMatcher.match_route``: the first of the sorted routes with as many
    segments whose literal segments are equal, a trailing slash dropped, parameters captured on the
    way kept), with each route's segments split once, not on every request."""

    def __init__(self, route_urls: list[str]) -> None:
        super().__init__(route_urls)
        self._split = [(url, url.split("/")) for url in self.route_urls]

    def match_route(self, url: str) -> MatchResult:
        parsed = urlparse(url)
        query_params = parse_qs(parsed.query, keep_blank_values=True)
        path = parsed.path
        if path != "/" and path.endswith("/"):
            path = path[:-1]
        parts = path.split("/")
        count = len(parts)
        captured: dict[str, str] = {}  # shared by the attempts, as in Chalice's loop
        for route_url, url_parts in self._split:
            if len(url_parts) != count:
                continue
            for i, j in zip(parts, url_parts):
                if j.startswith("{") and j.endswith("}"):
                    captured[j[1:-1]] = i
                    continue
                if i != j:
                    break
            else:
                decoded = {name: unquote(value, errors="replace") for name, value in captured.items()}
                return MatchResult(route_url, decoded, query_params)
        raise ValueError("No matching route found for: %s" % url)


class LeanAuthorizer(LocalGatewayAuthorizer):
    """Chalice's local authorizer, with the pattern of each resource of a policy compiled once.

    ``ARNMatcher`` escapes and compiles every resource of the policy on each request: '*' matches
    any run of characters (the shortest), '?' any one."""

    def __init__(self, app_object: Any) -> None:
        super().__init__(app_object)
        self._patterns: dict[str, re.Pattern[str]] = {}
        self._denied = threading.local()  # the reason of the request this thread is authorizing

    def authorize(self, raw_path: str, lambda_event: dict, lambda_context: Any) -> Any:
        """Chalice's, with a denial answered as the deployed gateway answers it (``AccessDenied``)."""
        self._denied.reason = None
        try:
            return super().authorize(raw_path, lambda_event, lambda_context)
        except ForbiddenError:
            raise AccessDenied(self._denied.reason) from None

    def _check_can_invoke_view_function(self, arn: str, auth_result: dict) -> bool:
        statements = auth_result.get("policyDocument", {}).get("Statement", [])
        for statement in statements:
            if statement.get("Effect") == "Allow" and (
                statement.get("Action") == "execute-api:Invoke" or "execute-api:Invoke" in statement.get("Action")
            ):
                for resource in statement.get("Resource"):
                    if self._pattern(resource).match(arn) is not None:
                        return True
        self._denied.reason = (auth_result.get("context") or {}).get("error")
        return False

    def _pattern(self, resource: str) -> "re.Pattern[str]":
        pattern = self._patterns.get(resource)
        if pattern is None:
            regex = re.escape(resource).replace(r"\?", ".").replace(r"\*", ".*?")
            pattern = re.compile(f"^{regex}$")
            if len(self._patterns) < 1024:  # a policy names its resources; bounded all the same
                self._patterns[resource] = pattern
        return pattern


class LeanGateway(LocalGateway):
    """Chalice's API Gateway emulation (``LocalGateway``) with what it recomputed on every request
    computed once: the routes' segments, the compiled policy patterns, the Lambda context's settings
    (read through the config's chain of stages on each request)."""

    def __init__(self, app_object: Any, config: Config) -> None:
        super().__init__(app_object, config)
        self.event_converter = LambdaEventConverter(DecodingRouteMatcher(list(app_object.routes)), app_object.api.binary_types)
        self._authorizer = LeanAuthorizer(app_object)
        timeout = config.lambda_timeout
        self._context_args = (config.function_name, config.lambda_memory_size,
                              (self.MAX_LAMBDA_EXECUTION_TIME if timeout is None else timeout) * 1000)

    def _generate_lambda_context(self) -> LambdaContext:
        name, memory, max_runtime_ms = self._context_args
        return LambdaContext(function_name=name, memory_size=memory, max_runtime_ms=max_runtime_ms)


def gateway_path(environ: dict) -> str:
    """The request path as Chalice's route matcher must see it: each segment percent-encoded.

    The matcher splits the path with ``urlparse``: a decoded '#', '?' or ';' inside an id cut the
    path short (a POST to /v1/trajectories/a#b/finalize reached GET /v1/trajectories/{id}: 405), and
    a decoded '%2F' added a segment (an id with a '/' could not be read back). The raw request URI
    keeps the client's segments; without it (a WSGI test transport) PATH_INFO is the best we have.
    """
    raw = environ.get("REQUEST_URI") or ""
    if raw.startswith("/"):
        segments = [unquote_to_bytes(seg) for seg in raw.split("?", 1)[0].split("/")]
    else:
        path = environ.get("PATH_INFO") or "/"
        try:  # PEP 3333: the bytes of the decoded path, as latin-1
            segments = [seg.encode("latin-1") for seg in path.split("/")]
        except UnicodeEncodeError:
            segments = [seg.encode() for seg in path.split("/")]
    return "/".join(quote(seg, safe="") for seg in segments)


def local_gateway(chalice_app: Any) -> LeanGateway:
    """API Gateway's emulation in front of the app (the server's, and each ingest process's)."""
    return LeanGateway(chalice_app, Config.create(chalice_stage="local", app_name=chalice_app.app_name))
