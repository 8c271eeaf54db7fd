"""HTTP entry point (AWS Chalice). Each route is declared once (``chalicelib/api/routes.py``): its
models, status and errors make both the Chalice route and its OpenAPI entry; the view calls one
service function with validated plain values.

The services and presenters are imported in the views that call them: a cold start (one Lambda
instance, one first request) loads the domain code that request needs and no other.
"""
from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any

from chalicelib import gc_pause

if TYPE_CHECKING:
    from chalicelib.domain.ratelimit import CostPolicy

with gc_pause.loading():  # the API's imports, scanned by no collection (gc_pause)
    from chalice import Chalice, IAMAuthorizer, Rate, Response

    from chalicelib import redaction
    from chalicelib.api import presenters as out
    from chalicelib.api import schemas as s
    from chalicelib.api import tenant_job_schemas as tj
    from chalicelib.api.routes import Repeat, Router
    from chalicelib.container import get_deps, get_settings
    from chalicelib.domain import usage
    from chalicelib.domain.errors import PayloadTooLarge, Unauthorized
    from chalicelib.settings import Settings

app = Chalice(app_name="hindsight", configure_logs=False)
redaction.install()  # Lambda's handler on the root logger: no key in a log line, whoever logs it
app.api.binary_types = ["application/x-protobuf"]  # OTLP/HTTP traces; every other body is JSON text


# Seconds API Gateway keeps the authorizer's answer for a key (read here: Chalice writes it into the
# API's definition when it packages the app; infra/ sets it, 60-300 s). A revoked key keeps working
# for at most this long in the cloud; locally it is refused at once (no cache).
AUTHORIZER_TTL_SECONDS = int(os.environ.get("HINDSIGHT_AUTHORIZER_TTL", "0"))
# Who may call the admin routes: "key" (the admin key as a bearer token: the embedded server, a
# local aws stack) or "iam" (API Gateway checks a SigV4 signature and the caller's IAM permission,
# and the call lands in CloudTrail; the stack in infra/ sets it, and holds no admin key)
ADMIN_AUTH = os.environ.get("HINDSIGHT_ADMIN_AUTH", "key")
if ADMIN_AUTH not in ("key", "iam"):
    raise ValueError(f"HINDSIGHT_ADMIN_AUTH must be key or iam, not {ADMIN_AUTH!r}")


@app.authorizer(name="api_key_authorizer", ttl_seconds=AUTHORIZER_TTL_SECONDS)
@gc_pause.first_call
def api_key_authorizer(auth_request) -> dict:
    """An API key to its tenant: an Allow on every route with the tenant in the context, or a Deny
    with the reason (``chalicelib/api/gateway_auth.py``: both are cached per key by API Gateway).

    No cache of its own: a key revoked in the store is refused by the next call, so a rotation
    takes effect within the gateway's TTL. A store that fails raises: API Gateway answers 503
    (AUTHORIZER_FAILURE, never cached).
    """
    from chalicelib.api import gateway_auth
    from chalicelib.services import tenants

    try:
        tenant_id = tenants.authenticate(get_deps(), auth_request.token)
    except Unauthorized as exc:
        return gateway_auth.deny(auth_request.method_arn, exc.message)
    return gateway_auth.allow(auth_request.method_arn, tenant_id)


api = Router(app, authorizer=api_key_authorizer, admin_authorizer=IAMAuthorizer() if ADMIN_AUTH == "iam" else None)


@api.route("GET", "/v1/health", "Liveness and backend", response=s.HealthOut, auth="none", uses_dependencies=False)
def health() -> s.HealthOut:
    return s.HealthOut(status="ok", backend=get_settings().backend)


@api.route("GET", "/v1/openapi.json", "This document", auth="none", uses_dependencies=False)
def openapi() -> dict:
    from chalicelib.api.openapi import openapi_document

    return openapi_document(tuple(api.routes))


@api.route("GET", "/v1/docs", "This API as a page to browse (renders /v1/openapi.json; works offline)",
           auth="none", uses_dependencies=False, media_type="text/html")
def docs_page() -> str:
    from pathlib import Path

    return (Path(__file__).parent / "chalicelib" / "api" / "docs.html").read_text(encoding="utf-8")


@api.route("POST", "/v1/tenants", "Create a tenant and its first API key",
           body=s.TenantIn, response=s.TenantOut, status=201, auth="admin", errors=(409,))
def create_tenant(body: s.TenantIn) -> s.TenantOut:
    from chalicelib.services import tenants

    tenant, key = tenants.create_tenant(get_deps(), body.name)
    return s.TenantOut(tenant_id=tenant.tenant_id, name=tenant.name, api_key=key)


@api.route("GET", "/v1/tenants", "List tenants, oldest first, a page at a time", query=s.TenantsQuery, response=s.TenantList,
           auth="admin")
def list_tenants(query: s.TenantsQuery) -> s.TenantList:
    from chalicelib.services import tenants

    page = tenants.list_tenants(get_deps(), query.limit, query.cursor)
    return s.TenantList(tenants=[out.tenant_summary(t) for t in page.items], cursor=page.cursor)


@api.route("POST", "/v1/tenants/{tenant_id}/keys", "Issue a new API key (and revoke the old ones)",
           body=s.KeyRotateIn, response=s.KeyOut, status=201, auth="admin", errors=(404,))
def rotate_key(tenant_id: str, body: s.KeyRotateIn) -> s.KeyOut:
    from chalicelib.services import tenants

    return s.KeyOut(tenant_id=tenant_id, api_key=tenants.rotate_key(get_deps(), tenant_id, revoke_old=body.revoke_old))


# --- a tenant's export and deletion: admin jobs (services.tenant_jobs; docs/operations.md), run by
# the tenant jobs schedule in the cloud and by the worker of the embedded server, one run at a time


@api.route("POST", "/v1/tenants/{tenant_id}/exports", "Start an export of everything the tenant owns (JSON Lines parts)",
           response=tj.TenantExportOut, status=202, auth="admin", errors=(404, 409))
def start_tenant_export(tenant_id: str) -> tj.TenantExportOut:
    from chalicelib.services import tenant_jobs

    return tj.export_out(tenant_jobs.start_export(get_deps(), tenant_id))


@api.route("GET", "/v1/tenants/{tenant_id}/exports/{export_id}", "An export's progress and its parts",
           response=tj.TenantExportOut, auth="admin", errors=(404,))
def tenant_export(tenant_id: str, export_id: str) -> tj.TenantExportOut:
    from chalicelib.services import tenant_jobs

    return tj.export_out(tenant_jobs.export_status(get_deps(), tenant_id, export_id))


@api.route("GET", "/v1/tenants/{tenant_id}/exports/{export_id}/data", "One part of an export, as JSON Lines",
           query=tj.ExportPartQuery, auth="admin", errors=(404,), media_type="application/x-ndjson")
def tenant_export_data(tenant_id: str, export_id: str, query: tj.ExportPartQuery) -> str:
    from chalicelib.services import tenant_jobs

    return tenant_jobs.export_part(get_deps(), tenant_id, export_id, query.part).decode()


@api.route("DELETE", "/v1/tenants/{tenant_id}", "Delete a tenant: its keys are revoked at once, then everything it owns is purged",
           response=tj.TenantDeletionOut, status=202, auth="admin", errors=(404,))
def delete_tenant(tenant_id: str) -> tj.TenantDeletionOut:
    from chalicelib.services import tenant_jobs

    # the purge waits for the authorizer's cache of the revoked keys to run out (a request it still
    # let through is purged with the rest)
    return tj.deletion_out(tenant_jobs.start_deletion(get_deps(), tenant_id, grace_seconds=AUTHORIZER_TTL_SECONDS))


@api.route("GET", "/v1/tenants/{tenant_id}/deletion", "A tenant deletion's progress", response=tj.TenantDeletionOut,
           auth="admin", errors=(404,))
def tenant_deletion(tenant_id: str) -> tj.TenantDeletionOut:
    from chalicelib.services import tenant_jobs

    return tj.deletion_out(tenant_jobs.deletion_status(get_deps(), tenant_id))

@api.route("POST", "/v1/tenants/{tenant_id}/retention",
           "Set how long the events of the trajectories a tenant starts from now on are kept (null: the default)",
           body=s.RetentionIn, response=s.TenantSummary, auth="admin", errors=(404,))
def set_retention(tenant_id: str, body: s.RetentionIn) -> s.TenantSummary:
    from chalicelib.services import tenants

    return out.tenant_summary(tenants.set_event_retention(get_deps(), tenant_id, body.event_retention_days))


@api.route("POST", "/v1/trajectories", "Start recording a task; a repeated trajectory_id answers 200 with the existing one",
           body=s.TrajectoryIn, response=s.TrajectoryOut, status=201, repeat_status=200)
def start_trajectory(tenant_id: str, body: s.TrajectoryIn) -> s.TrajectoryOut | Repeat:
    from chalicelib.services import ingest

    traj, created = ingest.start_trajectory(get_deps(), tenant_id, **body.model_dump())
    now = get_deps().clock.now()
    return out.trajectory_out(traj, now) if created else Repeat(out.trajectory_out(traj, now))


@api.route("GET", "/v1/trajectories/{trajectory_id}", "A trajectory and its review",
           response=s.TrajectoryOut, errors=(404,))
def get_trajectory(trajectory_id: str, tenant_id: str) -> s.TrajectoryOut:
    from chalicelib.services import ingest

    deps = get_deps()
    return out.trajectory_out(ingest.get_trajectory(deps, tenant_id, trajectory_id), deps.clock.now())


@api.route("GET", "/v1/trajectories/{trajectory_id}/events",
           "Its events in order, a page at a time, as a decision graph with the attribution of each step",
           query=s.EventsQuery, response=s.TrajectoryEventsOut, errors=(404,))
def trajectory_events(trajectory_id: str, tenant_id: str, query: s.EventsQuery) -> s.TrajectoryEventsOut:
    from chalicelib.services import ingest

    page = ingest.trajectory_graph(get_deps(), tenant_id, trajectory_id, query.limit, query.cursor)
    return out.trajectory_events_out(trajectory_id, page.events, page.attribution, page.cursor, page.expired)


# json.dumps writes at most this many characters per byte of the JSON text it parsed (a DEL byte or
# a two-byte letter becomes a 6-character escape; a number grows at most 4.5 times, 1e15 to
# 1000000000000000.0; ',' and ':' get a space)
DUMPS_CHARS_PER_BODY_BYTE = 6


def _event_limits(data: object, raw: bytes) -> None:
    """Too many or too large events answer 413 before the events are validated one by one.

    An event's size is the length of its ``json.dumps``: a body of at most a sixth of the limit
    holds no event over it, and serializing its events to learn that would cost more than
    validating them."""
    settings = get_settings()
    events = data.get("events") if isinstance(data, dict) else None
    if isinstance(events, list):
        if len(events) > settings.max_events_per_call:
            raise PayloadTooLarge(f"at most {settings.max_events_per_call} events per call, got {len(events)}")
        if len(raw) * DUMPS_CHARS_PER_BODY_BYTE <= settings.max_event_bytes:
            return
        if len(json.dumps(events)) <= settings.max_event_bytes:
            return  # each event's text is a part of the list's
        for i, event in enumerate(events):
            if len(json.dumps(event)) > settings.max_event_bytes:
                raise PayloadTooLarge(f"events.{i} is larger than {settings.max_event_bytes} bytes")


def _costs() -> "CostPolicy":
    from chalicelib.domain.ratelimit import CostPolicy

    settings = get_settings()
    return CostPolicy(settings.rate_cost_hits_per_token, settings.rate_cost_query_chars_per_token, settings.rate_cost_events_per_token,
                      settings.rate_cost_lessons_per_token)


@api.route("POST", "/v1/trajectories/{trajectory_id}/events",
           f"Append events (at most {Settings.model_fields['max_events_per_call'].default})",
           body=s.EventsIn, response=s.EventsOut, status=202, errors=(404, 409), check=_event_limits,
           cost=lambda body: _costs().append(len(body.events)), usage=lambda body, answer: {usage.EVENTS: answer.accepted})
def append_events(trajectory_id: str, tenant_id: str, body: s.EventsIn) -> s.EventsOut:
    from chalicelib.services import ingest

    # the validated fields as they are (content was dumped by its validator): no deep copy of each
    # event; each context dumped by its serializer, as model_dump(exclude_none=True) does, without
    # the method's wrapper (twenty times per call)
    context = s.EventContext.__pydantic_serializer__.to_python
    events = [
        {"event_id": e.event_id, "type": e.type, "timestamp": e.timestamp, "node_id": e.node_id, "parent_id": e.parent_id,
         "content": e.content, "context": context(e.context, exclude_none=True)}
        for e in body.events
    ]
    result = ingest.append_events(get_deps(), tenant_id, trajectory_id, events)
    return s.EventsOut(accepted=result.accepted, duplicates=result.duplicates)


@api.route("POST", "/v1/trajectories/{trajectory_id}/finalize", "End the task; its review runs asynchronously",
           body=s.FinalizeIn, response=s.TrajectoryOut, status=202, errors=(404, 409))
def finalize(trajectory_id: str, tenant_id: str, body: s.FinalizeIn) -> s.TrajectoryOut:
    from chalicelib.services import ingest

    deps = get_deps()
    return out.trajectory_out(ingest.finalize(deps, tenant_id, trajectory_id, body.outcome, body.feedback), deps.clock.now())


@api.route("POST", "/v1/otlp/v1/traces", "OTLP/HTTP traces in (protobuf or JSON, gzip): each trace becomes a trajectory",
           errors=(413, 415, 422), raw_body=("application/x-protobuf", "application/json"))
def otlp_traces(tenant_id: str, request: Any) -> Response:
    from chalicelib.api import otlp
    from chalicelib.domain.otlp import assemble
    from chalicelib.services.otlp import record_traces

    headers = request.headers
    kind = otlp.media_type(headers.get("content-type"))
    limit = get_settings().max_body_bytes
    raw = request.raw_body or b""
    if len(raw) > limit:
        raise PayloadTooLarge(f"request body is larger than {limit} bytes")
    drafts = assemble(otlp.spans(otlp.decode(otlp.inflate(raw, headers.get("content-encoding"), limit), kind)))
    for draft in drafts:  # the same limits as the trajectory routes
        s.validate_trace(draft)
    recorded = record_traces(get_deps(), tenant_id, drafts)
    # protobuf when the client accepts it: a binary answer needs the Accept header behind API Gateway
    accepts = "application/x-protobuf" in (headers.get("accept") or "")
    body, media = otlp.answer(kind if accepts else otlp.JSON, recorded.rejected_spans, recorded.message)
    return Response(body=body, status_code=200, headers={"Content-Type": media})


@api.route("POST", "/v1/experiences", "Write a lesson by hand; a repeated experience_id answers 200 with the stored one",
           body=s.ExperienceIn, response=s.ExperienceWritten, status=201, repeat_status=200, errors=(404, 409))
def write_experience(tenant_id: str, body: s.ExperienceIn) -> s.ExperienceWritten | Repeat:
    from chalicelib.services import experiences

    written = experiences.write_experience(get_deps(), tenant_id, **body.model_dump())
    answer = out.experience_written(written.experience, written.correction_of)
    return answer if written.created else Repeat(answer)


@api.route("GET", "/v1/experiences", "List lessons, newest first", query=s.ListQuery, response=s.ExperienceList)
def list_experiences(tenant_id: str, query: s.ListQuery) -> s.ExperienceList:
    from chalicelib.services import experiences

    page = experiences.list_experiences(get_deps(), tenant_id, **query.model_dump())
    return s.ExperienceList(items=[out.experience_out(e) for e in page.items], cursor=page.cursor)


@api.route("GET", "/v1/experiences/{experience_id}", "One lesson", response=s.ExperienceOut, errors=(404,))
def get_experience(experience_id: str, tenant_id: str) -> s.ExperienceOut:
    from chalicelib.services import experiences

    return out.experience_out(experiences.get_experience(get_deps(), tenant_id, experience_id))


@api.route("DELETE", "/v1/experiences/{experience_id}", "Forget a lesson (kept as a tombstone)",
           body=s.ForgetIn, response=s.ExperienceOut, errors=(404,))
def forget_experience(experience_id: str, tenant_id: str, body: s.ForgetIn) -> s.ExperienceOut:
    from chalicelib.services import experiences

    return out.experience_out(experiences.forget(get_deps(), tenant_id, experience_id, body.reason))


@api.route("POST", "/v1/experiences/{experience_id}/restore", "Bring an archived lesson back (a forgotten one: 409)",
           response=s.ExperienceOut, errors=(404, 409))
def restore_experience(experience_id: str, tenant_id: str) -> s.ExperienceOut:
    from chalicelib.services import experiences

    return out.experience_out(experiences.restore(get_deps(), tenant_id, experience_id))


@api.route("POST", "/v1/experiences/{experience_id}/feedback", "Report whether a lesson helped",
           body=s.FeedbackIn, response=s.ExperienceOut, errors=(404, 409))
def experience_feedback(experience_id: str, tenant_id: str, body: s.FeedbackIn) -> s.ExperienceOut:
    from chalicelib.services import experiences

    return out.experience_out(experiences.feedback(get_deps(), tenant_id, experience_id, body.signal))


@api.route("POST", "/v1/recall", "Lessons for the situation at hand, with advice text", body=s.RecallIn, response=s.RecallOut,
           cost=lambda body: _costs().recall(body.top_k, len(body.query)), usage=lambda body, answer: {usage.RECALLS: 1})
def recall_route(tenant_id: str, body: s.RecallIn) -> s.RecallOut:
    from chalicelib.services import recall_ids

    answer = recall_ids.recall(get_deps(), tenant_id, **body.model_dump())
    return s.RecallOut(recall_id=answer.recall_id, hits=[out.hit_out(h) for h in answer.hits], advice=answer.advice,
                       advice_placement=get_deps().advice_placement, hidden_by_scope=answer.hidden_by_scope,
                       degraded=answer.degraded)


@api.route("POST", "/v1/advise", "Before a tool call: what past runs say about this call (no LLM)",
           body=s.AdviseIn, response=s.AdviseOut)
def advise_route(tenant_id: str, body: s.AdviseIn) -> s.AdviseOut:
    from chalicelib.services import advise

    fields = body.model_dump()
    fields["recent_events"] = [e.model_dump() for e in body.recent_events]
    return out.advise_out(advise.advise(get_deps(), tenant_id, **fields))


@api.route("POST", "/v1/maintenance/reindex", "Rebuild the tenant's vector index from the store, a batch per request",
           body=s.ReindexIn, response=s.ReindexOut, cost=lambda body: _costs().reindex(body.limit))
def reindex(tenant_id: str, body: s.ReindexIn) -> s.ReindexOut:
    from chalicelib.services import maintenance

    count, cursor = maintenance.reindex_batch(get_deps(), tenant_id, body.limit, body.cursor)
    return s.ReindexOut(reindexed=count, cursor=cursor)


@api.route("GET", "/v1/stats", "Counts by status and a freshness histogram", response=s.StatsOut)
def stats(tenant_id: str) -> s.StatsOut:
    from chalicelib.services import maintenance

    return s.StatsOut.model_validate(maintenance.tenant_stats(get_deps(), tenant_id))


@api.route("GET", "/v1/agents", "The agents the tenant's active lessons belong to (what recall's agent_id can be)",
           response=s.AgentList)
def list_agents(tenant_id: str) -> s.AgentList:
    from chalicelib.services import maintenance

    by_agent, shared = maintenance.agents(get_deps(), tenant_id)
    return s.AgentList(agents=[s.AgentOut(agent_id=a, active_lessons=n) for a, n in by_agent.items()], shared_lessons=shared)


@api.route("POST", "/v1/maintenance/decay", "Decay freshness and archive stale lessons",
           body=s.DecayIn, response=s.DecayOut, auth="admin")
def decay(body: s.DecayIn) -> s.DecayOut:
    from chalicelib.services import maintenance

    report = maintenance.run_decay(get_deps(), body.as_of, tenant_id=body.tenant_id, dry_run=body.dry_run)
    return s.DecayOut(decayed=report.decayed, archived=report.archived, archived_ids=list(report.archived_ids), dry_run=report.dry_run,
                      examined=report.examined, written=report.written, conflicts=report.conflicts,
                      events_purged=report.events_purged)


@api.route("GET", "/v1/maintenance/failed-reviews", "Reviews given up on after their last attempt, with the reason",
           query=s.FailedReviewsQuery, response=s.FailedReviewList, auth="admin")
def failed_reviews(query: s.FailedReviewsQuery) -> s.FailedReviewList:
    from chalicelib.services import review_jobs

    jobs = review_jobs.failed_reviews(get_deps(), query.tenant_id, query.limit)
    return s.FailedReviewList(failed=[out.failed_review_out(j) for j in jobs])


@api.route("POST", "/v1/maintenance/redrive", "Send failed reviews round again (all, a tenant's, or listed trajectories)",
           body=s.RedriveIn, response=s.RedriveOut, auth="admin")
def redrive(body: s.RedriveIn) -> s.RedriveOut:
    from chalicelib.services import review_jobs

    return s.RedriveOut(redriven=review_jobs.redrive_failed(get_deps(), body.tenant_id, body.trajectory_ids))


# The web console (static files at /console; it calls the routes above from the browser). Not part
# of the JSON API's OpenAPI document.
from chalicelib.console import console  # noqa: E402

app.register_blueprint(console)


# --- background work in the cloud (locally, local/worker.py does the same in a thread) ---------

JOBS_STREAM_ARN = os.environ.get(
    "HINDSIGHT_JOBS_STREAM_ARN", "arn:aws:dynamodb:us-east-1:000000000000:table/hindsight-dev-review-jobs/stream/local"
)


# Declares the function and its stream; deployed, Lambda calls chalicelib.review_worker_lambda.handler
# instead (infra/), which does the same without importing this module and the API with it.
@app.on_dynamodb_record(stream_arn=JOBS_STREAM_ARN, batch_size=10, starting_position="TRIM_HORIZON", name="review_worker")
def review_worker(event) -> dict:
    from chalicelib.lambda_handlers import review_stream

    return review_stream(event.to_dict(), event.context)


# Deploy time: the custom resource that makes the OpenSearch index (infra/). Deployed, Lambda calls
# chalicelib.index_setup_lambda.handler, the same without importing this module and the API.
@app.lambda_function(name="opensearch_index_setup")
def opensearch_index_setup(event, context) -> dict:
    from chalicelib.index_setup_lambda import handler

    return handler(event, context)


@app.schedule(Rate(1, unit=Rate.MINUTES), name="review_sweeper")
def review_sweeper(event) -> dict:
    from chalicelib.lambda_handlers import sweep

    return sweep()


# Every ten minutes: a run goes on with the decay pass under way (from its checkpoint, within the
# invocation's time), or starts one HINDSIGHT_DECAY_INTERVAL_SECONDS after the last began, or does nothing.
@app.schedule(Rate(10, unit=Rate.MINUTES), name="decay_schedule")
def decay_schedule(event) -> dict:
    from chalicelib.lambda_handlers import decay

    return decay(getattr(event, "context", None))


# Every minute: the tenant exports and deletions under way go on from their checkpoints, within
# the invocation's time (services.tenant_jobs); nothing under way, one small read.
@app.schedule(Rate(1, unit=Rate.MINUTES), name="tenant_jobs")
def tenant_jobs(event) -> dict:
    from chalicelib import lambda_handlers

    return lambda_handlers.tenant_jobs(getattr(event, "context", None))

# The decay queue (infra/ makes it and points this function's event source mapping at it; the name
# here is what Chalice writes before the stack replaces it by the queue's ARN): one message per
# tenant of a pass, failed messages reported one by one.
@app.on_sqs_message(queue=os.environ.get("HINDSIGHT_DECAY_QUEUE_NAME", "hindsight-decay"), batch_size=10,
                    name="decay_worker")
def decay_worker(event) -> dict:
    from chalicelib.lambda_handlers import decay_worker as work

    return work(event.to_dict(), getattr(event, "context", None))
