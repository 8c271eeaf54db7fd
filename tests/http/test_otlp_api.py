"""``POST /v1/otlp/v1/traces`` through the real routes: OTLP/HTTP protobuf and JSON, gzip, bad input."""
from __future__ import annotations

import copy
import gzip
import json

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest, ExportTraceServiceResponse

TRACE = "5b8efff798038103d269b633813fc60c"
ROOT, TOOL1, TOOL2 = "eee19b7ec3c1b174", "eee19b7ec3c1b175", "eee19b7ec3c1b176"


def span(span_id, name, parent="", attrs=None, status=0, message="", start=1):
    return {"traceId": TRACE, "spanId": span_id, "parentSpanId": parent, "name": name,
            "startTimeUnixNano": str(start * 10**9), "endTimeUnixNano": str((start + 1) * 10**9),
            "attributes": [{"key": k, "value": {"stringValue": v}} for k, v in (attrs or {}).items()],
            "status": {"code": status, "message": message}}


def export(spans, service="weather-bot"):
    return {"resourceSpans": [{"resource": {"attributes": [{"key": "service.name", "value": {"stringValue": service}}]},
                               "scopeSpans": [{"spans": spans}]}]}


AGENT = span(ROOT, "invoke_agent weather", attrs={"gen_ai.operation.name": "invoke_agent", "hindsight.goal": "Will it rain tomorrow?"}, start=1)
FAIL = span(TOOL1, "execute_tool get_weather", ROOT, {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather",
            "gen_ai.tool.call.arguments": json.dumps({"date": "tomorrow"})}, status=2, message="MissingParameter: city is required", start=2)
OK = span(TOOL2, "execute_tool get_weather", ROOT, {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather",
          "gen_ai.tool.call.arguments": json.dumps({"date": "tomorrow", "city": "Lyon"}), "gen_ai.tool.call.result": "rain"}, start=3)


def post(api, key, body: bytes, content_type="application/json", **headers):
    return api.call("POST", "/v1/otlp/v1/traces", key, raw=body, headers={"Content-Type": content_type, **headers})


def test_a_json_trace_becomes_one_trajectory_with_its_tool_calls_and_ends_with_its_root(api):
    key = api.tenant()
    resp = post(api, key, json.dumps(export([FAIL, OK, AGENT])).encode())
    assert resp.status_code == 200, resp.body
    traj = api.call("GET", f"/v1/trajectories/{TRACE}", key).json_body
    assert (traj["agent_id"], traj["goal"], traj["status"], traj["outcome"]) == ("weather-bot", "Will it rain tomorrow?", "finalized", "success")
    events = api.call("GET", f"/v1/trajectories/{TRACE}/events", key).json_body["events"]
    assert [(e["content"]["tool"], e["content"]["status"]) for e in events] == [("get_weather", "error"), ("get_weather", "ok")]
    assert events[0]["content"]["error"] == "MissingParameter: city is required"
    assert events[1]["content"]["params"] == {"date": "tomorrow", "city": "Lyon"}


def test_batches_out_of_order_and_twice_are_assembled_once(api):
    key = api.tenant()
    assert post(api, key, json.dumps(export([OK])).encode()).status_code == 200
    assert post(api, key, json.dumps(export([FAIL, OK])).encode()).status_code == 200
    assert post(api, key, json.dumps(export([AGENT])).encode()).status_code == 200
    again = post(api, key, json.dumps(export([FAIL, OK, AGENT])).encode())
    assert again.status_code == 200 and "partialSuccess" not in again.json_body
    events = api.call("GET", f"/v1/trajectories/{TRACE}/events", key).json_body["events"]
    assert sorted(e["event_id"] for e in events) == [f"span-{TOOL1}", f"span-{TOOL2}"]
    traj = api.call("GET", f"/v1/trajectories/{TRACE}", key).json_body
    assert traj["status"] == "finalized" and traj["event_count"] == 2


def test_protobuf_with_gzip_answers_protobuf(api):
    from google.protobuf import json_format

    from chalicelib.api.otlp import _hex_ids_to_base64

    key = api.tenant()
    req = json_format.ParseDict(_hex_ids_to_base64(copy.deepcopy(export([FAIL, OK, AGENT]))), ExportTraceServiceRequest())
    resp = post(api, key, gzip.compress(req.SerializeToString()), "application/x-protobuf",
                **{"Content-Encoding": "gzip", "Accept": "application/x-protobuf"})
    assert resp.status_code == 200
    ExportTraceServiceResponse().ParseFromString(resp.body)
    assert resp.headers["Content-Type"].startswith("application/x-protobuf")
    assert api.call("GET", f"/v1/trajectories/{TRACE}", key).json_body["outcome"] == "success"


def test_new_spans_of_a_finished_trace_are_reported_as_rejected(api):
    key = api.tenant()
    post(api, key, json.dumps(export([AGENT])).encode())
    late = post(api, key, json.dumps(export([FAIL])).encode())
    assert late.status_code == 200 and late.json_body["partialSuccess"]["rejectedSpans"] == "1"


@pytest.mark.parametrize("body,ctype,headers,status", [
    (b"not json", "application/json", {}, 422),
    (b"\x0a\xff\xff", "application/x-protobuf", {}, 422),
    (b"garbage", "application/json", {"Content-Encoding": "gzip"}, 422),
    (json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "zz", "spanId": "01"}]}]}]}).encode(), "application/json", {}, 422),
    (json.dumps(export([span("01", "x")])).encode(), "application/json", {}, 422),
    (b"[]", "application/json", {}, 422),
    (b'"resourceSpans"', "application/json", {}, 422),
    (b"{}", "text/csv", {}, 415),
    (gzip.compress(b"{" + b" " * 3_000_000 + b"}"), "application/json", {"Content-Encoding": "gzip"}, 413),
])
def test_bad_input_answers_4xx_never_500(api, body, ctype, headers, status):
    key = api.tenant()
    assert post(api, key, body, ctype, **headers).status_code == status


def test_no_key_is_401(api):
    assert api.call("POST", "/v1/otlp/v1/traces", None, raw=b"{}", headers={"Content-Type": "application/json"}).status_code == 401
