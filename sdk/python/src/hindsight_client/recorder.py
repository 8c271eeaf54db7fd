"""``TrajectoryRecorder``: record what an agent does, cheaply, in the agent's own process.

    with TrajectoryRecorder(agent_id="weather-bot", goal=question, tools=["get_weather"]) as rec:
        rec.user_input(question)
        tools = rec.wrap_tools({"get_weather": get_weather})   # every call recorded
        client = rec.wrap_openai(openai.OpenAI())              # the model's tool_calls recorded
        ...
    # on exit: the rest is sent, and the trajectory finalized as success (failure if an exception escaped)

Recording costs the agent a snapshot of the values and an append to a bounded buffer; the network
is the background thread's business (``_sender``). Anomalies are detected at record time.
"""
from __future__ import annotations

import itertools
import threading
import time
import uuid
from types import TracebackType
from typing import Any, Callable, Literal, Mapping, Sequence, TypeVar

from . import _calls
from ._sender import BatchSender, SenderStats
from ._snapshot import snapshot
from .anomalies import Anomaly, AnomalyDetector
from .client import Hindsight
from .models import EventType, Outcome

F = TypeVar("F", bound=Callable[..., Any])
_TEXT_LIMIT = 8000  # the service's limit on context fields


class TrajectoryRecorder:
    def __init__(
        self,
        client: Hindsight | None = None,
        *,
        agent_id: str,
        goal: str,
        trajectory_id: str | None = None,
        user_id: str | None = None,
        task_type: str | None = None,
        tools: Sequence[str] = (),
        intent: str | None = None,
        tags: Sequence[str] = (),
        metadata: Mapping[str, Any] | None = None,
        on_anomaly: Callable[[Anomaly], None] | None = None,
        max_buffer: int = 10_000,
        flush_interval: float = 0.25,
        close_timeout: float = 10.0,
        detector: AnomalyDetector | None = None,
    ) -> None:
        self._owns_client = client is None
        self.client = client or Hindsight()
        self.trajectory_id = trajectory_id or _calls.new_id("traj")
        self.agent_id, self.goal = agent_id, goal
        self.tools = list(tools)
        self.close_timeout = close_timeout
        self.on_anomaly = on_anomaly
        self.anomalies: list[Anomaly] = []
        self.outcome: Outcome | None = None  # set it to override the outcome chosen on exit
        self.outcome_feedback: str | None = None
        self._detector = detector or AnomalyDetector()
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._id_prefix = f"e{uuid.uuid4().hex[:10]}-"
        self._last_user_input: str | None = None
        self._undo: list[Callable[[], None]] = []
        self._closed = False
        def start() -> None:
            # Built when the thread first sends, so tools added by wrap_tools() after the
            # constructor are part of the trajectory.
            run(_calls.start_trajectory(
                agent_id, goal, trajectory_id=self.trajectory_id, user_id=user_id, task_type=task_type,
                tools=self.tools, intent=intent, tags=tags, metadata=metadata,
            ))  # fmt: skip

        run = self.client._transport.run
        self._sender = BatchSender(
            start=start,
            send=lambda batch: run(_calls.append_events(self.trajectory_id, batch)),
            finalize=lambda outcome, feedback: run(_calls.finalize(self.trajectory_id, outcome, feedback)),  # type: ignore[arg-type]
            max_buffer=max_buffer,
            flush_interval=flush_interval,
        )

    # --- lifecycle ------------------------------------------------------------------------

    def start(self) -> TrajectoryRecorder:
        self._sender.start()
        return self

    def __enter__(self) -> TrajectoryRecorder:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if exc is not None and self.outcome is None:
            self.close("failure", f"{exc_type.__name__ if exc_type else 'error'}: {exc}"[:4000])
        else:
            self.close()

    def close(self, outcome: Outcome | None = None, feedback: str | None = None, *, finalize: bool = True) -> bool:
        """Send everything, finalize (success unless told otherwise), stop the thread.

        Waits at most ``close_timeout`` seconds. True if every event was sent and the trajectory
        finalized; the run goes on either way (see ``stats`` and ``errors``).
        """
        if self._closed:
            return True
        self._closed = True
        for undo in reversed(self._undo):
            undo()
        final = (outcome or self.outcome or "success", feedback or self.outcome_feedback) if finalize else None
        try:
            return self._sender.close(final, self.close_timeout)
        finally:
            if self._owns_client:
                self.client.close()

    def flush(self, timeout: float | None = 10.0) -> bool:
        """Block until what was recorded so far is sent. False on timeout."""
        return self._sender.flush(timeout)

    @property
    def stats(self) -> SenderStats:
        return self._sender.stats()

    @property
    def errors(self) -> list[Exception]:
        """The last errors of the background thread (it never raises into the agent)."""
        return list(self._sender.errors)

    @property
    def finalized(self) -> bool:
        return self._sender.finalized

    # --- recording ------------------------------------------------------------------------

    def record(
        self,
        type: EventType,
        content: dict[str, Any],
        *,
        node_id: str | None = None,
        parent_id: str | None = None,
        subtask: str | None = None,
    ) -> str:
        """Record one event of the contract; returns its event_id (use it as another's parent_id)."""
        event_id = self._id_prefix + str(next(self._ids))
        event: dict[str, Any] = {"event_id": event_id, "type": type, "timestamp": time.time_ns() // 1_000_000,
                                 "content": content}  # fmt: skip
        if node_id:
            event["node_id"] = node_id
        if parent_id:
            event["parent_id"] = parent_id
        context = {}
        if self._last_user_input:
            context["last_user_input"] = self._last_user_input
        if subtask:
            context["subtask"] = subtask[:_TEXT_LIMIT]
        if context:
            event["context"] = context
        with self._lock:
            found = self._detector.observe(event)
            self.anomalies.extend(found)
        self._sender.submit(event)
        if found and self.on_anomaly is not None:
            for anomaly in found:
                self.on_anomaly(anomaly)
        return event_id

    def user_input(self, text: str, **kw: Any) -> str:
        self._last_user_input = str(text)[:_TEXT_LIMIT]
        return self.record("user_input", {"text": snapshot(text)}, **kw)

    def reasoning(self, text: str, **kw: Any) -> str:
        return self.record("llm_reasoning", {"text": snapshot(text)}, **kw)

    def tool_call(
        self,
        tool: str,
        params: Mapping[str, Any] | None = None,
        *,
        result: Any = None,
        error: Any = None,
        status: Literal["ok", "error"] | None = None,
        duration_ms: float | None = None,
        **kw: Any,
    ) -> str:
        """A call and its outcome. ``error`` (an exception or text) makes it a failed call."""
        if isinstance(error, BaseException):
            error = f"{type(error).__name__}: {error}"
        status = status or ("error" if error is not None else "ok")
        content: dict[str, Any] = {"tool": tool, "params": snapshot(dict(params or {})), "status": status}
        if status == "error":
            content["error"] = snapshot(error if error is not None else result)
        else:
            content["result"] = snapshot(result)
        if self.tools:
            content["available_tools"] = self.tools
        if duration_ms is not None:
            content["duration_ms"] = round(duration_ms, 3)
        return self.record("tool_call", content, **kw)

    def feedback(self, text: str, sentiment: Literal["positive", "negative"] | None = None, **kw: Any) -> str:
        content: dict[str, Any] = {"text": snapshot(text)}
        if sentiment:
            content["sentiment"] = sentiment
        return self.record("feedback", content, **kw)

    def state_change(self, key: str, value: Any, **kw: Any) -> str:
        return self.record("state_change", {"key": key, "value": snapshot(value)}, **kw)

    # --- drop-in capture ------------------------------------------------------------------

    def tool(self, fn: F | None = None, *, name: str | None = None,
             is_error: Callable[[Any], Any] | None = None) -> Any:  # fmt: skip
        """Decorator: ``@rec.tool`` or ``@rec.tool(name=..., is_error=...)`` records every call."""
        from .capture import traced

        if fn is None:
            return lambda f: traced(self, f, name=name, is_error=is_error)
        return traced(self, fn, name=name, is_error=is_error)

    def wrap_tools(self, tools: Mapping[str, Callable[..., Any]], *,
                   is_error: Callable[[Any], Any] | None = None) -> dict[str, Callable[..., Any]]:  # fmt: skip
        """The same name -> function mapping, each function recording its calls."""
        from .capture import traced

        for name in tools:
            if name not in self.tools:
                self.tools.append(name)
        return {name: traced(self, fn, name=name, is_error=is_error) for name, fn in tools.items()}

    def wrap_openai(self, client: Any) -> Any:
        """Record what ``client.chat.completions.create`` answers (reasoning text, tool_calls)
        and the new user messages it is sent. Works on openai.OpenAI and openai.AsyncOpenAI;
        undone when the recorder closes. Returns the same client."""
        from .openai_capture import instrument

        self._undo.append(instrument(self, client))
        return client
