"""hindsight for the OpenAI Agents SDK: the run recorded, advice before each tool call, lessons in
the instructions.

    from agents import Agent, Runner, function_tool
    from hindsight_xp import TrajectoryRecorder
    from hindsight_xp.integrations.openai_agents import HindsightRunHooks

    with TrajectoryRecorder(agent_id="weather-bot", goal=question) as rec:
        hooks = HindsightRunHooks(rec)
        agent = Agent(name="weather", instructions=hooks.instructions("You answer weather questions."),
                      tools=[function_tool(get_weather, failure_error_function=hooks.tool_error)])
        result = Runner.run_sync(agent, question, hooks=hooks)

``instructions`` recalls lessons for the goal once (its recall id attached to the trajectory) and,
on every turn, adds the advice of the last tool call that a past run warns about, so the model
reads it before its next step. ``tool_error`` records why a tool failed (the SDK's default hides
the exception from the hooks) and tells the model the error class and message.
"""
from __future__ import annotations

import json
import time
from typing import Any, Callable

import anyio
from agents import Agent, RunContextWrapper, RunHooks, Tool

from ..models import AdviseResult
from ..recorder import TrajectoryRecorder


def _arguments(context: RunContextWrapper[Any]) -> dict[str, Any]:
    raw = getattr(context, "tool_arguments", None)
    if not raw:
        return {}
    try:
        parsed = json.loads(raw)
    except ValueError:
        return {"arguments": raw}
    return parsed if isinstance(parsed, dict) else {"arguments": parsed}


class HindsightRunHooks(RunHooks[Any]):
    """Run hooks that record each tool call into ``recorder`` and consult advise before it."""

    def __init__(self, recorder: TrajectoryRecorder, *, advise: bool = True, recall_at_start: bool = True) -> None:
        self.recorder = recorder
        self.advise = advise
        self.recall_at_start = recall_at_start
        self._recalled: str | None = None
        self._pending_advice: str = ""
        self._started: dict[str, tuple[float, dict[str, Any]]] = {}
        self._errors: dict[str, str] = {}

    # --- the prompt ----------------------------------------------------------------------

    def instructions(self, base: str) -> Callable[[RunContextWrapper[Any], Agent[Any]], str]:
        """A dynamic ``Agent.instructions``: ``base``, the lessons for the goal, and the advice of
        the last tool call past runs warn about."""

        def build(context: RunContextWrapper[Any], agent: Agent[Any]) -> str:
            if self._recalled is None:
                self._recalled = ""
                if self.recall_at_start:
                    try:
                        self._recalled = self.recorder.recall(self.recorder.goal, tools=[t.name for t in agent.tools]).advice
                    except Exception as exc:  # memory is an aid: the run goes on without it
                        self.recorder.advise_errors.append(exc)
            parts = [base.rstrip(), self._recalled, self._pending_advice]
            return "\n\n".join(p for p in parts if p)

        return build

    def tool_error(self, context: RunContextWrapper[Any], error: Exception) -> str:
        """A ``failure_error_function`` for ``function_tool``: the model (and the trajectory) learn
        what failed, as ``ErrorClass: message``."""
        text = f"{type(error).__name__}: {error}"
        call_id = getattr(context, "tool_call_id", None)
        if call_id:
            self._errors[call_id] = text
        return text

    # --- RunHooks ------------------------------------------------------------------------

    async def on_tool_start(self, context: RunContextWrapper[Any], agent: Agent[Any], tool: Tool) -> None:
        params = _arguments(context)
        call_id = getattr(context, "tool_call_id", None) or f"{tool.name}-{time.monotonic_ns()}"
        self._started[call_id] = (time.perf_counter(), params)
        if self.advise:
            result: AdviseResult | None = await anyio.to_thread.run_sync(self.recorder.consult, tool.name, params)
            if result is not None and result.warnings:
                self._pending_advice = result.advice

    async def on_tool_end(self, context: RunContextWrapper[Any], agent: Agent[Any], tool: Tool, result: object) -> None:
        call_id = getattr(context, "tool_call_id", None) or ""
        started, params = self._started.pop(call_id, (time.perf_counter(), _arguments(context)))
        elapsed = (time.perf_counter() - started) * 1000
        error = self._errors.pop(call_id, None)
        if error is not None:
            self.recorder.tool_call(tool.name, params, error=error, duration_ms=elapsed)
        else:
            self.recorder.tool_call(tool.name, params, result=result, duration_ms=elapsed)
