"""``TrajectoryRecorder``: record what an agent does, cheaply, in the agent's own process.

    with TrajectoryRecorder(agent_id="weather-bot", goal=question, tools=["get_weather"]) as rec:
        rec.user_input(question)
        tools = rec.wrap_tools({"get_weather": get_weather})   # every call recorded (and advised,
                                                               # with advise=True)
        client = rec.wrap_openai(openai.OpenAI())              # the model's tool_calls recorded
        ...
    # on exit: the rest is sent, and the trajectory finalized as success (failure if an exception escaped)

Recording costs the agent a snapshot of the values and an append to a bounded buffer; the network
is the background thread's business (``_sender``). Anomalies are detected at record time.

With ``advise=True`` each wrapped tool call first asks the service what past runs say about it
(``POST /v1/advise``, bounded by ``advise_timeout``, fail-open): the answer goes to ``on_advice``
and ``last_advice``, and its ``recall_id`` is recorded as a ``recall`` event, so the review
credits the lessons it served. ``recall()`` does the same for a recall before the task.
"""
from __future__ import annotations

import collections
import itertools
import logging
import threading
import time
import uuid
from types import TracebackType
from typing import Any, Callable, Literal, Mapping, Sequence, TypeVar

from . import _calls
from ._retry import NO_RETRY
from ._sender import BatchSender, SenderStats
from ._snapshot import snapshot
from .anomalies import Anomaly, AnomalyDetector
from .client import Hindsight
from .errors import HindsightError
from .models import AdviseResult, EventType, Outcome, RecallResult

F = TypeVar("F", bound=Callable[..., Any])
_TEXT_LIMIT = 8000  # the service's limit on context fields
_RECENT = 20  # the tool calls sent with an advise: what the agent did just before
log = logging.getLogger("hindsight_xp")


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
        advise: bool = False,
        advise_timeout: float = 1.0,
        on_advice: Callable[[str, AdviseResult], None] | None = None,
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
        self.advise = advise
        self.advise_timeout = advise_timeout
        self.on_advice = on_advice
        self.last_advice: AdviseResult | None = None
        self.advise_errors: collections.deque[Exception] = collections.deque(maxlen=20)
        self._scope = {"agent_id": agent_id, "user_id": user_id}
        self._recent: collections.deque[dict[str, Any]] = collections.deque(maxlen=_RECENT)
        # advise must never hold the agent up: no retries, a short timeout, the same connection pool
        self._advisor = Hindsight(self.client.config.url, self.client.config.api_key, retry=NO_RETRY,
                                  http_client=self.client._http)  # fmt: skip
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
            if type == "tool_call":
                self._recent.append({"type": "tool_call", "content": {
                    k: content[k] for k in ("tool", "params", "status", "error") if k in content}})
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

    # --- recall ids and advice ------------------------------------------------------------

    def attach_recall(self, recall_id: str) -> str | None:
        """Record that the agent was shown a recall or advise answer here: the review then credits
        the lessons it served (adopted or ignored, and the outcome)."""
        return self.record("recall", {"recall_id": recall_id}) if recall_id else None

    def recall(self, query: str, **kwargs: Any) -> RecallResult:
        """``Hindsight.recall`` in this trajectory's scope, its recall id attached."""
        kwargs.setdefault("agent_id", self._scope["agent_id"])
        kwargs.setdefault("user_id", self._scope["user_id"])
        result = self.client.recall(query, **kwargs)
        if result.hits:
            self.attach_recall(result.recall_id)
        return result

    def consult(self, tool: str, params: Mapping[str, Any] | None = None) -> AdviseResult | None:
        """What past runs say about calling ``tool`` with ``params`` now; its recall id is attached
        when it served a lesson. None when the service did not answer in ``advise_timeout``
        seconds or failed (the error is in ``advise_errors``): advice is an aid, never a blocker."""
        with self._lock:
            recent = list(self._recent)
        try:
            call = _calls.advise(tool, snapshot(dict(params or {})), goal=self.goal, trajectory_id=self.trajectory_id,
                                 recent_events=recent, timeout=self.advise_timeout, agent_id=self._scope["agent_id"],
                                 user_id=self._scope["user_id"])  # fmt: skip
            result = self._advisor._transport.run(call)
        except (HindsightError, ValueError, TypeError) as exc:
            self.advise_errors.append(exc)
            log.debug("advise for %s failed, going on without it: %s", tool, exc)
            return None
        self.last_advice = result
        if result.hits:
            self.attach_recall(result.recall_id)
        if self.on_advice is not None:
            self.on_advice(tool, result)
        return result

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
