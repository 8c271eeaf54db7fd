"""Zero-code capture with the GenAI instrumentation from PyPI: an agent loop whose model calls go
through the openai client instrumented by ``opentelemetry-instrumentation-openai-v2`` (``chat``
spans), whose run and tool calls are the ``invoke_agent`` and ``execute_tool`` spans of
``opentelemetry-util-genai`` (the helpers those instrumentations are built on), with a scripted
OpenAI-compatible model on the loopback (no key). The stock OTLP/HTTP exporter sends the spans to
the real server; the only integration is the exporter's endpoint. The lesson is recalled
afterwards, and the same trace sent twice is one trajectory.

A second run uses the instrumented client alone, with no tool spans: its tool calls are read from
the ``chat`` spans' messages (the call the model asked for, the response the next call was sent)."""
from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import openai
import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.util.genai.handler import TelemetryHandler
from opentelemetry.util.genai.types import InputMessage, Text

pytestmark = pytest.mark.e2e

ADMIN = "hsadmin_otlp_genai_test"
TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"date": {"type": "string"}, "city": {"type": "string"}}, "required": ["date"]}}}]


def scripted_model():
    """An OpenAI-compatible chat endpoint that answers by the number of tool results it was sent:
    a call without the city, then one with it, then the answer."""
    script = [
        {"tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": json.dumps({"date": "tomorrow"})}}]},
        {"tool_calls": [{"id": "call_2", "type": "function",
                         "function": {"name": "get_weather", "arguments": json.dumps({"date": "tomorrow", "city": "Lyon"})}}]},
        {"content": "It will rain in Lyon tomorrow."},
    ]

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - http.server's name
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            step = script[min(sum(m["role"] == "tool" for m in body["messages"]), len(script) - 1)]
            message = {"role": "assistant", "content": step.get("content"), **({"tool_calls": step["tool_calls"]} if "tool_calls" in step else {})}
            out = json.dumps({"id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": body["model"],
                              "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if "tool_calls" in step else "stop"}],
                              "usage": {"prompt_tokens": 9, "completion_tokens": 9, "total_tokens": 18}}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def get_weather(date: str, city: str | None = None) -> str:
    if not city:
        raise ValueError("MissingParameter: city is required")
    return f"rain in {city} {date}"


def agent_loop(client: openai.OpenAI, handler: TelemetryHandler | None, question: str) -> None:
    """The agent: ask the model, run the tools it asks for, send their results back, until it answers."""
    messages: list[dict] = [{"role": "user", "content": question}]
    while True:
        reply = client.chat.completions.create(model="scripted", messages=messages, tools=TOOLS).choices[0].message
        if not reply.tool_calls:
            return
        messages.append(reply.model_dump(exclude_none=True))
        for call in reply.tool_calls:
            args = json.loads(call.function.arguments)
            try:
                if handler is None:
                    result = get_weather(**args)
                else:
                    with handler.tool(call.function.name) as inv:  # the execute_tool span
                        inv.tool_call_id, inv.arguments = call.id, args
                        inv.tool_result = result = get_weather(**args)
            except ValueError as exc:
                result = f"Error: {exc}"
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result})


@pytest.fixture()
def instrumented(monkeypatch):
    """The openai client instrumented, content captured on the spans (the conventions' opt-in)."""
    monkeypatch.setenv("OTEL_SEMCONV_STABILITY_OPT_IN", "gen_ai_latest_experimental")
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "SPAN_ONLY")
    model = scripted_model()
    providers = []

    def make(server_url: str, key: str, service: str):
        provider = TracerProvider(resource=Resource.create({"service.name": service}))
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(
            endpoint=f"{server_url}/v1/otlp/v1/traces", headers={"Authorization": f"Bearer {key}"}, timeout=60)))
        kept = InMemorySpanExporter()
        provider.add_span_processor(SimpleSpanProcessor(kept))
        instrumentor = OpenAIInstrumentor()
        instrumentor.instrument(tracer_provider=provider)
        providers.append((instrumentor, provider))
        client = openai.OpenAI(base_url=f"http://127.0.0.1:{model.server_port}/v1", api_key="no-key", max_retries=0)
        return provider, kept, client

    yield make
    for instrumentor, provider in providers:
        instrumentor.uninstrument()
        provider.shutdown()
    model.shutdown()


def wait_reviewed(client: httpx.Client, trajectory_id: str) -> dict:
    deadline = time.monotonic() + 120  # a shared machine's load
    while time.monotonic() < deadline:
        traj = client.get(f"/v1/trajectories/{trajectory_id}").json()
        if traj["status"] == "reviewed":
            return traj
        time.sleep(0.2)
    raise AssertionError(f"not reviewed: {traj}")


def test_an_agent_instrumented_from_pypi_learns_through_its_exporter_alone(start_server, instrumented):
    server = start_server({"HINDSIGHT_ADMIN_KEY": ADMIN, "HINDSIGHT_EMBEDDER": "hash"})
    key = httpx.post(f"{server.url}/v1/tenants", json={"name": "genai"}, headers={"Authorization": f"Bearer {ADMIN}"}).json()["api_key"]
    provider, kept, client = instrumented(server.url, key, "weather-service")
    handler = TelemetryHandler(tracer_provider=provider)
    with handler.invoke_local_agent(agent_name="weather-bot", request_model="scripted") as run:  # the invoke_agent span
        run.input_messages = [InputMessage(role="user", parts=[Text(content="Will it rain tomorrow?")])]
        agent_loop(client, handler, "Will it rain tomorrow?")
    provider.force_flush()
    spans = kept.get_finished_spans()
    trace_id = format(spans[0].context.trace_id, "032x")
    assert sorted({s.attributes["gen_ai.operation.name"] for s in spans}) == ["chat", "execute_tool", "invoke_agent"]

    api = httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {key}"}, timeout=30)
    traj = wait_reviewed(api, trace_id)
    assert (traj["agent_id"], traj["goal"], traj["outcome"]) == ("weather-bot", "Will it rain tomorrow?", "success")
    events = api.get(f"/v1/trajectories/{trace_id}/events").json()["events"]
    calls = [e for e in events if e["type"] == "tool_call"]
    assert [(c["content"]["tool"], c["content"]["params"], c["content"]["status"]) for c in calls] == [
        ("get_weather", {"date": "tomorrow"}, "error"), ("get_weather", {"date": "tomorrow", "city": "Lyon"}, "ok")]
    assert calls[0]["content"]["error"] == "MissingParameter: city is required"
    assert calls[1]["content"]["result"] == "rain in Lyon tomorrow"
    turns = [e for e in events if e["type"] == "llm_reasoning"]
    assert [t["content"]["text"] for t in turns][-1] == "It will rain in Lyon tomorrow."
    assert [c["parent_id"] for c in calls] == [turns[0]["event_id"], turns[1]["event_id"]]  # the turn that asked for each call

    hits = api.post("/v1/recall", json={"query": "get the weather forecast", "agent_id": "weather-bot", "tools": ["get_weather"]}).json()["hits"]
    assert hits and "city" in hits[0]["experience"]["advice"]

    # the same trace exported again, span by span and whole: one trajectory, its events once
    again = OTLPSpanExporter(endpoint=f"{server.url}/v1/otlp/v1/traces", headers={"Authorization": f"Bearer {key}"}, timeout=60)
    for span in spans:
        assert again.export([span]) is SpanExportResult.SUCCESS
    assert again.export(spans) is SpanExportResult.SUCCESS
    assert api.get(f"/v1/trajectories/{trace_id}").json()["event_count"] == len(events)
    assert [e["event_id"] for e in api.get(f"/v1/trajectories/{trace_id}/events").json()["events"]] == [e["event_id"] for e in events]


def test_tool_calls_are_read_from_the_chat_spans_when_no_tool_span_reports_them(start_server, instrumented):
    server = start_server({"HINDSIGHT_ADMIN_KEY": ADMIN, "HINDSIGHT_EMBEDDER": "hash"})
    key = httpx.post(f"{server.url}/v1/tenants", json={"name": "genai"}, headers={"Authorization": f"Bearer {ADMIN}"}).json()["api_key"]
    provider, kept, client = instrumented(server.url, key, "weather-bot")
    with provider.get_tracer("agent").start_as_current_span("weather run", attributes={"hindsight.goal": "Will it rain tomorrow?"}):
        agent_loop(client, None, "Will it rain tomorrow?")  # the openai client's spans alone below the run
    provider.force_flush()
    trace_id = format(kept.get_finished_spans()[0].context.trace_id, "032x")

    api = httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {key}"}, timeout=30)
    wait_reviewed(api, trace_id)
    calls = [e for e in api.get(f"/v1/trajectories/{trace_id}/events").json()["events"] if e["type"] == "tool_call"]
    assert [(c["event_id"], c["content"]["params"], c["content"]["status"]) for c in calls] == [
        ("call-call_1", {"date": "tomorrow"}, "error"), ("call-call_2", {"date": "tomorrow", "city": "Lyon"}, "ok")]
    assert calls[0]["content"]["error"] == "Error: MissingParameter: city is required"
    hits = api.post("/v1/recall", json={"query": "get the weather forecast", "agent_id": "weather-bot", "tools": ["get_weather"]}).json()["hits"]
    assert hits and "city" in hits[0]["experience"]["advice"]
