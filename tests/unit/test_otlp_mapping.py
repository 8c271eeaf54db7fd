"""``domain.otlp``: the GenAI spans of the official instrumentations as a trajectory's events."""
from __future__ import annotations

import json

from chalicelib.domain.otlp import Span, assemble, idle_outcome

TRACE = "5b8efff798038103d269b633813fc60c"
AGENT = "aa" * 8


def chat(span_id: str, start: int, out: list, inp: list = ()) -> Span:
    return Span(trace_id=TRACE, span_id=span_id, parent_span_id=AGENT, name="chat m", start_ns=start, end_ns=start + 1,
                attributes={"gen_ai.operation.name": "chat", "gen_ai.output.messages": json.dumps(out),
                            "gen_ai.input.messages": json.dumps(list(inp))})


ASKS = chat("01" * 8, 1, [{"role": "assistant", "parts": [
    {"type": "tool_call", "id": "call_1", "name": "get_weather", "arguments": {"date": "tomorrow"}}]}])
ANSWERS = chat("02" * 8, 3, [{"role": "assistant", "parts": [{"type": "text", "content": "It rains."}]}],
               [{"role": "tool", "parts": [{"type": "tool_call_response", "id": "call_1", "response": "Error: MissingParameter: city"}]}])
TOOL = Span(trace_id=TRACE, span_id="03" * 8, parent_span_id=AGENT, name="execute_tool get_weather", start_ns=2, end_ns=3,
            attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather", "gen_ai.tool.call.id": "call_1",
                        "gen_ai.tool.call.arguments": '{"date": "tomorrow"}'}, status_code=2, status_message="MissingParameter: city")


def test_a_tool_call_only_the_chat_spans_report_is_read_from_their_messages():
    (draft,) = assemble([ANSWERS, ASKS])
    assert [(e["event_id"], e["type"]) for e in draft.events] == [
        (f"span-{'01' * 8}", "llm_reasoning"), ("call-call_1", "tool_call"), (f"span-{'02' * 8}", "llm_reasoning")]
    turn, call, answer = draft.events
    assert turn["content"]["text"] == 'calls get_weather({"date": "tomorrow"})'
    assert call["content"] == {"tool": "get_weather", "params": {"date": "tomorrow"}, "status": "error",
                               "error": "Error: MissingParameter: city"}
    assert call["parent_id"] == turn["event_id"] and answer["content"]["text"] == "It rains."
    assert draft.tools == ["get_weather"] and draft.outcome is None


def test_the_tool_span_of_a_call_is_its_one_event_whichever_batch_brings_it():
    (draft,) = assemble([ASKS, TOOL, ANSWERS])
    calls = [e for e in draft.events if e["type"] == "tool_call"]
    assert [(c["event_id"], c["content"]["error"], c["parent_id"]) for c in calls] == [
        ("call-call_1", "MissingParameter: city", f"span-{'01' * 8}")]  # the tool span's status, the asking turn as parent
    (alone,) = assemble([TOOL])
    assert [e["event_id"] for e in alone.events] == ["call-call_1"]  # the same id when it comes alone


def test_the_idle_outcome_is_the_stated_one_else_partial():
    assert (idle_outcome("failure"), idle_outcome(None), idle_outcome("bogus")) == ("failure", "partial", "partial")
    stated = Span(**{**TOOL.__dict__, "attributes": {**TOOL.attributes, "hindsight.outcome": "success"}})
    (draft,) = assemble([stated])
    assert (draft.stated_outcome, draft.outcome) == ("success", None)
