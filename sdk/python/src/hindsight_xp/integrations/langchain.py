"""hindsight for LangChain: a callback handler that records tool calls and their errors, asks
advise before each call, and the advice to put in the prompt.

    from hindsight_xp import TrajectoryRecorder
    from hindsight_xp.integrations.langchain import HindsightCallbackHandler

    with TrajectoryRecorder(agent_id="weather-bot", goal=question) as rec:
        handler = HindsightCallbackHandler(rec)
        messages = [SystemMessage(handler.system_prompt("You answer weather questions.")), HumanMessage(question)]
        ...  # model.invoke(messages), then tool.invoke(call, config={"callbacks": [handler]})
        messages.extend(handler.advice_messages())  # what past runs said about the last calls

Tools run with the handler in their callbacks (``config={"callbacks": [handler]}``, or the
callbacks of a chain, agent or LangGraph graph) are recorded: name, arguments, output, or the
error they raised. LangChain calls handlers synchronously for sync tools; advise is bounded by the
recorder's ``advise_timeout`` and never raises.
"""
from __future__ import annotations

import json
import time
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import SystemMessage

from ..recorder import TrajectoryRecorder


def _params(input_str: str, inputs: dict[str, Any] | None) -> dict[str, Any]:
    if isinstance(inputs, dict):
        return dict(inputs)
    try:
        parsed = json.loads(input_str)
    except (TypeError, ValueError):
        return {"input": input_str}
    return parsed if isinstance(parsed, dict) else {"input": parsed}


def _output(output: Any) -> Any:
    content = getattr(output, "content", None)  # a ToolMessage: its content is what the tool said
    return content if content is not None else output


class HindsightCallbackHandler(BaseCallbackHandler):
    """Records each tool run into ``recorder``; consults advise before it (``advise=True``)."""

    raise_error = False  # a failing memory must never fail the chain

    def __init__(self, recorder: TrajectoryRecorder, *, advise: bool = True) -> None:
        self.recorder = recorder
        self.advise = advise
        self._runs: dict[UUID, tuple[str, dict[str, Any], float]] = {}
        self._advice: list[str] = []

    def system_prompt(self, base: str, *, recall: bool = True) -> str:
        """``base`` with the lessons recalled for the trajectory's goal (their recall id attached)."""
        if not recall:
            return base
        try:
            advice = self.recorder.recall(self.recorder.goal).advice
        except Exception as exc:  # memory is an aid: the prompt goes out without it
            self.recorder.advise_errors.append(exc)
            advice = ""
        return f"{base.rstrip()}\n\n{advice}" if advice else base

    def advice_messages(self) -> list[SystemMessage]:
        """The advice of the tool calls since the last time, as system messages (then forgotten)."""
        advice, self._advice = self._advice, []
        return [SystemMessage(a) for a in dict.fromkeys(advice)]

    def on_tool_start(self, serialized: dict[str, Any], input_str: str, *, run_id: UUID,
                      inputs: dict[str, Any] | None = None, **kwargs: Any) -> None:  # fmt: skip
        name = (serialized or {}).get("name") or kwargs.get("name") or "tool"
        params = _params(input_str, inputs)
        self._runs[run_id] = (name, params, time.perf_counter())
        if self.advise:
            result = self.recorder.consult(name, params)
            if result is not None and result.warnings:
                self._advice.append(result.advice)

    def on_tool_end(self, output: Any, *, run_id: UUID, **kwargs: Any) -> None:
        run = self._runs.pop(run_id, None)
        if run is not None:
            name, params, started = run
            self.recorder.tool_call(name, params, result=_output(output), duration_ms=(time.perf_counter() - started) * 1000)

    def on_tool_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        run = self._runs.pop(run_id, None)
        if run is not None:
            name, params, started = run
            self.recorder.tool_call(name, params, error=error, duration_ms=(time.perf_counter() - started) * 1000)
