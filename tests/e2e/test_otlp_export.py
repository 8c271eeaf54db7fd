"""Zero-code capture: an agent loop instrumented with the OpenTelemetry SDK, its spans in the GenAI
semantic conventions, exported by the stock OTLP/HTTP exporter to the real server. Pointing the
exporter at the service is the only integration; the lesson is recalled afterwards."""
from __future__ import annotations

import json

import httpx
import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Status, StatusCode

pytestmark = pytest.mark.e2e

ADMIN = "hsadmin_otlp_export_test"


def weather(city: str | None) -> str:
    if not city:
        raise ValueError("MissingParameter: city is required")
    return f"rain in {city}"


def run_agent(tracer) -> str:
    """A scripted agent: calls the tool without the city, fails, asks, calls again with it."""
    with tracer.start_as_current_span("invoke_agent weather-bot", attributes={
        "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "weather-bot",
        "gen_ai.input.messages": json.dumps([{"role": "user", "parts": [{"type": "text", "content": "Will it rain tomorrow?"}]}]),
    }) as root:
        for args in ({"date": "tomorrow"}, {"date": "tomorrow", "city": "Lyon"}):
            with tracer.start_as_current_span("execute_tool get_weather", attributes={
                "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather",
                "gen_ai.tool.call.arguments": json.dumps(args),
            }) as span:
                try:
                    span.set_attribute("gen_ai.tool.call.result", weather(args.get("city")))
                except ValueError as exc:
                    span.record_exception(exc)
                    span.set_status(Status(StatusCode.ERROR, str(exc)))
        return format(root.get_span_context().trace_id, "032x")


def test_an_exporter_pointed_at_the_service_is_all_an_agent_needs_to_learn(start_server):
    server = start_server({"HINDSIGHT_ADMIN_KEY": ADMIN, "HINDSIGHT_EMBEDDER": "hash"})
    key = httpx.post(f"{server.url}/v1/tenants", json={"name": "otel"}, headers={"Authorization": f"Bearer {ADMIN}"}).json()["api_key"]
    exporter = OTLPSpanExporter(endpoint=f"{server.url}/v1/otlp/v1/traces", headers={"Authorization": f"Bearer {key}"})
    provider = TracerProvider(resource=Resource.create({"service.name": "weather-service"}))
    provider.add_span_processor(BatchSpanProcessor(exporter))  # the SDK's usual processor
    kept = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(kept))
    trace_id = run_agent(provider.get_tracer("test"))
    provider.shutdown()  # flushes the batch

    client = httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {key}"}, timeout=30)
    traj = client.get(f"/v1/trajectories/{trace_id}").json()
    assert (traj["agent_id"], traj["goal"], traj["outcome"]) == ("weather-bot", "Will it rain tomorrow?", "success")
    import time

    deadline = time.monotonic() + 60
    while client.get(f"/v1/trajectories/{trace_id}").json()["status"] != "reviewed" and time.monotonic() < deadline:
        time.sleep(0.2)
    hits = client.post("/v1/recall", json={"query": "get the weather forecast", "agent_id": "weather-bot", "tools": ["get_weather"]}).json()["hits"]
    assert hits and "city" in hits[0]["experience"]["advice"]

    # the same trace exported again, span by span and whole: one trajectory, its events once
    again = OTLPSpanExporter(endpoint=f"{server.url}/v1/otlp/v1/traces", headers={"Authorization": f"Bearer {key}"})
    for span in kept.get_finished_spans():
        assert again.export([span]) is SpanExportResult.SUCCESS
    assert again.export(kept.get_finished_spans()) is SpanExportResult.SUCCESS
    events = client.get(f"/v1/trajectories/{trace_id}/events").json()["events"]
    assert [e["content"]["status"] for e in events] == ["error", "ok"]
    assert client.get(f"/v1/trajectories/{trace_id}").json()["event_count"] == 2
