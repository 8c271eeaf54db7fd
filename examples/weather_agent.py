"""An agent that learns from its own mistake, offline.

It is an ordinary OpenAI tool-calling loop (the real ``openai`` client), pointed at a local
OpenAI-compatible stub model, and recorded by hindsight without changing the loop:

* run 1: nothing recalled; the model calls ``get_weather`` without a city, which fails; it asks
  the user, then succeeds. The trajectory is recorded, finalized, and reviewed by the service.
* run 2: ``advice_for`` recalls the lesson; it goes into the system prompt; the model asks for the
  city first and gets it right in fewer steps.

    make run                                  # in another terminal: the local service
    .venv/bin/python examples/weather_agent.py

Needs HINDSIGHT_URL (default http://127.0.0.1:8000) and HINDSIGHT_API_KEY; without a key it
creates a tenant with HINDSIGHT_ADMIN_KEY or ./.hindsight/admin_key, as `make run` leaves it.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import openai

from hindsight_xp import Hindsight, TrajectoryRecorder, advice_for, with_advice
from hindsight_xp.errors import HindsightError, TransportError
from hindsight_xp.testing import StubOpenAI, say, tool_call

TOOLS = ["get_weather", "ask_user"]
TOOL_SCHEMAS = [
    {"type": "function", "function": {
        "name": "get_weather", "description": "Weather forecast for a city and a date.",
        "parameters": {"type": "object", "properties": {"date": {"type": "string"}, "city": {"type": "string"}},
                       "required": ["date"]}}},
    {"type": "function", "function": {
        "name": "ask_user", "description": "Ask the user a question and get the answer.",
        "parameters": {"type": "object", "properties": {"question": {"type": "string"}}, "required": ["question"]}}},
]  # fmt: skip
SYSTEM = "You are a weather assistant. Use the tools to answer."


# --- the tools (what the agent can do) ------------------------------------------------------


def get_weather(date: str, city: str | None = None) -> str:
    if not city:
        raise ValueError("MissingParameter: city is required")
    return f"{date} in {city}: rain, 14°C"


def ask_user(question: str) -> str:
    return "Lyon"  # the simulated user lives in Lyon


# --- the stub model (what a real LLM would decide) ------------------------------------------


def weather_model(request: dict[str, Any]) -> dict[str, Any]:
    """A rule-based stand-in for an LLM: it reads the conversation and the system prompt, and
    follows hindsight's advice when the prompt carries some about asking for the city first."""
    messages = request["messages"]
    system = next((m["content"] for m in messages if m["role"] == "system"), "")
    advised = "<hindsight>" in system and "`ask_user`" in system and "`get_weather`" in system
    results = [m for m in messages if m["role"] == "tool"]
    city = next((m["content"] for m in results if m.get("name") == "ask_user"), None)
    last = results[-1] if results else None
    if last is not None and last.get("name") == "get_weather" and not last["content"].startswith("error"):
        return say(f"Here is the forecast: {last['content']}.")
    if city:
        return tool_call("get_weather", date="tomorrow", city=city)
    if last is not None and last["content"].startswith("error"):
        return tool_call("ask_user", "That failed: I need the city.", question="Which city are you in?")
    if advised:
        return tool_call("ask_user", "Past runs say: ask for the city first.", question="Which city are you in?")
    return tool_call("get_weather", date="tomorrow")


# --- the agent (an ordinary tool-calling loop) ---------------------------------------------


@dataclass
class Run:
    answer: str = ""
    steps: list[str] = field(default_factory=list)
    advice: str = ""
    trajectory_id: str = ""


def run_agent(llm: openai.OpenAI, hindsight: Hindsight, agent_id: str, question: str, max_turns: int = 8) -> Run:
    run = Run(advice=advice_for(question, tools=TOOLS, agent_id=agent_id, client=hindsight))
    with TrajectoryRecorder(hindsight, agent_id=agent_id, goal=question, tools=TOOLS, task_type="query") as rec:
        run.trajectory_id = rec.trajectory_id
        llm = rec.wrap_openai(llm)
        tools = rec.wrap_tools({"get_weather": get_weather, "ask_user": ask_user})
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": with_advice(SYSTEM, run.advice)},
            {"role": "user", "content": question},
        ]
        for _ in range(max_turns):
            reply = llm.chat.completions.create(model="stub-model", messages=messages, tools=TOOL_SCHEMAS).choices[0].message
            if not reply.tool_calls:
                run.answer = reply.content or ""
                run.steps.append(f"answer: {run.answer}")
                break
            messages.append(reply.model_dump(exclude_none=True))
            for call in reply.tool_calls:
                args = json.loads(call.function.arguments)
                try:
                    output = str(tools[call.function.name](**args))
                except Exception as exc:  # the model sees the error and may recover
                    output = f"error: {exc}"
                run.steps.append(f"{call.function.name}({json.dumps(args)}) -> {output}")
                messages.append({"role": "tool", "tool_call_id": call.id, "name": call.function.name, "content": output})
    return run


def demo(hindsight: Hindsight, agent_id: str, out: Any = sys.stdout) -> tuple[Run, Run]:
    """Run the agent twice against the stub model; the second run benefits from the first."""
    with StubOpenAI(weather_model) as stub:
        llm = openai.OpenAI(base_url=stub.base_url, api_key="stub", max_retries=0)
        first = run_agent(llm, hindsight, agent_id, "Will it rain tomorrow?")
        review = hindsight.wait_for_review(first.trajectory_id, timeout=30)
        second = run_agent(llm, hindsight, agent_id, "Do I need an umbrella tomorrow?")
    for title, run in (("run 1 (no memory)", first), ("run 2 (with hindsight)", second)):
        print(f"\n== {title}: {len(run.steps)} steps", file=out)
        if run.advice:
            print("advice in the system prompt:\n" + run.advice, file=out)
        for n, step in enumerate(run.steps, 1):
            print(f"  {n}. {step}", file=out)
    print(f"\nreview of run 1: {review.status}, lessons learned: {len(review.experience_ids)}", file=out)
    return first, second


def _api_key(url: str) -> str:
    if os.environ.get("HINDSIGHT_API_KEY"):
        return os.environ["HINDSIGHT_API_KEY"]
    admin = os.environ.get("HINDSIGHT_ADMIN_KEY")
    key_file = Path(".hindsight/admin_key")
    if not admin and key_file.exists():
        admin = key_file.read_text().strip()
    if not admin:
        sys.exit("set HINDSIGHT_API_KEY (or HINDSIGHT_ADMIN_KEY to create a tenant)")
    with Hindsight(url, admin_key=admin) as admin_client:
        # tenant names are unique per deployment: each run of the example gets its own tenant
        return admin_client.create_tenant(f"weather-example-{uuid.uuid4().hex[:8]}").api_key


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default=os.environ.get("HINDSIGHT_URL", "http://127.0.0.1:8000"))
    parser.add_argument("--agent-id", default=f"weather-bot-{uuid.uuid4().hex[:6]}",
                        help="a fresh agent id by default, so that run 1 starts with no memory")  # fmt: skip
    args = parser.parse_args(argv)
    try:
        with Hindsight(args.url, _api_key(args.url)) as hindsight:
            demo(hindsight, args.agent_id)
    except TransportError as exc:
        sys.exit(f"error: nothing answers at {args.url} ({exc}).\n"
                 "Start the service with `make run`, or point HINDSIGHT_URL (or --url) at it.")  # fmt: skip
    except HindsightError as exc:
        sys.exit(f"error: {exc}")


if __name__ == "__main__":
    main()
