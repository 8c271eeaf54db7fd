"""``POST /v1/otlp/v1/traces`` on the aws backend: the Chalice app's route with the DynamoDB stores
(moto), the review from the jobs table's stream, and the idle timeout run by the scheduled review
sweeper."""
from __future__ import annotations

import gzip
import json
from datetime import timedelta

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest, ExportTraceServiceResponse

from devtools.aws_stack import local_aws_stack
from tests.support.http_api import ADMIN, Api
from tests.support.opensearch import node_url

pytestmark = [pytest.mark.e2e, pytest.mark.opensearch]

TRACE = "5b8efff798038103d269b633813fc60c"
ROOT = bytes.fromhex("eee19b7ec3c1b174")


def request(trace: str, spans: list[dict], service: str = "weather-bot") -> bytes:
    req = ExportTraceServiceRequest()
    rs = req.resource_spans.add()
    attr = rs.resource.attributes.add()
    attr.key, attr.value.string_value = "service.name", service
    ss = rs.scope_spans.add()
    for i, spec in enumerate(spans):
        s = ss.spans.add()
        s.trace_id, s.span_id = bytes.fromhex(trace), spec.get("id", bytes([0, 0, 0, 0, 0, 0, 1, i]))
        s.parent_span_id = spec.get("parent", ROOT)
        s.name, s.start_time_unix_nano, s.end_time_unix_nano = spec["name"], (i + 1) * 10**9, (i + 2) * 10**9
        s.status.code, s.status.message = spec.get("status", 0), spec.get("message", "")
        for key, value in spec["attrs"].items():
            a = s.attributes.add()
            a.key, a.value.string_value = key, value
    return gzip.compress(req.SerializeToString())


def tool(args: dict, result: str | None = None, error: str | None = None) -> dict:
    attrs = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather", "gen_ai.tool.call.arguments": json.dumps(args)}
    if result is not None:
        attrs["gen_ai.tool.call.result"] = result
    return {"name": "execute_tool get_weather", "attrs": attrs, **({"status": 2, "message": error} if error else {})}


AGENT = {"name": "invoke_agent weather-bot", "id": ROOT, "parent": b"",
         "attrs": {"gen_ai.operation.name": "invoke_agent", "hindsight.goal": "Will it rain tomorrow?"}}


def post(api: Api, key: str, body: bytes):
    return api.call("POST", "/v1/otlp/v1/traces", key, raw=body,
                    headers={"Content-Type": "application/x-protobuf", "Content-Encoding": "gzip", "Accept": "application/x-protobuf"})


@pytest.fixture()
def stack():
    with local_aws_stack(ADMIN, node_url(), otlp_idle_seconds=600) as s:
        yield Api(s.client, s.deps), s.poller, s.deps


def test_a_protobuf_trace_becomes_a_trajectory_in_dynamodb_and_is_reviewed_from_the_stream(stack):
    api, poller, deps = stack
    key = api.tenant()
    resp = post(api, key, request(TRACE, [tool({"date": "tomorrow"}, error="MissingParameter: city is required"),
                                          tool({"date": "tomorrow", "city": "Lyon"}, result="rain"), AGENT]))
    assert resp.status_code == 200, resp.body
    ExportTraceServiceResponse().ParseFromString(resp.body)
    tenant_id = api.call("GET", "/v1/tenants", ADMIN).json_body["tenants"][0]["tenant_id"]
    stored = deps.trajectories.get(tenant_id, TRACE)  # DynamoDB's item, through the adapter
    assert (stored.agent_id, stored.goal, stored.outcome, stored.event_count) == ("weather-bot", "Will it rain tomorrow?", "success", 2)
    assert poller.poll_once() >= 1
    traj = api.call("GET", f"/v1/trajectories/{TRACE}", key).json_body
    assert traj["status"] == "reviewed" and traj["experience_ids"]
    recall = api.call("POST", "/v1/recall", key, {"query": "weather forecast", "agent_id": "weather-bot", "tools": ["get_weather"]}).json_body
    assert recall["hits"] and "city" in recall["hits"][0]["experience"]["advice"]
    # the same trace again: one trajectory, its events once
    assert post(api, key, request(TRACE, [tool({"date": "tomorrow"}, error="MissingParameter: city is required"),
                                          tool({"date": "tomorrow", "city": "Lyon"}, result="rain"), AGENT])).status_code == 200
    assert api.call("GET", f"/v1/trajectories/{TRACE}", key).json_body["event_count"] == 2


def test_the_review_sweeper_finalizes_a_trace_whose_root_never_came(stack):
    api, poller, deps = stack
    key = api.tenant()
    assert post(api, key, request(TRACE, [tool({"date": "tomorrow"}, error="MissingParameter: city is required")])).status_code == 200
    sweep = lambda: api.client.lambda_.invoke("review_sweeper", api.client.events.generate_cw_event(  # noqa: E731
        source="aws.events", detail_type="Scheduled Event", detail={}, resources=[])).payload
    sweep()
    assert api.call("GET", f"/v1/trajectories/{TRACE}", key).json_body["status"] == "open"
    real_now = deps.clock.now
    try:
        deps.clock.now = lambda: real_now() + timedelta(seconds=601)  # the sweeper's minute, ten minutes on
        sweep()
    finally:
        deps.clock.now = real_now
    traj = api.call("GET", f"/v1/trajectories/{TRACE}", key).json_body
    assert traj["status"] in ("finalized", "reviewed") and traj["outcome"] == "partial"
