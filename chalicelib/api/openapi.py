"""The OpenAPI 3.1 document, generated from the same models that validate requests.

tests/e2e/test_fuzz_openapi.py holds the server to it: every status, header and body the server
answers must be documented here, so a change to a route without a change here fails that test.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from . import schemas as s

# Every error answer of every route has the contract's shape.
ERROR_DESCRIPTIONS = {
    400: "Malformed request: the body is not JSON",
    401: "Missing, unknown or revoked key, or a key of the wrong kind",
    404: "Unknown id (or another tenant's id: never 403)",
    409: "The state forbids the change",
    413: "Too large: body, event or number of events",
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


# Ids in paths: what the server accepts when a client chooses an id (schemas.Id), and what it
# generates itself. Any other value can name nothing and answers 404.
_PATH_ID = {"type": "string", "minLength": 1, "maxLength": 200, "pattern": r"^[A-Za-z0-9][A-Za-z0-9._:@/+=-]*$"}

_LIST_PARAMS = (
    {"name": "agent_id", "in": "query", "required": False, "schema": _PATH_ID},
    {"name": "status", "in": "query", "required": False, "schema": {"type": "string", "enum": ["active", "archived", "forgotten"]}},
    {"name": "limit", "in": "query", "required": False, "schema": {"type": "integer", "minimum": 1, "maximum": 200, "default": 50}},
    {"name": "cursor", "in": "query", "required": False, "schema": {"type": "string", "maxLength": 1000},
     "description": "The cursor of the previous page; one the server did not issue answers 422"},
)
_FAILED_REVIEWS_PARAMS = (
    {"name": "tenant_id", "in": "query", "required": False, "schema": _PATH_ID, "description": "Only this tenant's"},
    {"name": "limit", "in": "query", "required": False, "schema": {"type": "integer", "minimum": 1, "maximum": 1000, "default": 100}},
)


@dataclass(frozen=True)
class Route:
    method: str
    path: str
    summary: str
    request: type[BaseModel] | None = None
    status: int = 200
    response: type[BaseModel] | None = None
    auth: str = "tenant"  # "tenant" | "admin" | "none"
    errors: tuple[int, ...] = ()
    # 200 when a client-chosen id repeats a write (idempotent): the existing resource, unchanged
    repeat_status: int | None = None
    # False for routes that touch no store, index or model and so cannot answer 503
    uses_dependencies: bool = True
    query: tuple[dict[str, Any], ...] = ()  # query parameters

    def statuses(self) -> tuple[int, ...]:
        errors = set(self.errors)
        if self.auth != "none":
            errors.add(401)
        if self.auth == "tenant":
            errors.add(429)  # rate limits are per tenant
        if self.request is not None:
            errors |= {400, 413, 422}
        if self.uses_dependencies:
            errors.add(503)
        return tuple(sorted(errors))


ROUTES: list[Route] = [
    Route("get", "/v1/health", "Liveness and backend", response=s.HealthOut, auth="none", uses_dependencies=False),
    Route("get", "/v1/openapi.json", "This document", auth="none", uses_dependencies=False),
    Route("post", "/v1/tenants", "Create a tenant and its first API key", s.TenantIn, 201, s.TenantOut, "admin"),
    Route("get", "/v1/tenants", "List tenants", None, 200, s.TenantList, "admin"),
    Route("post", "/v1/tenants/{tenant_id}/keys", "Issue a new API key (and revoke the old ones)", s.KeyRotateIn, 201, s.KeyOut, "admin", (404,)),
    Route("post", "/v1/trajectories", "Start recording a task; a repeated trajectory_id answers 200 with the existing one",
          s.TrajectoryIn, 201, s.TrajectoryOut, repeat_status=200),
    Route("get", "/v1/trajectories/{trajectory_id}", "A trajectory and its review", None, 200, s.TrajectoryOut, errors=(404,)),
    Route("post", "/v1/trajectories/{trajectory_id}/events", "Append events (at most 100)", s.EventsIn, 202, s.EventsOut, errors=(404, 409)),
    Route("post", "/v1/trajectories/{trajectory_id}/finalize", "End the task; its review runs asynchronously",
          s.FinalizeIn, 202, s.TrajectoryOut, errors=(404, 409)),
    Route("post", "/v1/experiences", "Write a lesson by hand; a repeated experience_id answers 200 with the stored one",
          s.ExperienceIn, 201, s.ExperienceOut, repeat_status=200),
    Route("get", "/v1/experiences", "List lessons, newest first", None, 200, s.ExperienceList, errors=(422,), query=_LIST_PARAMS),
    Route("get", "/v1/experiences/{experience_id}", "One lesson", None, 200, s.ExperienceOut, errors=(404,)),
    Route("delete", "/v1/experiences/{experience_id}", "Forget a lesson (kept as a tombstone)", s.ForgetIn, 200, s.ExperienceOut, errors=(404,)),
    Route("post", "/v1/experiences/{experience_id}/feedback", "Report whether a lesson helped", s.FeedbackIn, 200, s.ExperienceOut, errors=(404, 409)),
    Route("post", "/v1/recall", "Lessons for the situation at hand, with advice text", s.RecallIn, 200, s.RecallOut),
    Route("post", "/v1/maintenance/reindex", "Rebuild the tenant's vector index from the store", None, 200, s.ReindexOut),
    Route("get", "/v1/stats", "Counts by status and a freshness histogram", None, 200, s.StatsOut),
    Route("post", "/v1/maintenance/decay", "Decay freshness and archive stale lessons", s.DecayIn, 200, s.DecayOut, "admin"),
    Route("get", "/v1/maintenance/failed-reviews", "Reviews given up on after their last attempt, with the reason",
          None, 200, s.FailedReviewList, "admin", (422,), query=_FAILED_REVIEWS_PARAMS),
    Route("post", "/v1/maintenance/redrive", "Send failed reviews round again (all, a tenant's, or listed trajectories)",
          s.RedriveIn, 200, s.RedriveOut, "admin"),
]

def _json(ref: str) -> dict[str, Any]:
    return {"application/json": {"schema": {"$ref": f"#/components/schemas/{ref}"}}}


def _operation(route: Route) -> dict[str, Any]:
    name = route.path.strip("/").replace("/", "_").replace("{", "").replace("}", "").replace(".", "_")
    op: dict[str, Any] = {"summary": route.summary, "operationId": f"{route.method}_{name}"}
    params = [
        {"name": p[1:-1], "in": "path", "required": True, "schema": _PATH_ID}
        for p in route.path.split("/")
        if p.startswith("{")
    ]
    params += route.query
    if params:
        op["parameters"] = params
    if route.request is not None:
        op["requestBody"] = {
            # an empty body is read as {} where every field is optional
            "required": bool(route.request.model_json_schema().get("required")),
            "content": _json(route.request.__name__),
        }
    ok: dict[str, Any] = {"description": "OK"}
    if route.response is not None:
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
    return op


@lru_cache(maxsize=1)
def openapi_document() -> dict[str, Any]:
    requests = {r.request for r in ROUTES if r.request is not None}
    responses = {r.response for r in ROUTES if r.response is not None} | {s.ErrorOut}
    _, top = models_json_schema(
        [(m, "validation") for m in sorted(requests, key=lambda m: m.__name__)]
        + [(m, "serialization") for m in sorted(responses, key=lambda m: m.__name__)],
        ref_template="#/components/schemas/{model}",
    )
    paths: dict[str, Any] = {}
    for route in ROUTES:
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
