"""Capture of an OpenAI tool-calling loop: the real openai client, a local OpenAI-compatible
stub server, the real hindsight server behind a recording proxy."""
from __future__ import annotations

import json

import anyio
import openai

from hindsight_xp import Hindsight, TrajectoryRecorder
from hindsight_xp.testing import Scripted, StubOpenAI, say, tool_call

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


def streamed_agent_loop(llm: openai.OpenAI, tools: dict, question: str) -> str:
    """The same loop on a streamed answer, adding up the deltas as agents do."""
    messages: list[dict] = [{"role": "user", "content": question}]
    for _ in range(5):
        text, calls = "", {}
        for chunk in llm.chat.completions.create(model="stub-model", messages=messages, tools=TOOL_SCHEMA, stream=True):
            delta = chunk.choices[0].delta
            text += delta.content or ""
            for c in delta.tool_calls or ():
                slot = calls.setdefault(c.index, {"id": c.id, "name": "", "arguments": ""})
                slot["name"] += c.function.name or ""
                slot["arguments"] += c.function.arguments or ""
        if not calls:
            return text
        messages.append({"role": "assistant", "tool_calls": [
            {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}} for c in calls.values()]})
        for c in calls.values():
            messages.append({"role": "tool", "tool_call_id": c["id"], "content": tools[c["name"]](**json.loads(c["arguments"]))})
    raise AssertionError("the loop did not end")


def test_a_streamed_chat_answer_is_recorded_once_it_ends(proxied: Hindsight, proxy: FaultProxy) -> None:
    think = {**tool_call("get_weather", "Let me check.", city="Lyon"), "reasoning_content": "The user is in Lyon."}
    with StubOpenAI(Scripted([think, say("It will rain in Lyon.")])) as stub:
        llm = openai.OpenAI(base_url=stub.base_url, api_key="stub", max_retries=0)
        with TrajectoryRecorder(proxied, agent_id="a", goal="weather") as rec:
            answer = streamed_agent_loop(rec.wrap_openai(llm), rec.wrap_tools({"get_weather": get_weather}), "Will it rain?")
        assert answer == "It will rain in Lyon."
    events = sent_events(proxy, rec.trajectory_id)
    assert [e["type"] for e in events] == ["user_input", "llm_reasoning", "tool_call", "llm_reasoning"]
    decision = events[1]["content"]
    assert decision["tool_calls"] == [{"id": "call_1", "tool": "get_weather", "params": {"city": "Lyon"}}]
    assert decision["text"].splitlines() == ["The user is in Lyon.", "Let me check.", 'call `get_weather` with {"city": "Lyon"}']
    assert decision["finish_reason"] == "tool_calls" and decision["model"] == "stub-model"
    assert events[3]["content"]["text"] == "It will rain in Lyon." and events[3]["content"]["finish_reason"] == "stop"


def test_a_stream_closed_early_records_what_had_arrived(proxied: Hindsight, proxy: FaultProxy) -> None:
    with StubOpenAI(Scripted([say("one two three four")])) as stub:
        llm = openai.OpenAI(base_url=stub.base_url, api_key="stub", max_retries=0)
        with TrajectoryRecorder(proxied, agent_id="a", goal="count") as rec:
            with rec.wrap_openai(llm).chat.completions.create(model="m", messages=[{"role": "user", "content": "count"}], stream=True) as stream:
                for chunk in stream:
                    if "two" in (chunk.choices[0].delta.content or ""):
                        break
    events = sent_events(proxy, rec.trajectory_id)
    assert [(e["type"], e["content"]["text"]) for e in events] == [("user_input", "count"), ("llm_reasoning", "one two")]


def responses_agent_loop(llm: openai.OpenAI, tools: dict, question: str, stream: bool) -> str:
    """A Responses API tool loop: the server keeps the conversation (previous_response_id)."""
    tool_schema = [{"type": "function", "name": "get_weather", "parameters": TOOL_SCHEMA[0]["function"]["parameters"]}]
    items: list = [{"role": "user", "content": question}]
    previous = None
    for _ in range(5):
        kwargs = {"model": "stub-model", "input": items, "tools": tool_schema}
        if previous:
            kwargs["previous_response_id"] = previous
        if stream:
            resp = next(e.response for e in llm.responses.create(**kwargs, stream=True) if e.type == "response.completed")
        else:
            resp = llm.responses.create(**kwargs)
        previous = resp.id
        calls = [o for o in resp.output if o.type == "function_call"]
        if not calls:
            return resp.output_text
        items = [{"type": "function_call_output", "call_id": c.call_id, "output": tools[c.name](**json.loads(c.arguments))} for c in calls]
    raise AssertionError("the loop did not end")


def test_the_responses_api_is_recorded_whole_or_streamed(proxied: Hindsight, proxy: FaultProxy) -> None:
    think = {**tool_call("get_weather", None, city="Lyon"), "reasoning_content": "The user is in Lyon."}
    for stream in (False, True):
        with StubOpenAI(Scripted([think, say("It will rain in Lyon.")])) as stub:
            llm = openai.OpenAI(base_url=stub.base_url, api_key="stub", max_retries=0)
            with TrajectoryRecorder(proxied, agent_id="a", goal="weather") as rec:
                answer = responses_agent_loop(rec.wrap_openai(llm), rec.wrap_tools({"get_weather": get_weather}), "Will it rain?", stream)
            assert answer == "It will rain in Lyon."
            assert "create" not in vars(llm.responses)  # undone when the recorder closed
        events = sent_events(proxy, rec.trajectory_id)
        assert [e["type"] for e in events] == ["user_input", "llm_reasoning", "tool_call", "llm_reasoning"], stream
        assert events[0]["content"]["text"] == "Will it rain?"
        decision = events[1]["content"]
        (call,) = decision["tool_calls"]
        assert call["id"].startswith("call_") and (call["tool"], call["params"]) == ("get_weather", {"city": "Lyon"})
        assert decision["text"].splitlines() == ["The user is in Lyon.", 'call `get_weather` with {"city": "Lyon"}']
        assert decision["status"] == "completed" and decision["model"] == "stub-model"
        assert events[3]["content"]["text"] == "It will rain in Lyon."


def test_an_async_streamed_answer_is_recorded_too(proxied: Hindsight, proxy: FaultProxy) -> None:
    async def ask(llm: openai.AsyncOpenAI) -> str:
        text = ""
        async for chunk in await llm.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}], stream=True):
            text += chunk.choices[0].delta.content or ""
        return text

    with StubOpenAI(Scripted([say("hello there")])) as stub:
        llm = openai.AsyncOpenAI(base_url=stub.base_url, api_key="stub", max_retries=0)
        with TrajectoryRecorder(proxied, agent_id="a", goal="greet") as rec:
            assert anyio.run(ask, rec.wrap_openai(llm)) == "hello there"
        anyio.run(llm.close)
    events = sent_events(proxy, rec.trajectory_id)
    assert [(e["type"], e["content"]["text"]) for e in events] == [("user_input", "hi"), ("llm_reasoning", "hello there")]
