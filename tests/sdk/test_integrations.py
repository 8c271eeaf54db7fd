"""The OpenAI Agents SDK and LangChain integrations, end to end against the real server, each
driven by a scripted model (no model API): the first run teaches a lesson, the next one is told
it before acting, warned before a call that breaks it, and its outcome credits it."""
from __future__ import annotations

import io
from typing import Any

import pytest

from hindsight_xp import Hindsight, TrajectoryRecorder

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


class MissingParameter(Exception):
    pass


def get_weather(date: str, city: str = "") -> str:
    """The forecast for a date and a city."""
    if not city:
        raise MissingParameter("city is required")
    return f"rain in {city} on {date}"


def ask_user(question: str) -> str:
    """Ask the user a question."""
    return "Lyon"


LEARN = [{"tool": "get_weather", "arguments": {"date": "tomorrow"}},
         {"tool": "ask_user", "arguments": {"question": "Which city?"}},
         {"tool": "get_weather", "arguments": {"date": "tomorrow", "city": "Lyon"}},
         "It will rain in Lyon tomorrow."]  # fmt: skip


def reviewed_lesson(client: Hindsight, trajectory_id: str) -> str:
    traj = client.wait_for_review(trajectory_id, timeout=20)
    assert traj.status == "reviewed", traj
    (lesson,) = traj.experience_ids
    return lesson


# --- OpenAI Agents SDK --------------------------------------------------------------------------


def run_agents(client: Hindsight, steps: list[Any]) -> tuple[TrajectoryRecorder, Any]:
    pytest.importorskip("agents")
    from agents import Agent, RunConfig, Runner, function_tool

    from hindsight_xp.integrations.openai_agents import HindsightRunHooks
    from hindsight_xp.testing.agents_model import ScriptedAgentsModel

    model = ScriptedAgentsModel(steps)
    with TrajectoryRecorder(client, agent_id="weather-agents", goal="Will it rain tomorrow?", advise=False) as rec:
        hooks = HindsightRunHooks(rec)
        agent = Agent(name="weather", model=model, instructions=hooks.instructions("You answer weather questions."),
                      tools=[function_tool(get_weather, failure_error_function=hooks.tool_error),
                             function_tool(ask_user, failure_error_function=hooks.tool_error)])  # fmt: skip
        Runner.run_sync(agent, "Will it rain tomorrow?", hooks=hooks, max_turns=10, run_config=RunConfig(tracing_disabled=True))
    return rec, model


def test_openai_agents_run_is_recorded_then_advised_and_credited(client: Hindsight) -> None:
    first, model = run_agents(client, LEARN)
    assert "<hindsight>" not in (model.instructions[0] or "")
    lesson = reviewed_lesson(client, first.trajectory_id)
    assert client.get_trajectory(first.trajectory_id).event_count >= 3

    # the next run is told the lesson before acting, warned before the call that breaks it, and
    # the warning is in the instructions of its next turn
    second, model = run_agents(client, [
        {"tool": "get_weather", "arguments": {"date": "today"}},
        {"tool": "ask_user", "arguments": {"question": "Which city?"}},
        {"tool": "get_weather", "arguments": {"date": "today", "city": "Lyon"}},
        "Rain today in Lyon.",
    ])
    assert "<hindsight>" in model.instructions[0] and "`city`" in model.instructions[0]
    assert "WARNING:" in model.instructions[1]
    traj = client.wait_for_review(second.trajectory_id, timeout=20)
    assert traj.review["credit"]["ignored"] == [lesson]  # it called get_weather without `city` first

    third, _ = run_agents(client, [
        {"tool": "ask_user", "arguments": {"question": "Which city?"}},
        {"tool": "get_weather", "arguments": {"date": "today", "city": "Lyon"}},
        "Rain today in Lyon.",
    ])
    assert client.wait_for_review(third.trajectory_id, timeout=20).review["credit"]["adopted"] == [lesson]
    exp = client.get_experience(lesson)
    assert (exp.served, exp.adopted, exp.success_when_adopted, exp.success_when_ignored, exp.lift) == (2, 1, 1.0, 1.0, 0.0)


# --- LangChain ----------------------------------------------------------------------------------


def run_langchain(client: Hindsight, calls: list[dict[str, Any]]) -> tuple[TrajectoryRecorder, list[list[Any]]]:
    pytest.importorskip("langchain_core")
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
    from langchain_core.tools import tool

    from hindsight_xp.integrations.langchain import HindsightCallbackHandler

    tools = {t.name: t for t in (tool(get_weather), tool(ask_user))}
    replies = [AIMessage(content="", tool_calls=[{"name": c["tool"], "args": c["arguments"], "id": f"call_{i}"}])
               for i, c in enumerate(calls)] + [AIMessage(content="Done.")]  # fmt: skip
    model = GenericFakeChatModel(messages=iter(replies))
    seen: list[list[Any]] = []
    with TrajectoryRecorder(client, agent_id="weather-lc", goal="Will it rain tomorrow?") as rec:
        handler = HindsightCallbackHandler(rec)
        messages: list[Any] = [SystemMessage(handler.system_prompt("You answer weather questions.")),
                               HumanMessage("Will it rain tomorrow?")]  # fmt: skip
        while True:
            seen.append(list(messages))
            reply = model.invoke(messages)
            messages.append(reply)
            if not reply.tool_calls:
                break
            for call in reply.tool_calls:
                try:
                    result = tools[call["name"]].invoke(call["args"], config={"callbacks": [handler]})
                except MissingParameter as exc:
                    result = f"MissingParameter: {exc}"
                messages.append(ToolMessage(content=str(result), tool_call_id=call["id"]))
            messages.extend(handler.advice_messages())
    return rec, seen


def test_langchain_run_is_recorded_then_advised_and_credited(client: Hindsight) -> None:
    first, _ = run_langchain(client, [c for c in LEARN if isinstance(c, dict)])
    lesson = reviewed_lesson(client, first.trajectory_id)
    events = client.get_trajectory(first.trajectory_id).event_count
    assert events >= 3

    second, prompts = run_langchain(client, [{"tool": "get_weather", "arguments": {"date": "today"}},
                                             {"tool": "ask_user", "arguments": {"question": "Which city?"}},
                                             {"tool": "get_weather", "arguments": {"date": "today", "city": "Lyon"}}])
    assert "<hindsight>" in prompts[0][0].content  # the lessons were in the system prompt from the start
    assert any("WARNING:" in m.content for m in prompts[1] if m.type == "system" and m is not prompts[1][0])
    traj = client.wait_for_review(second.trajectory_id, timeout=20)
    assert traj.review["credit"]["ignored"] == [lesson]
    exp = client.get_experience(lesson)
    assert (exp.served, exp.adopted) == (1, 0)


# --- the examples ---------------------------------------------------------------------------------


def load(name: str):
    import importlib.util
    import sys

    from devtools.server_process import ROOT

    spec = importlib.util.spec_from_file_location(name, ROOT / "examples" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_the_openai_agents_example_learns_then_follows_and_credits(client: Hindsight) -> None:
    pytest.importorskip("agents")
    shown = load("openai_agents_weather").demo(client, "example-agents", out=io.StringIO())
    assert len(shown["learned"]) == 1 and "<hindsight>" in shown["instructions"][0]
    assert shown["credit"]["adopted"] == shown["learned"]


def test_the_langchain_example_warns_before_the_call_that_failed(client: Hindsight) -> None:
    pytest.importorskip("langchain_core")
    shown = load("langchain_weather").demo(client, "example-lc", out=io.StringIO())
    assert len(shown["learned"]) == 1 and "<hindsight>" in shown["system_prompt"]
    assert shown["warnings"] and "WARNING:" in shown["warnings"][0]
    assert shown["credit"]["ignored"] == shown["learned"]
