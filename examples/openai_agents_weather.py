"""An OpenAI Agents SDK agent that learns from its own runs, offline (a scripted model, no key).

``HindsightRunHooks`` records each run as a trajectory, asks hindsight before every tool call,
and puts what it knows into the agent's instructions:

* run 1: nothing known; ``get_weather`` without a city fails; the agent asks, then succeeds.
* run 2: the lesson is in the instructions from the start, and the agent (scripted to follow it)
  asks for the city first; its outcome credits the lesson (served, adopted, success rates).

    make run                                  # in another terminal: the local service
    python3 -m venv .venv-examples            # a virtualenv of its own; `make test`'s .venv has the frameworks too
    .venv-examples/bin/pip install "./sdk/python[openai-agents]"
    .venv-examples/bin/python examples/openai_agents_weather.py

Needs HINDSIGHT_URL (default http://127.0.0.1:8000) and HINDSIGHT_API_KEY; without a key it
creates a tenant with HINDSIGHT_ADMIN_KEY or ./.hindsight/admin_key, as `make run` leaves it.
"""
from __future__ import annotations

import argparse
import os
import sys
import uuid
from typing import Any

from agents import Agent, RunConfig, Runner, function_tool

from hindsight_xp import Hindsight, TrajectoryRecorder
from hindsight_xp.integrations.openai_agents import HindsightRunHooks
from hindsight_xp.testing.agents_model import ScriptedAgentsModel

QUESTION = "Will it rain tomorrow?"


def get_weather(date: str, city: str = "") -> str:
    """Weather forecast for a city and a date."""
    if not city:
        raise ValueError("MissingParameter: city is required")
    return f"{date} in {city}: rain, 14°C"


def ask_user(question: str) -> str:
    """Ask the user a question and get the answer."""
    return "Lyon"


# what a model would decide: first by trial and error, then as the lesson says
FIRST = [{"tool": "get_weather", "arguments": {"date": "tomorrow"}},
         {"tool": "ask_user", "arguments": {"question": "Which city?"}},
         {"tool": "get_weather", "arguments": {"date": "tomorrow", "city": "Lyon"}},
         "Rain in Lyon tomorrow, 14°C."]  # fmt: skip
SECOND = [{"tool": "ask_user", "arguments": {"question": "Which city?"}},
          {"tool": "get_weather", "arguments": {"date": "tomorrow", "city": "Lyon"}},
          "Rain in Lyon tomorrow, 14°C."]  # fmt: skip


def run(hindsight: Hindsight, agent_id: str, steps: list[Any]) -> tuple[str, ScriptedAgentsModel]:
    model = ScriptedAgentsModel(steps)
    with TrajectoryRecorder(hindsight, agent_id=agent_id, goal=QUESTION, tools=["get_weather", "ask_user"]) as rec:
        hooks = HindsightRunHooks(rec)
        agent = Agent(name="weather", model=model, instructions=hooks.instructions("You are a weather assistant."),
                      tools=[function_tool(get_weather, failure_error_function=hooks.tool_error),
                             function_tool(ask_user, failure_error_function=hooks.tool_error)])  # fmt: skip
        Runner.run_sync(agent, QUESTION, hooks=hooks, run_config=RunConfig(tracing_disabled=True))
    return rec.trajectory_id, model


def demo(hindsight: Hindsight, agent_id: str, out: Any = sys.stdout) -> dict[str, Any]:
    first, _ = run(hindsight, agent_id, FIRST)
    learned = hindsight.wait_for_review(first, timeout=30).experience_ids
    print(f"run 1: {len(FIRST) - 1} tool calls, lessons learned: {list(learned)}", file=out)
    second, model = run(hindsight, agent_id, SECOND)
    print(f"run 2 instructions:\n{model.instructions[0]}", file=out)
    credit = (hindsight.wait_for_review(second, timeout=30).review or {}).get("credit", {})
    lesson = hindsight.get_experience(learned[0]) if learned else None
    if lesson is not None:
        print(f"run 2: {len(SECOND) - 1} tool calls; credit {credit}; lesson served {lesson.served}, "
              f"adopted {lesson.adopted}, success when adopted {lesson.success_when_adopted}", file=out)  # fmt: skip
    return {"learned": list(learned), "instructions": model.instructions, "credit": credit}


def _api_key(url: str) -> str:
    if os.environ.get("HINDSIGHT_API_KEY"):
        return os.environ["HINDSIGHT_API_KEY"]
    admin = os.environ.get("HINDSIGHT_ADMIN_KEY")
    if not admin and os.path.exists(".hindsight/admin_key"):
        admin = open(".hindsight/admin_key").read().strip()
    if not admin:
        sys.exit("set HINDSIGHT_API_KEY (or HINDSIGHT_ADMIN_KEY to create a tenant)")
    with Hindsight(url, admin_key=admin) as admin_client:
        return admin_client.create_tenant("agents-example").api_key


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default=os.environ.get("HINDSIGHT_URL", "http://127.0.0.1:8000"))
    parser.add_argument("--agent-id", default=f"weather-agents-{uuid.uuid4().hex[:6]}")
    args = parser.parse_args()
    with Hindsight(args.url, _api_key(args.url)) as hindsight:
        demo(hindsight, args.agent_id)


if __name__ == "__main__":
    main()
