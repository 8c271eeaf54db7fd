"""A LangChain tool-calling loop that learns from its own runs, offline (a scripted chat model).

``HindsightCallbackHandler`` records every tool run (arguments, output or error) as a trajectory,
asks hindsight before each call, and gives the advice to put in the prompt:

* run 1: nothing known; ``get_weather`` without a city fails; the loop asks, then succeeds.
* run 2: the lesson is in the system prompt; the scripted model still calls ``get_weather``
  without a city: hindsight warns before the call, and the warning goes into the next prompt.

    make run                                  # in another terminal: the local service
    python3 -m venv .venv-examples            # a virtualenv of its own; `make test`'s .venv has the frameworks too
    .venv-examples/bin/pip install "./sdk/python[langchain]"
    .venv-examples/bin/python examples/langchain_weather.py
"""
from __future__ import annotations

import argparse
import os
import sys
import uuid
from typing import Any

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool

from hindsight_xp import Hindsight, TrajectoryRecorder
from hindsight_xp.integrations.langchain import HindsightCallbackHandler

QUESTION = "Will it rain tomorrow?"


@tool
def get_weather(date: str, city: str = "") -> str:
    """Weather forecast for a city and a date."""
    if not city:
        raise ValueError("MissingParameter: city is required")
    return f"{date} in {city}: rain, 14°C"


@tool
def ask_user(question: str) -> str:
    """Ask the user a question and get the answer."""
    return "Lyon"


TOOLS = {t.name: t for t in (get_weather, ask_user)}
CALLS = [("get_weather", {"date": "tomorrow"}), ("ask_user", {"question": "Which city?"}),
         ("get_weather", {"date": "tomorrow", "city": "Lyon"})]  # fmt: skip


def run(hindsight: Hindsight, agent_id: str) -> tuple[str, list[Any]]:
    """One run of the loop; returns the trajectory id and the messages the model was sent last."""
    replies = [AIMessage(content="", tool_calls=[{"name": n, "args": a, "id": f"call_{i}"}]) for i, (n, a) in enumerate(CALLS)]
    model = GenericFakeChatModel(messages=iter([*replies, AIMessage(content="Rain in Lyon tomorrow, 14°C.")]))
    with TrajectoryRecorder(hindsight, agent_id=agent_id, goal=QUESTION, tools=list(TOOLS)) as rec:
        handler = HindsightCallbackHandler(rec)
        messages: list[Any] = [SystemMessage(handler.system_prompt("You are a weather assistant.")), HumanMessage(QUESTION)]
        while True:
            reply = model.invoke(messages)
            messages.append(reply)
            if not reply.tool_calls:
                return rec.trajectory_id, messages
            for call in reply.tool_calls:
                try:
                    result = TOOLS[call["name"]].invoke(call["args"], config={"callbacks": [handler]})
                except ValueError as exc:
                    result = str(exc)
                messages.append(ToolMessage(content=str(result), tool_call_id=call["id"]))
            messages.extend(handler.advice_messages())  # what past runs said about these calls


def demo(hindsight: Hindsight, agent_id: str, out: Any = sys.stdout) -> dict[str, Any]:
    first, _ = run(hindsight, agent_id)
    learned = hindsight.wait_for_review(first, timeout=30).experience_ids
    print(f"run 1: lessons learned: {list(learned)}", file=out)
    second, messages = run(hindsight, agent_id)
    print(f"run 2 system prompt:\n{messages[0].content}", file=out)
    warnings = [m.content for m in messages[2:] if isinstance(m, SystemMessage)]
    print(f"run 2 warnings added to the prompt: {len(warnings)}", file=out)
    credit = (hindsight.wait_for_review(second, timeout=30).review or {}).get("credit", {})
    print(f"run 2 credit: {credit}", file=out)
    return {"learned": list(learned), "system_prompt": messages[0].content, "warnings": warnings, "credit": credit}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default=os.environ.get("HINDSIGHT_URL", "http://127.0.0.1:8000"))
    parser.add_argument("--agent-id", default=f"weather-lc-{uuid.uuid4().hex[:6]}")
    args = parser.parse_args()
    key = os.environ.get("HINDSIGHT_API_KEY")
    if not key:
        admin = os.environ.get("HINDSIGHT_ADMIN_KEY") or (open(".hindsight/admin_key").read().strip()
                                                          if os.path.exists(".hindsight/admin_key") else None)  # fmt: skip
        if not admin:
            sys.exit("set HINDSIGHT_API_KEY (or HINDSIGHT_ADMIN_KEY to create a tenant)")
        with Hindsight(args.url, admin_key=admin) as admin_client:
            key = admin_client.create_tenant("langchain-example").api_key
    with Hindsight(args.url, key) as hindsight:
        demo(hindsight, args.agent_id)


if __name__ == "__main__":
    main()
