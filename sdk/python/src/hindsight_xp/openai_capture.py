"""Record an OpenAI tool-calling loop from the client side: chat completions and the Responses API,
answered whole or streamed.

``instrument`` replaces ``client.chat.completions.create`` and ``client.responses.create`` on that
one client object (openai caches the resource objects on the client, so the replacement sticks)
with a function that calls the original and records:

* the user messages it had not seen yet, as ``user_input`` events;
* the assistant's answer, as one ``llm_reasoning`` event: its text (and ``reasoning_content``,
  which some OpenAI-compatible servers return, or the Responses API's reasoning summary) plus the
  tool calls it decided on.

A streamed answer (``stream=True``) is handed back wrapped: the caller iterates it as before, and
the answer is recorded once the stream ends (or is closed early: what had arrived). The tool
calls' results are recorded by the wrapped tools (``recorder.wrap_tools``), which see them; the
model's request is never changed. The openai package is not imported: any object with that shape
works. The ``.stream()`` helpers of openai are not recorded: they bypass ``create``.
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


def _record_decision(recorder: TrajectoryRecorder, text: str, thinking: Any, calls: list[dict[str, Any]], extra: dict[str, Any]) -> None:
    if not (text or thinking or calls):
        return
    lines = [str(t) for t in (thinking, text) if t]
    lines += [f"call `{c['tool']}` with {json.dumps(c['params'], sort_keys=True, default=str)}" for c in calls]
    content: dict[str, Any] = {"text": "\n".join(lines)}
    if calls:
        content["tool_calls"] = calls
    content.update({k: v for k, v in extra.items() if v})
    recorder.record("llm_reasoning", content)


def _record_response(recorder: TrajectoryRecorder, response: Any) -> None:
    """A chat.completion (or what a stream of chunks added up to)."""
    choices = _get(response, "choices") or []
    if not choices:
        return
    message = _get(choices[0], "message")
    if message is None:
        return
    thinking = _get(message, "reasoning_content") or (_get(message, "model_extra") or {}).get("reasoning_content")
    calls = [
        {"id": _get(c, "id"), "tool": _get(_get(c, "function"), "name"),
         "params": _arguments(_get(_get(c, "function"), "arguments"))}
        for c in _get(message, "tool_calls") or ()
    ]  # fmt: skip
    extra = {"finish_reason": _get(choices[0], "finish_reason"), "model": _get(response, "model")}
    _record_decision(recorder, _get(message, "content") or "", thinking, calls, extra)


def _record_responses_request(recorder: TrajectoryRecorder, seen: _Seen, kwargs: dict[str, Any]) -> None:
    """The user's part of a Responses API request: ``input`` as a string, or its user items."""
    given = kwargs.get("input")
    items = [{"role": "user", "content": given}] if isinstance(given, str) else list(given or ())
    users = [i for i in items if _get(i, "role") == "user"]
    if kwargs.get("previous_response_id"):
        # the server keeps the conversation: whatever the input holds is new
        seen.user_messages = 0
    elif len(users) < seen.user_messages:
        seen.user_messages = 0
    for item in users[seen.user_messages :]:
        content = _get(item, "content")
        if isinstance(content, list):  # input_text parts
            content = "\n".join(str(_get(p, "text")) for p in content if _get(p, "type") in ("input_text", "text"))
        recorder.user_input(str(content or ""))
    seen.user_messages = 0 if kwargs.get("previous_response_id") else len(users)


def _record_responses_response(recorder: TrajectoryRecorder, response: Any) -> None:
    """A Responses API ``Response``: its message text, reasoning summary and function calls."""
    texts, thinking, calls = [], [], []
    for item in _get(response, "output") or ():
        kind = _get(item, "type")
        if kind == "message":
            texts += [str(_get(p, "text")) for p in _get(item, "content") or () if _get(p, "type") == "output_text"]
        elif kind == "reasoning":
            thinking += [str(_get(p, "text")) for p in _get(item, "summary") or () if _get(p, "text")]
        elif kind == "function_call":
            calls.append({"id": _get(item, "call_id"), "tool": _get(item, "name"), "params": _arguments(_get(item, "arguments"))})
    extra = {"status": _get(response, "status"), "model": _get(response, "model")}
    _record_decision(recorder, "".join(texts), "\n".join(thinking), calls, extra)


class _ChatChunks:
    """Adds up streamed chat.completion.chunk deltas into one chat.completion."""

    def __init__(self) -> None:
        self.model: Any = None
        self.finish_reason: Any = None
        self.content: list[str] = []
        self.thinking: list[str] = []
        self.calls: dict[int, dict[str, Any]] = {}

    def add(self, chunk: Any) -> None:
        self.model = _get(chunk, "model") or self.model
        for choice in _get(chunk, "choices") or ():
            if (_get(choice, "index") or 0) != 0:
                continue
            self.finish_reason = _get(choice, "finish_reason") or self.finish_reason
            delta = _get(choice, "delta")
            if delta is None:
                continue
            if _get(delta, "content"):
                self.content.append(_get(delta, "content"))
            thinking = _get(delta, "reasoning_content") or (_get(delta, "model_extra") or {}).get("reasoning_content")
            if thinking:
                self.thinking.append(thinking)
            for call in _get(delta, "tool_calls") or ():
                slot = self.calls.setdefault(_get(call, "index") or 0, {"id": None, "name": "", "arguments": ""})
                slot["id"] = _get(call, "id") or slot["id"]
                function = _get(call, "function")
                if function is not None:
                    slot["name"] += _get(function, "name") or ""
                    slot["arguments"] += _get(function, "arguments") or ""

    def record(self, recorder: TrajectoryRecorder) -> None:
        calls = [{"id": c["id"], "function": {"name": c["name"], "arguments": c["arguments"]}} for _, c in sorted(self.calls.items())]
        message = {"content": "".join(self.content), "tool_calls": calls, "reasoning_content": "".join(self.thinking)}
        _record_response(recorder, {"model": self.model, "choices": [{"message": message, "finish_reason": self.finish_reason}]})


class _ResponseEvents:
    """Keeps the final ``Response`` of a Responses API stream, or the text deltas seen so far."""

    def __init__(self) -> None:
        self.final: Any = None
        self.text: list[str] = []

    def add(self, event: Any) -> None:
        kind = _get(event, "type") or ""
        if kind in ("response.completed", "response.incomplete", "response.failed"):
            self.final = _get(event, "response")
        elif kind == "response.output_text.delta":
            self.text.append(_get(event, "delta") or "")

    def record(self, recorder: TrajectoryRecorder) -> None:
        if self.final is not None:
            _record_responses_response(recorder, self.final)
        else:  # closed before the end: record what arrived
            _record_decision(recorder, "".join(self.text), None, [], {"status": "incomplete"})


class _RecordedStream:
    """The stream the caller asked for, unchanged, recording its answer once it ends or closes."""

    def __init__(self, stream: Any, parts: _ChatChunks | _ResponseEvents, recorder: TrajectoryRecorder) -> None:
        self._stream, self._parts, self._recorder, self._done = stream, parts, recorder, False

    def _finish(self) -> None:
        if not self._done:
            self._done = True
            self._parts.record(self._recorder)

    def __getattr__(self, name: str) -> Any:  # response, close, ... of the real stream
        return getattr(self._stream, name)

    def __iter__(self) -> Any:
        try:
            for item in self._stream:
                self._parts.add(item)
                yield item
        finally:
            self._finish()

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        try:
            self._stream.close()
        finally:
            self._finish()

    async def __aiter__(self) -> Any:
        try:
            async for item in self._stream:
                self._parts.add(item)
                yield item
        finally:
            self._finish()

    async def __aenter__(self) -> Any:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        try:
            closing = getattr(self._stream, "close", None)
            if closing is not None:
                result = closing()
                if inspect.isawaitable(result):
                    await result
        finally:
            self._finish()


def instrument(recorder: TrajectoryRecorder, client: Any) -> Callable[[], None]:
    """Patch ``client.chat.completions.create`` and, where the client has it,
    ``client.responses.create``; returns the function that undoes both."""
    undo = [_patch(recorder, client.chat.completions, _record_request, _record_response, _ChatChunks)]
    responses = getattr(client, "responses", None)
    if responses is not None and callable(getattr(responses, "create", None)):
        undo.append(_patch(recorder, responses, _record_responses_request, _record_responses_response, _ResponseEvents))

    def undo_all() -> None:
        for step in reversed(undo):
            step()

    return undo_all


def _patch(
    recorder: TrajectoryRecorder,
    resource: Any,
    record_request: Callable[[TrajectoryRecorder, _Seen, dict[str, Any]], None],
    record_response: Callable[[TrajectoryRecorder, Any], None],
    stream_parts: Callable[[], _ChatChunks | _ResponseEvents],
) -> Callable[[], None]:
    had_own = "create" in vars(resource)
    original = resource.create
    if getattr(original, _MARK, None) is recorder:
        return lambda: None
    seen = _Seen()

    def observe(kwargs: dict[str, Any], response: Any) -> Any:
        record_request(recorder, seen, kwargs)
        if kwargs.get("stream"):
            return _RecordedStream(response, stream_parts(), recorder)
        record_response(recorder, response)
        return response

    @functools.wraps(original)
    def patched(*args: Any, **kwargs: Any) -> Any:
        response = original(*args, **kwargs)
        if inspect.isawaitable(response):
            # AsyncOpenAI: its create is not a coroutine function (openai wraps it), but what it
            # returns is awaitable; record once the caller awaits it.
            async def finish() -> Any:
                return observe(kwargs, await response)

            return finish()
        return observe(kwargs, response)

    setattr(patched, _MARK, recorder)
    resource.create = patched

    def undo() -> None:
        if vars(resource).get("create") is not patched:
            return  # someone patched over us; leave theirs in place
        if had_own:
            resource.create = original
        else:
            del resource.create  # back to the class's method

    return undo
