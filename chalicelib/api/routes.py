"""Each route declared once: the Chalice route, its OpenAPI entry, its parsing and its answer.

``Router.route`` registers a view with Chalice and records a ``Route``, from which
``api/openapi.py`` derives the document: the request model, the query-parameter model, the
response model, the status and the errors are written in one place. Around the view it checks the
key, reads and validates the body and the query, turns the view's return value (a response model
or a plain value) into JSON, and maps every error to the contract's shape.

Nothing here inspects a model at import: validators and schemas are built on the first request
that needs them, so a Lambda cold start pays only for what it serves.
"""
from __future__ import annotations

import functools
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Literal, Mapping, cast

from chalice import Chalice, Response
from pydantic import BaseModel

from .. import access_log, gc_pause
from ..container import get_deps, get_settings
from ..domain import usage as usage_names
from ..domain.errors import HindsightError, Unauthorized
from .http import INTERNAL, answer_for, body_required, error_answer, error_response, json_response, parse_json, to_json, validate
from .page_headers import page_headers

if TYPE_CHECKING:
    from chalice.app import Request

log = logging.getLogger("hindsight.api")
Auth = Literal["tenant", "admin", "none"]
# Bodies are parsed as JSON whatever the client labels them (curl -d says form-urlencoded).
BODY_TYPES = ["application/json", "text/plain", "application/x-www-form-urlencoded"]
BODY_METHODS = {"post", "put", "patch", "delete"}


def meter(tenant_id: str, counts: Mapping[str, float]) -> None:
    """A tenant's usage to the deployment's meter, when it has one (``Deps.meter``)."""
    recorder = get_deps().meter
    if recorder is not None:
        recorder.record(tenant_id, counts)


@dataclass(frozen=True)
class Route:
    method: str  # lower case, as in the document
    path: str
    summary: str
    body: type[BaseModel] | None = None
    query: type[BaseModel] | None = None
    response: type[BaseModel] | None = None
    status: int = 200
    auth: Auth = "tenant"
    errors: tuple[int, ...] = ()
    # the status of a write whose client-chosen id was used before: the existing resource, unchanged
    repeat_status: int | None = None
    # False for routes that touch no store, index or model and so cannot answer 503
    uses_dependencies: bool = True
    # what a successful answer is: JSON, or a page (the view returns its text)
    media_type: str = "application/json"
    # the body's media types when the view reads the body itself (no model validates it)
    raw_body: tuple[str, ...] = ()

    @property
    def path_parameters(self) -> tuple[str, ...]:
        return tuple(p[1:-1] for p in self.path.split("/") if p.startswith("{"))

    def statuses(self) -> tuple[int, ...]:
        """The error statuses the route can answer."""
        errors = set(self.errors)
        if self.auth != "none":
            errors.add(401)
        if self.auth == "tenant":
            errors.add(429)  # rate limits are per tenant
        if self.body is not None:
            errors |= {400, 413, 422}
        if self.query is not None:
            errors.add(422)
        if self.uses_dependencies:
            errors.add(503)
        return tuple(sorted(errors))


@dataclass(frozen=True)
class Repeat:
    """A view's answer for a write whose client-chosen id was used before (``repeat_status``)."""

    body: Any


def endpoint(view: Callable[..., Response]) -> Callable[..., Response]:
    """Map every failure to the contract's error shape: no stack trace, no 500 for bad input.
    The process's first request loads what it needs scanned by no collection (gc_pause)."""

    @gc_pause.first_call
    @functools.wraps(view)
    def wrapper(*args: Any, **kwargs: Any) -> Response:
        try:
            return view(*args, **kwargs)
        except HindsightError as exc:
            return error_response(answer_for(exc))
        except Exception:
            log.exception("unhandled error in %s", view.__name__)
            return error_response(error_answer(*INTERNAL))

    return wrapper


class Router:
    """The routes of one Chalice app; ``routes`` is what the OpenAPI document is made from."""

    def __init__(self, app: Chalice, authorizer: Any, admin_authorizer: Any = None) -> None:
        """``authorizer``: the tenant routes' (an API key to its tenant). ``admin_authorizer``: None,
        the admin routes take the admin key as a bearer token; else Chalice's ``IAMAuthorizer``,
        API Gateway checks the caller's SigV4 signature and IAM permission before the route runs,
        and the route checks that it did (``admin``)."""
        self.app = app
        self.authorizer = authorizer
        self.admin_authorizer = admin_authorizer
        self.routes: list[Route] = []

    def route(
        self,
        method: str,
        path: str,
        summary: str,
        *,
        body: type[BaseModel] | None = None,
        query: type[BaseModel] | None = None,
        response: type[BaseModel] | None = None,
        status: int = 200,
        auth: Auth = "tenant",
        errors: tuple[int, ...] = (),
        repeat_status: int | None = None,
        uses_dependencies: bool = True,
        check: Callable[[Any, bytes], None] | None = None,
        media_type: str = "application/json",
        cost: Callable[[Any], int] | None = None,
        usage: Callable[[Any, Any], Mapping[str, float]] | None = None,
        raw_body: tuple[str, ...] = (),
    ) -> Callable[[Callable[..., Any]], Callable[..., Response]]:
        """Register ``view`` for ``method path``. The view gets the path parameters, then
        ``tenant_id`` (auth="tenant"), ``body`` and ``query`` (validated models) by keyword.
        ``check(data, raw)`` sees the parsed JSON body and its bytes before validation (limits that answer 413).
        ``cost``: the tokens of the tenant's rate limit the validated body takes (one was taken
        when the key was checked, the rest once the body says what work it asks for).
        ``usage(body, answer)``: what a tenant's successful call adds to its usage beside the
        request itself (``domain.usage``: recalls, events), written by the deployment's meter.
        ``raw_body``: the body's media types, when the view reads it itself (``request``: the
        request, its body and headers unparsed) and may answer with a ``Response`` of its own."""
        declared = Route(method.lower(), path, summary, body, query, response, status, auth, errors,
                         repeat_status, uses_dependencies, media_type, raw_body)
        if auth == "tenant" and "tenant_id" in declared.path_parameters:
            raise ValueError(f"{path}: the tenant of the key and a path's tenant_id would collide")

        def register(view: Callable[..., Any]) -> Callable[..., Response]:
            @functools.wraps(view)
            def handle(**path_params: str) -> Response:
                values: dict[str, Any] = dict(path_params)
                if raw_body:
                    values["request"] = self.request()
                if auth == "tenant":
                    values["tenant_id"] = self.tenant()
                    counts: dict[str, float] = {usage_names.REQUESTS: 1}
                    try:
                        answer = self.run(view, values, body, query, check, cost, auth)
                        if usage is not None:
                            counts.update(usage(values.get("body"), answer))
                    finally:
                        meter(values["tenant_id"], counts)
                else:
                    if auth == "admin":
                        self.admin()
                    answer = self.run(view, values, body, query, check, cost, auth)
                return self.answer(declared, answer)

            self.routes.append(declared)
            options: dict[str, Any] = {"methods": [method.upper()]}
            if declared.method in BODY_METHODS:
                options["content_types"] = list(raw_body) or BODY_TYPES
            if auth == "tenant":
                options["authorizer"] = self.authorizer
            elif auth == "admin" and self.admin_authorizer is not None:
                options["authorizer"] = self.admin_authorizer
            registered = endpoint(handle)
            self.app.route(path, **options)(registered)
            return registered

        return register

    def run(self, view: Callable[..., Any], values: dict[str, Any], body: type[BaseModel] | None,
            query: type[BaseModel] | None, check: Callable[[Any, bytes], None] | None,
            cost: Callable[[Any], int] | None, auth: Auth) -> Any:
        """The view's return value, given the validated body and query."""
        request = self.request()
        if body is not None:
            raw = cast(bytes, request.raw_body)  # Chalice encodes a str body: bytes always
            data = parse_json(raw, get_settings().max_body_bytes, body_required(body))
            if check is not None:
                check(data, raw or b"")
            values["body"] = validate(body, data)
            if cost is not None and auth == "tenant":
                from ..services import tenants

                tenants.admit(get_deps(), values["tenant_id"], cost(values["body"]) - 1)
        if query is not None:
            values["query"] = validate(query, dict(request.query_params or {}))
        return view(**values)

    def admin(self) -> None:
        """Refuse a caller who is not the operator: without ``admin_authorizer``, one without the
        admin key; with it, a request API Gateway did not authorize by IAM (a SigV4 signature and an
        IAM policy allowing it: the gateway then names the caller in the request's identity). The
        route's own check keeps it closed should it ever be reached another way."""
        request = self.request()
        if self.admin_authorizer is None:
            from ..services import tenants

            tenants.require_admin(get_deps(), request.headers.get("authorization"))
            return
        identity = (request.context or {}).get("identity") or {}
        if not identity.get("userArn"):
            raise Unauthorized("this operation needs a request signed with AWS credentials (SigV4) allowed to call it")

    @staticmethod
    def answer(route: Route, value: Any) -> Response:
        if isinstance(value, Response):
            return value
        if isinstance(value, Repeat):
            if route.repeat_status is None:
                raise TypeError(f"{route.method} {route.path} declares no repeat_status")
            return json_response(to_json(value.body), route.repeat_status)
        if route.media_type != "application/json":
            headers: dict[str, str | list[str]] = {"Content-Type": f"{route.media_type}; charset=utf-8"}
            if route.media_type == "text/html":
                headers.update(page_headers(value))
            return Response(body=value, status_code=route.status, headers=headers)
        return json_response(to_json(value), route.status)

    def request(self) -> Request:
        """The request being answered: Chalice sets it before it calls a route."""
        request = self.app.current_request
        if request is None:
            raise RuntimeError("no request is being answered")
        return request

    def tenant(self) -> str:
        """The tenant of the request, which then takes one request from the tenant's rate limit.

        The authorizer resolved it (it denies any other key); without one (a direct invocation), it
        is resolved here. The limit is taken here, not in the authorizer, whose answer API Gateway
        caches per key.
        """
        from ..services import tenants

        request = self.request()
        resolved = (request.context or {}).get("authorizer") or {}
        if resolved.get("tenant_id"):
            tenant_id = resolved["tenant_id"]
        else:  # the authorizer allows only a known key: this is a direct invocation
            tenant_id = tenants.authenticate(get_deps(), request.headers.get("authorization"))
        access_log.note_tenant(tenant_id)
        tenants.admit(get_deps(), tenant_id)
        return tenant_id
