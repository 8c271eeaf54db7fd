"""The OpenAPI 3.1 document, derived from the routes as declared (``api/routes.py``) and the
models that validate their requests: no route, path or parameter is written here.

tests/e2e/test_fuzz_openapi.py holds the server to it: every status, header and body the server
answers must be documented.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Any

from pydantic import BaseModel, TypeAdapter
from pydantic.json_schema import models_json_schema

from . import schemas as s
from .http import body_required
from .routes import Route

# Every error answer of every route has the contract's shape.
ERROR_DESCRIPTIONS = {
    400: "Malformed request: the body is not JSON",
    401: "Missing, unknown or revoked key, or a key of the wrong kind",
    404: "Unknown id (or another tenant's id: never 403)",
    409: "The state forbids the change",
    413: "Too large: body, event or number of events",
    415: "A body of another media type than the route takes",
    422: "Well-formed JSON that is not acceptable; details name the fields",
    429: "Too many requests for this tenant; retry after Retry-After seconds",
    503: "A dependency (store, index, embedder, LLM) did not answer; retry after Retry-After seconds",
}
RETRY_AFTER = {
    "Retry-After": {
        "description": "Seconds to wait before retrying",
        "required": True,
        "schema": {"type": "integer", "minimum": 0},
    }
}


def _path_id() -> dict[str, Any]:
    # Ids in paths: what the server accepts when a client chooses an id (schemas.Id), and what it
    # generates itself. Any other value can name nothing and answers 404.
    return TypeAdapter(s.Id).json_schema()


def _query_parameters(model: type[BaseModel]) -> list[dict[str, Any]]:
    """One parameter per field of the query model; a query parameter is absent, never null."""
    schema = model.model_json_schema(mode="validation")
    params = []
    for name, prop in schema["properties"].items():
        prop = {k: v for k, v in prop.items() if k != "title"}
        variants = [v for v in prop.pop("anyOf", []) if v != {"type": "null"}]
        if variants:
            prop = {**variants[0], **prop} if len(variants) == 1 else {"anyOf": variants, **prop}
        if "default" in prop and prop["default"] is None:
            del prop["default"]
        param: dict[str, Any] = {"name": name, "in": "query", "required": name in schema.get("required", ())}
        if "description" in prop:
            param["description"] = prop.pop("description")
        params.append({**param, "schema": prop})
    return params


# What a view that reads its body itself accepts, per media type: OTLP's export request as JSON
# (its fields are checked against the official definitions, unknown ones ignored) or protobuf.
RAW_BODIES: dict[str, dict[str, Any]] = {
    "application/json": {"schema": {
        "type": "object", "description": "An OTLP/JSON ExportTraceServiceRequest",
        "properties": {"resourceSpans": {"type": "array", "items": {"type": "object"}}}}},
    "application/x-protobuf": {"schema": {"type": "string", "format": "binary",
                                          "description": "An OTLP/protobuf ExportTraceServiceRequest"}},
}


def _json(ref: str) -> dict[str, Any]:
    return {"application/json": {"schema": {"$ref": f"#/components/schemas/{ref}"}}}


def _operation(route: Route) -> dict[str, Any]:
    name = route.path.strip("/").replace("/", "_").replace("{", "").replace("}", "").replace(".", "_")
    op: dict[str, Any] = {"summary": route.summary, "operationId": f"{route.method}_{name}"}
    params = [{"name": p, "in": "path", "required": True, "schema": _path_id()} for p in route.path_parameters]
    if route.query is not None:
        params += _query_parameters(route.query)
    if params:
        op["parameters"] = params
    if route.body is not None:
        op["requestBody"] = {"required": body_required(route.body), "content": _json(route.body.__name__)}
    elif route.raw_body:
        op["requestBody"] = {"required": True, "content": {media: RAW_BODIES[media] for media in route.raw_body}}
    ok: dict[str, Any] = {"description": "OK"}
    if route.media_type != "application/json":
        ok["content"] = {route.media_type: {"schema": {"type": "string"}}}
    elif route.response is not None:
        ok["content"] = _json(route.response.__name__)
    else:
        ok["content"] = {"application/json": {"schema": {"type": "object"}}}
    responses: dict[str, Any] = {str(route.status): ok}
    if route.repeat_status is not None:
        responses[str(route.repeat_status)] = {**ok, "description": "Already there: the client-chosen id was used before"}
    for code in route.statuses():
        responses[str(code)] = {"description": ERROR_DESCRIPTIONS[code], "content": _json("ErrorOut")}
        if code in (429, 503):
            responses[str(code)]["headers"] = RETRY_AFTER
    op["responses"] = responses
    if route.auth != "none":
        op["security"] = [{"bearer": []}]
        op["x-key"] = route.auth  # which key: a tenant's, or the admin key
    return op


@lru_cache(maxsize=1)
def openapi_document(routes: tuple[Route, ...]) -> dict[str, Any]:
    requests = {r.body for r in routes if r.body is not None}
    responses = {r.response for r in routes if r.response is not None} | {s.ErrorOut}
    _, top = models_json_schema(
        [(m, "validation") for m in sorted(requests, key=lambda m: m.__name__)]
        + [(m, "serialization") for m in sorted(responses, key=lambda m: m.__name__)],
        ref_template="#/components/schemas/{model}",
    )
    paths: dict[str, Any] = {}
    for route in routes:
        paths.setdefault(route.path, {})[route.method] = _operation(route)
    return {
        "openapi": "3.1.0",
        "info": {"title": "hindsight", "version": "1.0.0", "description": "Experience memory for LLM agents."},
        "paths": paths,
        "components": {
            "schemas": top.get("$defs", {}),
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
    }
