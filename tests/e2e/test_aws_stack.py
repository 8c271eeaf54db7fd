"""The serverless pipeline on local real components: moto server as DynamoDB, a real OpenSearch
node, the OpenAI-compatible stub, the Chalice app with its Lambda handlers, and a stream poller that
feeds the review-jobs stream to the review handler as Lambda's event source mapping would.

Trajectory in over HTTP -> review from the stream -> experience in OpenSearch -> recall over HTTP
-> the decay schedule archives it; then faults: the LLM failing, OpenSearch down, a record
delivered twice. Nothing is lost, nothing duplicated.
"""
from __future__ import annotations

from contextlib import contextmanager
from datetime import timedelta

import pytest

from chalicelib.adapters.dynamo.rate_limiter import DynamoRateLimiter
from chalicelib.domain.ratelimit import RatePolicy
from devtools.aws_stack import local_aws_stack
from tests.support.http_api import ADMIN, Api
from tests.support.injection import GOAL, PLACEMENTS, SENTINEL, STORABLE, assert_inert_block, assert_inert_lesson, hostile_events
from tests.support.injection import QUERY as INJECTION_QUERY
from tests.support.opensearch import node_url

pytestmark = [pytest.mark.e2e, pytest.mark.opensearch]

EVENTS = [
    {"event_id": "e1", "type": "user_input", "content": {"text": "Fly me from Paris to Rome on Friday"}},
    {"event_id": "e2", "type": "tool_call", "content": {"tool": "search_flights", "params": {"from": "Paris", "to": "Rome"},
                                                        "status": "error", "error": "InvalidAirport: expected an IATA code"}},
    {"event_id": "e3", "type": "tool_call", "content": {"tool": "lookup_airport", "params": {"city": "Paris"}, "result": "CDG"}},
    {"event_id": "e4", "type": "tool_call", "content": {"tool": "search_flights", "params": {"from": "CDG", "to": "FCO"}, "result": ["AZ1"]}},
]


@contextmanager
def local_stack(monkeypatch, **settings_overrides):
    """The stack (``devtools.aws_stack``), with settings of a test's own (e.g. a short LLM timeout)."""
    with local_aws_stack(ADMIN, node_url(), **settings_overrides) as s:
        yield Api(s.client, s.deps), s.poller, s.stub, s.deps


@pytest.fixture()
def stack(monkeypatch):
    with local_stack(monkeypatch) as s:
        yield s


def scheduled(api: Api, name: str):
    event = api.client.events.generate_cw_event(source="aws.events", detail_type="Scheduled Event", detail={}, resources=[])
    return api.client.lambda_.invoke(name, event).payload


def record(api: Api, key: str, tid: str) -> None:
    assert api.call("POST", "/v1/trajectories", key, {"trajectory_id": tid, "agent_id": "travel", "goal": "Fly from Paris to Rome",
                                                      "task_type": "query", "tools": ["search_flights", "lookup_airport"]}).status_code == 201
    assert api.call("POST", f"/v1/trajectories/{tid}/events", key, {"events": EVENTS}).status_code == 202
    assert api.call("POST", f"/v1/trajectories/{tid}/finalize", key, {"outcome": "success"}).status_code == 202


def status(api: Api, key: str, tid: str) -> dict:
    return api.call("GET", f"/v1/trajectories/{tid}", key).json_body


QUERY = {"query": "Book a flight from Berlin to Madrid", "agent_id": "travel", "tools": ["search_flights", "lookup_airport"]}


def test_trajectory_to_recall_to_decay_through_the_stream(stack):
    api, poller, stub, deps = stack
    key = api.tenant()
    record(api, key, "t1")
    assert status(api, key, "t1")["status"] == "finalized"  # ingest never waits on a review
    assert poller.poll_once() >= 1
    traj = status(api, key, "t1")
    assert traj["status"] == "reviewed" and traj["review"]["reviewer"].startswith("llm:")
    (exp_id,) = traj["experience_ids"]
    assert deps.index.count(api.call("GET", "/v1/tenants", ADMIN).json_body["tenants"][0]["tenant_id"]) == 1
    recall = api.call("POST", "/v1/recall", key, QUERY).json_body
    assert recall["hits"][0]["experience"]["experience_id"] == exp_id and "lookup_airport" in recall["advice"]

    real_now = deps.clock.now
    deps.clock.now = lambda: real_now() + timedelta(days=400)  # the schedule runs a year later
    result = scheduled(api, "decay_schedule")
    assert result == {"examined": 1, "archived": 1, "written": 1, "conflicts": 0, "complete": 1}
    deps.clock.now = real_now
    assert api.call("GET", f"/v1/experiences/{exp_id}", key).json_body["status"] == "archived"
    assert api.call("POST", "/v1/recall", key, QUERY).json_body["hits"] == []


def test_the_handler_lambda_runs_for_the_review_worker_reviews_from_the_stream(stack):
    """infra/ deploys the worker with ``chalicelib.review_worker_lambda.handler``, not app.py's."""
    from chalice.local import LambdaContext

    from chalicelib import review_worker_lambda

    api, poller, stub, deps = stack
    key = api.tenant()
    record(api, key, "t1")
    batches = []
    poller.handler = lambda event: batches.append(event) or review_worker_lambda.handler(
        event, LambdaContext("review_worker", memory_size=1024, max_runtime_ms=300_000))
    assert poller.poll_once() >= 1 and batches
    traj = status(api, key, "t1")
    assert traj["status"] == "reviewed" and traj["review"]["reviewer"].startswith("llm:")
    assert poller.dead_letters == []
    assert api.call("POST", "/v1/recall", key, QUERY).json_body["hits"][0]["experience"]["experience_id"] == traj["experience_ids"][0]


def test_a_failing_llm_and_a_down_index_lose_nothing_and_duplicate_nothing(stack):
    api, poller, stub, deps = stack
    key = api.tenant()
    stub.faults(fail=1000)
    record(api, key, "t1")
    poller.poll_once()
    assert status(api, key, "t1")["status"] == "finalized"  # attempt 1 failed, a retry is scheduled

    stub.faults()
    real_client = deps.index.client
    from chalicelib.adapters.opensearch.index import build_client

    deps.index.client = build_client("http://127.0.0.1:9", service="none", timeout=1)  # OpenSearch down
    real_now = deps.clock.now
    deps.clock.now = lambda: real_now() + timedelta(minutes=10)
    scheduled(api, "review_sweeper")
    assert status(api, key, "t1")["status"] == "finalized"  # attempt 2 failed at the index

    deps.index.client = real_client
    deps.clock.now = lambda: real_now() + timedelta(minutes=30)
    scheduled(api, "review_sweeper")
    deps.clock.now = real_now
    traj = status(api, key, "t1")
    assert traj["status"] == "reviewed"
    listed = api.call("GET", "/v1/experiences", key).json_body["items"]
    assert [e["experience_id"] for e in listed] == traj["experience_ids"]  # stored once, though attempt 2 wrote it
    assert [(e["sources"], e["support"]) for e in listed] == [(["t1"], 1)]  # and counted once
    tenant_id = api.call("GET", "/v1/tenants", ADMIN).json_body["tenants"][0]["tenant_id"]
    assert deps.index.count(tenant_id) == 1
    hits = api.call("POST", "/v1/recall", key, QUERY).json_body["hits"]
    assert [h["experience"]["experience_id"] for h in hits] == traj["experience_ids"]
    assert poller.dead_letters == []


def test_a_record_delivered_twice_creates_no_second_experience(stack):
    api, poller, stub, deps = stack
    key = api.tenant()
    record(api, key, "t1")
    batches = []
    real_handler = poller.handler
    poller.handler = lambda event: (batches.append(event), real_handler(event))[1]
    poller.poll_once()
    before = api.call("GET", "/v1/experiences", key).json_body["items"]
    assert len(before) == 1
    tenant_id = api.call("GET", "/v1/tenants", ADMIN).json_body["tenants"][0]["tenant_id"]

    # an operator re-queues the job, and Lambda redelivers the original records
    deps.queue.enqueue(tenant_id, "t1", "full", deps.clock.now())
    for event in batches:
        assert real_handler(event) == {"batchItemFailures": []}
    assert deps.queue.pending() == 1  # the redelivered records were recognised: they ran nothing

    # the re-queued job's own record does run, and finds the trajectory already reviewed
    poller.handler = real_handler
    poller.poll_once()
    assert deps.queue.pending() == 0
    after = api.call("GET", "/v1/experiences", key).json_body["items"]
    assert [(e["experience_id"], e["support"], e["version"], e["sources"]) for e in after] == [
        (e["experience_id"], e["support"], e["version"], ["t1"]) for e in before
    ]
    assert deps.index.count(tenant_id) == 1


def test_keys_rotate_at_once_and_the_rate_limit_is_shared_on_the_aws_backend(stack):
    api, _, _, deps = stack
    old = api.tenant("acme")
    tenant_id = api.call("GET", "/v1/tenants", ADMIN).json_body["tenants"][0]["tenant_id"]
    new = api.call("POST", f"/v1/tenants/{tenant_id}/keys", ADMIN, {}).json_body["api_key"]
    assert api.call("GET", "/v1/stats", old).status_code == 401  # the DynamoDB store refuses it at once
    assert api.call("GET", "/v1/stats", new).status_code == 200
    # a tight bucket in the rate-limits table; another instance (another Lambda) takes from it too
    policy = RatePolicy(per_second=0.5, burst=2)
    deps.rate_limiter = DynamoRateLimiter(deps.tenants.tables, policy)
    assert DynamoRateLimiter(deps.tenants.tables, policy).acquire(tenant_id, deps.clock.now()) == 0.0
    assert api.call("GET", "/v1/stats", new).status_code == 200
    refused = api.call("GET", "/v1/stats", new)
    assert refused.status_code == 429 and refused.json_body["error"]["code"] == "rate_limited"
    assert 1 <= int(refused.headers["Retry-After"]) <= 2


def test_injection_payloads_come_out_as_quoted_data_on_the_aws_backend(stack):
    """Each payload of the corpus, in an error, a result, a value or the user's feedback (in turn),
    reviewed from the stream by the LLM reviewer (the stub) on top of the rules."""
    api, poller, _, _ = stack
    cases = [(api.tenant(f"inj-{i}"), PLACEMENTS[i % len(PLACEMENTS)], p) for i, p in enumerate(STORABLE)]
    for key, placement, payload in cases:
        assert api.call("POST", "/v1/trajectories", key, {"trajectory_id": "inj", "agent_id": "agent-1", "goal": GOAL,
                                                          "task_type": "query", "tools": ["get_weather", "ask_user"]}).status_code == 201
        assert api.call("POST", "/v1/trajectories/inj/events", key, {"events": hostile_events(placement, payload)}).status_code == 202
        assert api.call("POST", "/v1/trajectories/inj/finalize", key, {"outcome": "success"}).status_code == 202
    poller.poll_once()
    for key, placement, payload in cases:
        assert status(api, key, "inj")["status"] == "reviewed", (placement, payload)
        exps = api.call("GET", "/v1/experiences", key).json_body["items"]
        assert exps, (placement, payload)
        for exp in exps:
            assert_inert_lesson(exp)
        advice = api.call("POST", "/v1/recall", key, INJECTION_QUERY | {"agent_id": "agent-1"}).json_body["advice"]
        assert_inert_block(advice)
        if placement != "value":  # the model's lesson of a changed value names the parameter, not the value
            assert SENTINEL.lower() in advice.lower(), advice


def test_recall_answers_from_bm25_alone_marked_degraded_when_the_embedder_times_out(monkeypatch):
    """Recall's own embedder client gives up after its timeout and one retry; the answer then comes
    from the words alone, says so, and arrives long before the gateway's 29 s."""
    import time

    with local_stack(monkeypatch, recall_embed_timeout_seconds=0.5, recall_embed_max_retries=1) as (api, poller, stub, deps):
        key = api.tenant()
        record(api, key, "t1")
        assert poller.poll_once() >= 1
        (exp_id,) = status(api, key, "t1")["experience_ids"]
        full = api.call("POST", "/v1/recall", key, QUERY).json_body
        assert full.get("degraded") is None and full["hits"][0]["experience"]["experience_id"] == exp_id

        stub.faults(embed_delay=3.0)  # every embedding now answers after the client's read timeout
        asked = len(stub.state.requests)
        started = time.monotonic()
        slow = api.call("POST", "/v1/recall", key, QUERY)
        took = time.monotonic() - started
        stub.faults()
        assert slow.status_code == 200
        body = slow.json_body
        assert body["degraded"] == "lexical_only"
        assert [h["experience"]["experience_id"] for h in body["hits"]] == [exp_id]
        assert body["hits"][0]["explanation"]["semantic"] == 0.0 and body["hits"][0]["explanation"]["lexical"] > 0
        assert "lookup_airport" in body["advice"]
        assert len(stub.state.requests) - asked == 2  # the first attempt and one retry
        assert took < 3.0, took  # two attempts of 0.5 s and a backoff, not the stub's 3 s each
        # nothing in common with any lesson: no hit, still an answer
        none = api.call("POST", "/v1/recall", key, {"query": "zzz qqq"})
        assert none.status_code == 200 and none.json_body["hits"] == []
