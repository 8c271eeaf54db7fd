"""A scripted model for the OpenAI Agents SDK: an agent runs end to end without an API key.

    model = ScriptedAgentsModel([{"tool": "get_weather", "arguments": {"date": "tomorrow"}}, "It will rain."])
    agent = Agent(name="weather", model=model, tools=[...])

Each model turn takes the next step: a tool call (``{"tool", "arguments"}``) or the final text.
``instructions`` keeps the system instructions of every turn, to check what the model was told.
"""
from __future__ import annotations

import json
from typing import Any, AsyncIterator, Sequence

from agents.items import ModelResponse
from agents.models.interface import Model
from agents.usage import Usage
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText


class ScriptedAgentsModel(Model):
    def __init__(self, steps: Sequence[dict[str, Any] | str]) -> None:
        self.steps = list(steps)
        self.instructions: list[str | None] = []
        self._n = 0

    async def get_response(self, system_instructions: str | None, input: Any, model_settings: Any, tools: Any,
                           output_schema: Any, handoffs: Any, tracing: Any, **kwargs: Any) -> ModelResponse:  # fmt: skip
        self.instructions.append(system_instructions)
        if self._n >= len(self.steps):
            raise RuntimeError("the scripted model has no step left")
        step, self._n = self.steps[self._n], self._n + 1
        if isinstance(step, str):
            item: Any = ResponseOutputMessage(
                id=f"msg_{self._n}", role="assistant", status="completed", type="message",
                content=[ResponseOutputText(text=step, type="output_text", annotations=[])],
            )
        else:
            item = ResponseFunctionToolCall(type="function_call", id=f"fc_{self._n}", call_id=f"call_{self._n}",
                                            name=step["tool"], arguments=json.dumps(step.get("arguments") or {}))  # fmt: skip
        return ModelResponse(output=[item], usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError("the scripted model answers whole responses only")
