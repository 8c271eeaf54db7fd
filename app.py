"""HTTP entry point (AWS Chalice). Each route parses, calls one service function, maps errors."""
from __future__ import annotations

import json
import os
import uuid
from datetime import datetime

from chalice import AuthResponse, Chalice, Rate, Response

from chalicelib import redaction
from chalicelib.api import schemas as s
from chalicelib.api.http import (
    endpoint,
    experience_out,
    failed_review_out,
    hit_out,
    json_response,
    parse_json,
    trajectory_out,
    validate,
)
from chalicelib.container import get_deps, get_settings
from chalicelib.domain.errors import PayloadTooLarge, Unauthorized
from chalicelib.domain.models import Event, Experience, ExperienceStatus, RecallQuery, Signal, Source, Trajectory
from chalicelib.services import experiences, ingest, maintenance, recall, review, tenants

app = Chalice(app_name="hindsight", configure_logs=False)
redaction.install()  # Lambda's handler on the root logger: no key in a log line, whoever logs it
app.api.binary_types = []  # every body is JSON text
# Bodies are parsed as JSON whatever the client labels them (curl -d says form-urlencoded).
BODY_TYPES = ["application/json", "text/plain", "application/x-www-form-urlencoded"]


def _body(model, required: bool = True):
    return validate(model, parse_json(app.current_request.raw_body, get_settings().max_body_bytes, required))


@app.authorizer(name="api_key_authorizer", ttl_seconds=int(os.environ.get("HINDSIGHT_AUTHORIZER_TTL", "0")))
def api_key_authorizer(auth_request) -> AuthResponse:
    """Maps an API key to its tenant once per request (or per key and TTL, with API Gateway's cache).

    It never denies: the route answers 401 in the contract's error shape, which an authorizer's
    own denial cannot (a missing header is refused by API Gateway itself; infra/ gives that
    response the same shape).
    """
    context: "dict[str, str]" = {}  # a string: chalice's policy analyzer cannot read a bare generic here
    try:
        context["tenant_id"] = tenants.authenticate(get_deps(), auth_request.token)
    except Unauthorized as exc:
        context["error"] = exc.message
    return AuthResponse(routes=["*"], principal_id=context.get("tenant_id", "anonymous"), context=context)


def _tenant() -> str:
    """The tenant of the request, which then takes one request from the tenant's rate limit.

    The authorizer resolved it; without one (a direct invocation), it is resolved here. The limit
    is taken here, not in the authorizer, whose answer API Gateway may cache per key.
    """
    resolved = (app.current_request.context or {}).get("authorizer") or {}
    if resolved.get("tenant_id"):
        tenant_id = resolved["tenant_id"]
    elif resolved.get("error"):
        raise Unauthorized(resolved["error"])
    else:
        tenant_id = tenants.authenticate(get_deps(), app.current_request.headers.get("authorization"))
    tenants.admit(get_deps(), tenant_id)
    return tenant_id


def _admin() -> None:
    tenants.require_admin(get_deps(), app.current_request.headers.get("authorization"))


@app.route("/v1/health", methods=["GET"])
@endpoint
def health() -> Response:
    return json_response({"status": "ok", "backend": get_settings().backend})


@app.route("/v1/openapi.json", methods=["GET"])
@endpoint
def openapi() -> Response:
    from chalicelib.api.openapi import openapi_document

    return json_response(openapi_document())


@app.route("/v1/tenants", methods=["POST"], content_types=BODY_TYPES)
@endpoint
def create_tenant() -> Response:
    _admin()
    body = _body(s.TenantIn)
    tenant, key = tenants.create_tenant(get_deps(), body.name)
    return json_response({"tenant_id": tenant.tenant_id, "name": tenant.name, "api_key": key}, 201)


@app.route("/v1/tenants", methods=["GET"])
@endpoint
def list_tenants() -> Response:
    _admin()
    listed = tenants.list_tenants(get_deps())
    return json_response({"tenants": [{"tenant_id": t.tenant_id, "name": t.name, "created_at": t.created_at.isoformat()} for t in listed]})


@app.route("/v1/tenants/{tenant_id}/keys", methods=["POST"], content_types=BODY_TYPES)
@endpoint
def rotate_key(tenant_id: str) -> Response:
    _admin()
    b = _body(s.KeyRotateIn, required=False)
    key = tenants.rotate_key(get_deps(), tenant_id, revoke_old=b.revoke_old)
    return json_response({"tenant_id": tenant_id, "api_key": key}, 201)


@app.route("/v1/trajectories", methods=["POST"], content_types=BODY_TYPES, authorizer=api_key_authorizer)
@endpoint
def start_trajectory() -> Response:
    tenant_id = _tenant()
    b = _body(s.TrajectoryIn)
    traj, created = ingest.start_trajectory(
        get_deps(),
        Trajectory(
            tenant_id=tenant_id,
            trajectory_id=b.trajectory_id or "traj_" + uuid.uuid4().hex,
            agent_id=b.agent_id,
            user_id=b.user_id,
            goal=b.goal,
            task_type=b.task_type,
            tools=b.tools,
            intent=b.intent,
            tags=b.tags,
            metadata=b.metadata,
            created_at=datetime.min,  # set by the service from its clock
            updated_at=datetime.min,
        ),
    )
    return json_response(trajectory_out(traj), 201 if created else 200)


@app.route("/v1/trajectories/{trajectory_id}", methods=["GET"], authorizer=api_key_authorizer)
@endpoint
def get_trajectory(trajectory_id: str) -> Response:
    return json_response(trajectory_out(ingest.get_trajectory(get_deps(), _tenant(), trajectory_id)))


@app.route("/v1/trajectories/{trajectory_id}/events", methods=["POST"], content_types=BODY_TYPES, authorizer=api_key_authorizer)
@endpoint
def append_events(trajectory_id: str) -> Response:
    tenant_id = _tenant()
    settings = get_settings()
    data = parse_json(app.current_request.raw_body, settings.max_body_bytes)
    events = data.get("events") if isinstance(data, dict) else None
    if isinstance(events, list):
        if len(events) > settings.max_events_per_call:
            raise PayloadTooLarge(f"at most {settings.max_events_per_call} events per call, got {len(events)}")
        for i, raw in enumerate(events):
            if len(json.dumps(raw)) > settings.max_event_bytes:
                raise PayloadTooLarge(f"events.{i} is larger than {settings.max_event_bytes} bytes")
    b = validate(s.EventsIn, data)
    now = get_deps().clock.now()
    result = ingest.append_events(
        get_deps(),
        tenant_id,
        trajectory_id,
        [
            Event(
                event_id=e.event_id or "evt_" + uuid.uuid4().hex,
                type=e.type,
                timestamp=e.timestamp or now,
                content=e.content,
                node_id=e.node_id,
                parent_id=e.parent_id,
                context=e.context.model_dump(exclude_none=True),
            )
            for e in b.events
        ],
    )
    return json_response({"accepted": result.accepted, "duplicates": result.duplicates}, 202)


@app.route("/v1/trajectories/{trajectory_id}/finalize", methods=["POST"], content_types=BODY_TYPES, authorizer=api_key_authorizer)
@endpoint
def finalize(trajectory_id: str) -> Response:
    tenant_id = _tenant()
    b = _body(s.FinalizeIn)
    traj = ingest.finalize(get_deps(), tenant_id, trajectory_id, b.outcome, b.feedback)
    return json_response(trajectory_out(traj), 202)


@app.route("/v1/experiences", methods=["POST"], content_types=BODY_TYPES, authorizer=api_key_authorizer)
@endpoint
def write_experience() -> Response:
    tenant_id = _tenant()
    b = _body(s.ExperienceIn)
    source = Source(b.source)
    exp, created = experiences.write_experience(
        get_deps(),
        Experience(
            tenant_id=tenant_id,
            experience_id=b.experience_id or "",
            situation=b.situation,
            action=b.action,
            result=b.result,
            lesson=b.lesson or b.advice,
            advice=b.advice or b.lesson,
            created_at=datetime.min,  # set by the service from its clock
            updated_at=datetime.min,
            renewed_at=datetime.min,
            tags=b.tags,
            task_type=b.task_type,
            tools=b.tools,
            agent_id=b.agent_id,
            user_id=b.user_id,
            source=source,
            sources=b.sources,
            confidence=b.confidence if b.confidence is not None else {"human": 0.8, "agent": 0.6, "simulation": 0.4}[source.value],
        ),
    )
    return json_response(experience_out(exp), 201 if created else 200)


@app.route("/v1/experiences", methods=["GET"], authorizer=api_key_authorizer)
@endpoint
def list_experiences() -> Response:
    tenant_id = _tenant()
    q = validate(s.ListQuery, dict(app.current_request.query_params or {}))
    page = experiences.list_experiences(
        get_deps(), tenant_id, q.agent_id, ExperienceStatus(q.status) if q.status else None, q.limit, q.cursor
    )
    return json_response({"items": [experience_out(e) for e in page.items], "cursor": page.cursor})


@app.route("/v1/experiences/{experience_id}", methods=["GET"], authorizer=api_key_authorizer)
@endpoint
def get_experience(experience_id: str) -> Response:
    return json_response(experience_out(experiences.get_experience(get_deps(), _tenant(), experience_id)))


@app.route("/v1/experiences/{experience_id}", methods=["DELETE"], content_types=BODY_TYPES, authorizer=api_key_authorizer)
@endpoint
def forget_experience(experience_id: str) -> Response:
    tenant_id = _tenant()
    b = _body(s.ForgetIn, required=False)
    return json_response(experience_out(experiences.forget(get_deps(), tenant_id, experience_id, b.reason)))


@app.route("/v1/experiences/{experience_id}/feedback", methods=["POST"], content_types=BODY_TYPES, authorizer=api_key_authorizer)
@endpoint
def experience_feedback(experience_id: str) -> Response:
    tenant_id = _tenant()
    b = _body(s.FeedbackIn)
    return json_response(experience_out(experiences.feedback(get_deps(), tenant_id, experience_id, Signal(b.signal))))


@app.route("/v1/recall", methods=["POST"], content_types=BODY_TYPES, authorizer=api_key_authorizer)
@endpoint
def recall_route() -> Response:
    tenant_id = _tenant()
    b = _body(s.RecallIn)
    hits, advice = recall.recall(
        get_deps(),
        RecallQuery(
            tenant_id=tenant_id,
            query=b.query,
            agent_id=b.agent_id,
            user_id=b.user_id,
            task_type=b.task_type,
            tools=tuple(b.tools),
            intent=b.intent,
            tags=tuple(b.tags),
            top_k=b.top_k,
            min_score=b.min_score,
        ),
    )
    return json_response({"hits": [hit_out(h) for h in hits], "advice": advice, "advice_placement": get_deps().advice_placement})


@app.route("/v1/maintenance/decay", methods=["POST"], content_types=BODY_TYPES)
@endpoint
def decay() -> Response:
    _admin()
    b = _body(s.DecayIn, required=False)
    report = maintenance.run_decay(get_deps(), b.as_of)
    return json_response({"decayed": report.decayed, "archived": report.archived})


@app.route("/v1/maintenance/failed-reviews", methods=["GET"])
@endpoint
def failed_reviews() -> Response:
    _admin()
    q = validate(s.FailedReviewsQuery, dict(app.current_request.query_params or {}))
    jobs = review.failed_reviews(get_deps(), q.tenant_id, q.limit)
    return json_response({"failed": [failed_review_out(j) for j in jobs]})


@app.route("/v1/maintenance/redrive", methods=["POST"], content_types=BODY_TYPES)
@endpoint
def redrive() -> Response:
    _admin()
    b = _body(s.RedriveIn, required=False)
    return json_response({"redriven": review.redrive_failed(get_deps(), b.tenant_id, b.trajectory_ids)})


@app.route("/v1/maintenance/reindex", methods=["POST"], content_types=BODY_TYPES, authorizer=api_key_authorizer)
@endpoint
def reindex() -> Response:
    return json_response({"reindexed": maintenance.reindex_tenant(get_deps(), _tenant())})


@app.route("/v1/stats", methods=["GET"], authorizer=api_key_authorizer)
@endpoint
def stats() -> Response:
    return json_response(maintenance.tenant_stats(get_deps(), _tenant()))


# --- background work in the cloud (locally, chalicelib.worker does the same in a thread) ---------

JOBS_STREAM_ARN = os.environ.get(
    "HINDSIGHT_JOBS_STREAM_ARN", "arn:aws:dynamodb:us-east-1:000000000000:table/hindsight-dev-review-jobs/stream/local"
)


@app.on_dynamodb_record(stream_arn=JOBS_STREAM_ARN, batch_size=10, starting_position="TRIM_HORIZON", name="review_worker")
def review_worker(event) -> dict:
    from chalicelib.lambda_handlers import review_stream

    return review_stream(event.to_dict(), event.context)


@app.schedule(Rate(1, unit=Rate.MINUTES), name="review_sweeper")
def review_sweeper(event) -> dict:
    from chalicelib.lambda_handlers import sweep

    return sweep()


@app.schedule(Rate(1, unit=Rate.HOURS), name="decay_schedule")
def decay_schedule(event) -> dict:
    from chalicelib.lambda_handlers import decay

    return decay()
