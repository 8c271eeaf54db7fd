"""Record an OpenAI chat-completions tool-calling loop from the client side.

``instrument`` replaces ``client.chat.completions.create`` on that one client object (openai
caches the resource objects on the client, so the replacement sticks) with a function that
calls the original and records:

* the user messages it had not seen yet, as ``user_input`` events;
* the assistant's answer, as one ``llm_reasoning`` event: its text (and ``reasoning_content``,
  which some OpenAI-compatible servers return) plus the tool_calls it decided on.

The tool calls' results are recorded by the wrapped tools (``recorder.wrap_tools``), which see
them; the model's request is never changed. Streaming responses are passed through unrecorded.
The openai package is not imported: any object with that shape works.
"""
from __future__ import annotations

import functools
import inspect
import json
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from .recorder import TrajectoryRecorder

_MARK = "__hindsight_recorder__"


def _get(obj: Any, key: str) -> Any:
    return obj.get(key) if isinstance(obj, dict) else getattr(obj, key, None)


def _arguments(raw: Any) -> Any:
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except ValueError:
            return raw
    return raw


class _Seen:
    """How many user messages of the conversation were recorded already."""

    def __init__(self) -> None:
        self.user_messages = 0


def _record_request(recorder: TrajectoryRecorder, seen: _Seen, kwargs: dict[str, Any]) -> None:
    users = [m for m in kwargs.get("messages") or () if _get(m, "role") == "user"]
    if len(users) < seen.user_messages:  # a new conversation on the same client
        seen.user_messages = 0
    for message in users[seen.user_messages :]:
        content = _get(message, "content")
        if isinstance(content, list):  # content parts: keep the text ones
            content = "\n".join(str(_get(p, "text")) for p in content if _get(p, "type") == "text")
        recorder.user_input(str(content or ""))
    seen.user_messages = len(users)


def _record_response(recorder: TrajectoryRecorder, response: Any) -> None:
    choices = _get(response, "choices") or []
    if not choices:
        return
    message = _get(choices[0], "message")
    if message is None:
        return
    text = _get(message, "content") or ""
    thinking = _get(message, "reasoning_content") or (_get(message, "model_extra") or {}).get("reasoning_content")
    calls = [
        {"id": _get(c, "id"), "tool": _get(_get(c, "function"), "name"),
         "params": _arguments(_get(_get(c, "function"), "arguments"))}
        for c in _get(message, "tool_calls") or ()
    ]  # fmt: skip
    if not (text or thinking or calls):
        return
    lines = [str(t) for t in (thinking, text) if t]
    lines += [f"call `{c['tool']}` with {json.dumps(c['params'], sort_keys=True, default=str)}" for c in calls]
    content: dict[str, Any] = {"text": "\n".join(lines)}
    if calls:
        content["tool_calls"] = calls
    finish = _get(choices[0], "finish_reason")
    if finish:
        content["finish_reason"] = finish
    model = _get(response, "model")
    if model:
        content["model"] = model
    recorder.record("llm_reasoning", content)


def instrument(recorder: TrajectoryRecorder, client: Any) -> Callable[[], None]:
    """Patch ``client.chat.completions.create``; returns the function that undoes it."""
    completions = client.chat.completions
    had_own = "create" in vars(completions)
    original = completions.create
    if getattr(original, _MARK, None) is recorder:
        return lambda: None
    seen = _Seen()

    def observe(kwargs: dict[str, Any], response: Any) -> None:
        if kwargs.get("stream"):
            return
        _record_request(recorder, seen, kwargs)
        _record_response(recorder, response)

    @functools.wraps(original)
    def patched(*args: Any, **kwargs: Any) -> Any:
        response = original(*args, **kwargs)
        if inspect.isawaitable(response):
            # AsyncOpenAI: its create is not a coroutine function (openai wraps it), but what it
            # returns is awaitable; record once the caller awaits it.
            async def finish() -> Any:
                done = await response
                observe(kwargs, done)
                return done

            return finish()
        observe(kwargs, response)
        return response

    setattr(patched, _MARK, recorder)
    completions.create = patched

    def undo() -> None:
        if vars(completions).get("create") is not patched:
            return  # someone patched over us; leave theirs in place
        if had_own:
            completions.create = original
        else:
            del completions.create  # back to the class's method

    return undo
