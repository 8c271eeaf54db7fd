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
from typing import TYPE_CHECKING, Any, Callable, Literal, cast

from chalice import Chalice, Response
from pydantic import BaseModel

from .. import access_log, gc_pause
from ..container import get_deps, get_settings
from ..domain.errors import HindsightError, Unauthorized
from .http import INTERNAL, answer_for, body_required, error_answer, error_response, json_response, parse_json, to_json, validate

if TYPE_CHECKING:
    from chalice.app import Request

log = logging.getLogger("hindsight.api")
Auth = Literal["tenant", "admin", "none"]
# Bodies are parsed as JSON whatever the client labels them (curl -d says form-urlencoded).
BODY_TYPES = ["application/json", "text/plain", "application/x-www-form-urlencoded"]
BODY_METHODS = {"post", "put", "patch", "delete"}


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

    def __init__(self, app: Chalice, authorizer: Any) -> None:
        self.app = app
        self.authorizer = authorizer
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
        raw_body: tuple[str, ...] = (),
    ) -> Callable[[Callable[..., Any]], Callable[..., Response]]:
        """Register ``view`` for ``method path``. The view gets the path parameters, then
        ``tenant_id`` (auth="tenant"), ``body`` and ``query`` (validated models) by keyword.
        ``check(data, raw)`` sees the parsed JSON body and its bytes before validation (limits that answer 413).
        ``cost``: the tokens of the tenant's rate limit the validated body takes (one was taken
        when the key was checked, the rest once the body says what work it asks for).
        ``raw_body``: the body's media types, when the view reads it itself (``request``: the
        request, its body and headers unparsed) and answers with a ``Response`` of its own."""
        declared = Route(method.lower(), path, summary, body, query, response, status, auth, errors,
                         repeat_status, uses_dependencies, media_type)
        if auth == "tenant" and "tenant_id" in declared.path_parameters:
            raise ValueError(f"{path}: the tenant of the key and a path's tenant_id would collide")

        def register(view: Callable[..., Any]) -> Callable[..., Response]:
            @functools.wraps(view)
            def handle(**path_params: str) -> Response:
                values: dict[str, Any] = dict(path_params)
                request = self.request()
                if auth == "tenant":
                    values["tenant_id"] = self.tenant()
                elif auth == "admin":
                    from ..services import tenants

                    tenants.require_admin(get_deps(), request.headers.get("authorization"))
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
                if raw_body:
                    values["request"] = request
                answered = view(**values)
                return answered if isinstance(answered, Response) else self.answer(declared, answered)

            self.routes.append(declared)
            options: dict[str, Any] = {"methods": [method.upper()]}
            if declared.method in BODY_METHODS:
                options["content_types"] = list(raw_body) or BODY_TYPES
            if auth == "tenant":
                options["authorizer"] = self.authorizer
            registered = endpoint(handle)
            self.app.route(path, **options)(registered)
            return registered

        return register

    @staticmethod
    def answer(route: Route, value: Any) -> Response:
        if isinstance(value, Repeat):
            if route.repeat_status is None:
                raise TypeError(f"{route.method} {route.path} declares no repeat_status")
            return json_response(to_json(value.body), route.repeat_status)
        if route.media_type != "application/json":
            return Response(body=value, status_code=route.status, headers={"Content-Type": f"{route.media_type}; charset=utf-8"})
        return json_response(to_json(value), route.status)

    def request(self) -> Request:
        """The request being answered: Chalice sets it before it calls a route."""
        request = self.app.current_request
        if request is None:
            raise RuntimeError("no request is being answered")
        return request

    def tenant(self) -> str:
        """The tenant of the request, which then takes one request from the tenant's rate limit.

        The authorizer resolved it; without one (a direct invocation), it is resolved here. The limit
        is taken here, not in the authorizer, whose answer API Gateway may cache per key.
        """
        from ..services import tenants

        request = self.request()
        resolved = (request.context or {}).get("authorizer") or {}
        if resolved.get("tenant_id"):
            tenant_id = resolved["tenant_id"]
        elif resolved.get("error"):
            raise Unauthorized(resolved["error"])
        else:
            tenant_id = tenants.authenticate(get_deps(), request.headers.get("authorization"))
        access_log.note_tenant(tenant_id)
        tenants.admit(get_deps(), tenant_id)
        return tenant_id
