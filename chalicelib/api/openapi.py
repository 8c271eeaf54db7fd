"""The OpenAPI 3.1 document, generated from the same models that validate requests."""
from __future__ import annotations

from functools import lru_cache
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from . import schemas as s

# (method, path, summary, request model, success status, response model, auth, error statuses)
ROUTES: list[tuple[str, str, str, type[BaseModel] | None, int, type[BaseModel] | None, str, tuple[int, ...]]] = [
    ("get", "/v1/health", "Liveness and backend", None, 200, s.HealthOut, "none", ()),
    ("get", "/v1/openapi.json", "This document", None, 200, None, "none", ()),
    ("post", "/v1/tenants", "Create a tenant and its first API key", s.TenantIn, 201, s.TenantOut, "admin", (400, 401, 413, 422)),
    ("get", "/v1/tenants", "List tenants", None, 200, s.TenantList, "admin", (401,)),
    ("post", "/v1/tenants/{tenant_id}/keys", "Issue a new API key (and revoke the old ones)", s.KeyRotateIn, 201, s.KeyOut, "admin", (400, 401, 404, 413, 422)),
    ("post", "/v1/trajectories", "Start recording a task", s.TrajectoryIn, 201, s.TrajectoryOut, "tenant", (400, 401, 413, 422)),
    ("get", "/v1/trajectories/{trajectory_id}", "A trajectory and its review", None, 200, s.TrajectoryOut, "tenant", (401, 404)),
    ("post", "/v1/trajectories/{trajectory_id}/events", "Append events (at most 100)", s.EventsIn, 202, s.EventsOut, "tenant", (400, 401, 404, 409, 413, 422)),
    ("post", "/v1/trajectories/{trajectory_id}/finalize", "End the task; its review runs asynchronously", s.FinalizeIn, 202, s.TrajectoryOut, "tenant", (400, 401, 404, 409, 413, 422)),
    ("post", "/v1/experiences", "Write a lesson by hand", s.ExperienceIn, 201, s.ExperienceOut, "tenant", (400, 401, 413, 422)),
    ("get", "/v1/experiences", "List lessons, newest first", None, 200, s.ExperienceList, "tenant", (400, 401, 422)),
    ("get", "/v1/experiences/{experience_id}", "One lesson", None, 200, s.ExperienceOut, "tenant", (401, 404)),
    ("delete", "/v1/experiences/{experience_id}", "Forget a lesson (kept as a tombstone)", s.ForgetIn, 200, s.ExperienceOut, "tenant", (400, 401, 404, 413, 422)),
    ("post", "/v1/experiences/{experience_id}/feedback", "Report whether a lesson helped", s.FeedbackIn, 200, s.ExperienceOut, "tenant", (400, 401, 404, 409, 413, 422)),
    ("post", "/v1/recall", "Lessons for the situation at hand, with advice text", s.RecallIn, 200, s.RecallOut, "tenant", (400, 401, 413, 422)),
    ("post", "/v1/maintenance/reindex", "Rebuild the tenant's vector index from the store", None, 200, s.ReindexOut, "tenant", (401,)),
    ("get", "/v1/stats", "Counts by status and a freshness histogram", None, 200, s.StatsOut, "tenant", (401,)),
    ("post", "/v1/maintenance/decay", "Decay freshness and archive stale lessons", s.DecayIn, 200, s.DecayOut, "admin", (400, 401, 413, 422)),
    ("get", "/v1/maintenance/failed-reviews", "Reviews given up on after their last attempt, with the reason", None, 200, s.FailedReviewList, "admin", (400, 401, 422)),
    ("post", "/v1/maintenance/redrive", "Send failed reviews round again (all, a tenant's, or listed trajectories)", s.RedriveIn, 200, s.RedriveOut, "admin", (400, 401, 413, 422)),
]

_LIST_PARAMS = [
    {"name": "agent_id", "in": "query", "required": False, "schema": {"type": "string", "maxLength": 200}},
    {"name": "status", "in": "query", "required": False, "schema": {"type": "string", "enum": ["active", "archived", "forgotten"]}},
    {"name": "limit", "in": "query", "required": False, "schema": {"type": "integer", "minimum": 1, "maximum": 200}},
    {"name": "cursor", "in": "query", "required": False, "schema": {"type": "string", "maxLength": 1000}},
]


@lru_cache(maxsize=1)
def openapi_document() -> dict[str, Any]:
    requests = {r[3] for r in ROUTES if r[3] is not None}
    responses = {r[5] for r in ROUTES if r[5] is not None} | {s.ErrorOut}
    _, top = models_json_schema(
        [(m, "validation") for m in sorted(requests, key=lambda m: m.__name__)]
        + [(m, "serialization") for m in sorted(responses, key=lambda m: m.__name__)],
        ref_template="#/components/schemas/{model}",
    )
    paths: dict[str, Any] = {}
    for method, path, summary, req, status, resp, auth, errors in ROUTES:
        op: dict[str, Any] = {"summary": summary, "operationId": f"{method}_{path.strip('/').replace('/', '_').replace('{', '').replace('}', '').replace('.', '_')}"}
        params = [
            {"name": p[1:-1], "in": "path", "required": True, "schema": {"type": "string", "maxLength": 200}}
            for p in path.split("/")
            if p.startswith("{")
        ]
        if path == "/v1/experiences" and method == "get":
            params += _LIST_PARAMS
        if params:
            op["parameters"] = params
        if req is not None:
            op["requestBody"] = {
                "required": method != "delete",
                "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{req.__name__}"}}},
            }
        ok: dict[str, Any] = {"description": "OK"}
        if resp is not None:
            ok["content"] = {"application/json": {"schema": {"$ref": f"#/components/schemas/{resp.__name__}"}}}
        elif path.endswith("openapi.json"):
            ok["content"] = {"application/json": {"schema": {"type": "object"}}}
        responses: dict[str, Any] = {str(status): ok}
        for code in errors:
            responses[str(code)] = {
                "description": "Error",
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorOut"}}},
            }
        op["responses"] = responses
        if auth != "none":
            op["security"] = [{"bearer": []}]
        paths.setdefault(path, {})[method] = op
    return {
        "openapi": "3.1.0",
        "info": {"title": "hindsight", "version": "1.0.0", "description": "Experience memory for LLM agents."},
        "paths": paths,
        "components": {
            "schemas": top.get("$defs", {}),
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
    }
