"""Capture of an OpenAI tool-calling loop: the real openai client, a local OpenAI-compatible
stub server, the real hindsight server behind a recording proxy."""
from __future__ import annotations

import json

import anyio
import openai

from hindsight_client import Hindsight, TrajectoryRecorder
from hindsight_client.testing import Scripted, StubOpenAI, say, tool_call

from .servers import FaultProxy
from .test_recorder import sent_events

TOOL_SCHEMA = [{"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]  # fmt: skip


def get_weather(city: str) -> str:
    return f"rain in {city}"


def agent_loop(llm: openai.OpenAI, tools: dict, question: str) -> str:
    """An unmodified tool-calling loop, as agents write it."""
    messages: list[dict] = [{"role": "system", "content": "You are helpful."}, {"role": "user", "content": question}]
    for _ in range(5):
        msg = llm.chat.completions.create(model="stub-model", messages=messages, tools=TOOL_SCHEMA).choices[0].message
        if not msg.tool_calls:
            return msg.content or ""
        messages.append(msg.model_dump(exclude_none=True))
        for call in msg.tool_calls:
            result = tools[call.function.name](**json.loads(call.function.arguments))
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
    raise AssertionError("the loop did not end")


def test_the_models_decisions_and_the_tool_calls_are_recorded(proxied: Hindsight, proxy: FaultProxy) -> None:
    think = {**tool_call("get_weather", "Let me check the forecast.", city="Lyon"), "reasoning_content": "The user is in Lyon."}
    with StubOpenAI(Scripted([think, say("It will rain in Lyon.")])) as stub:
        llm = openai.OpenAI(base_url=stub.base_url, api_key="stub", max_retries=0)
        with TrajectoryRecorder(proxied, agent_id="a", goal="weather") as rec:
            answer = agent_loop(rec.wrap_openai(llm), rec.wrap_tools({"get_weather": get_weather}), "Will it rain?")
        assert answer == "It will rain in Lyon."
        # The model saw exactly what the agent sent: recording changes no request.
        assert [m["role"] for m in stub.requests[1]["messages"]] == ["system", "user", "assistant", "tool"]
        assert "create" not in vars(llm.chat.completions)  # undone when the recorder closed

    events = sent_events(proxy, rec.trajectory_id)
    assert [e["type"] for e in events] == ["user_input", "llm_reasoning", "tool_call", "llm_reasoning"]
    assert events[0]["content"]["text"] == "Will it rain?"  # once, though the loop sent it twice
    decision = events[1]["content"]
    assert decision["tool_calls"] == [{"id": "call_1", "tool": "get_weather", "params": {"city": "Lyon"}}]
    assert decision["text"].splitlines() == ["The user is in Lyon.", "Let me check the forecast.",
                                             'call `get_weather` with {"city": "Lyon"}']  # fmt: skip
    assert decision["finish_reason"] == "tool_calls" and decision["model"] == "stub-model"
    assert events[2]["content"] | {"duration_ms": 0} == {
        "tool": "get_weather", "params": {"city": "Lyon"}, "status": "ok", "result": "rain in Lyon",
        "available_tools": ["get_weather"], "duration_ms": 0}  # fmt: skip
    assert events[3]["content"]["text"] == "It will rain in Lyon." and events[3]["content"]["finish_reason"] == "stop"


def test_the_async_openai_client_is_recorded_too(proxied: Hindsight, proxy: FaultProxy) -> None:
    async def ask(llm: openai.AsyncOpenAI) -> str:
        resp = await llm.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
        return resp.choices[0].message.content or ""

    with StubOpenAI(Scripted([say("hello")])) as stub:
        llm = openai.AsyncOpenAI(base_url=stub.base_url, api_key="stub", max_retries=0)
        with TrajectoryRecorder(proxied, agent_id="a", goal="greet") as rec:
            assert anyio.run(ask, rec.wrap_openai(llm)) == "hello"
        anyio.run(llm.close)
    events = sent_events(proxy, rec.trajectory_id)
    assert [(e["type"], e["content"]["text"]) for e in events] == [("user_input", "hi"), ("llm_reasoning", "hello")]
