"""Signs, seen in the agent's own process, that a run is going wrong.

The service learns from finished trajectories; these fire while the run is still going, so an
agent (or its operator) can react now: stop retrying, ask the user, recall a lesson.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Mapping

AnomalyKind = Literal["consecutive_failures", "repeated_call", "negative_feedback"]


@dataclass(frozen=True)
class Anomaly:
    kind: AnomalyKind
    message: str
    event_ids: tuple[str, ...]
    tool: str | None = None


class AnomalyDetector:
    """Feed it every recorded event, in order; it returns the anomalies that event completes.

    * consecutive_failures: ``failure_streak`` tool calls in a row failed (once per streak);
    * repeated_call: the same tool with the same parameters was called ``repeat_threshold``
      times in this run (once per distinct call);
    * negative_feedback: a feedback event with sentiment "negative".

    Not thread-safe: the recorder serialises calls.
    """

    def __init__(self, failure_streak: int = 2, repeat_threshold: int = 3) -> None:
        self.failure_streak = failure_streak
        self.repeat_threshold = repeat_threshold
        self._failed_ids: list[str] = []
        self._calls: dict[str, list[str]] = {}

    def observe(self, event: Mapping[str, Any]) -> list[Anomaly]:
        kind, content, event_id = event.get("type"), event.get("content") or {}, str(event.get("event_id", ""))
        if kind == "feedback":
            if content.get("sentiment") == "negative":
                text = str(content.get("text") or "")[:200]
                return [Anomaly("negative_feedback", f"negative feedback from the user: {text!r}", (event_id,))]
            return []
        if kind != "tool_call":
            return []
        found: list[Anomaly] = []
        tool = str(content.get("tool"))
        if content.get("status") == "error":
            self._failed_ids.append(event_id)
            if len(self._failed_ids) == self.failure_streak:
                found.append(Anomaly(
                    "consecutive_failures",
                    f"{self.failure_streak} tool calls failed in a row; the last was `{tool}`: {str(content.get('error'))[:200]}",
                    tuple(self._failed_ids), tool,
                ))  # fmt: skip
        else:
            self._failed_ids = []
        # repr, not a canonical JSON dump: params are already JSON-safe snapshots, and a model
        # repeating a call repeats its arguments in the same order; this runs in the agent's thread.
        key = tool + ":" + repr(content.get("params"))
        ids = self._calls.setdefault(key, [])
        ids.append(event_id)
        if len(ids) == self.repeat_threshold:
            found.append(Anomaly(
                "repeated_call", f"`{tool}` was called {len(ids)} times with the same parameters", tuple(ids), tool
            ))  # fmt: skip
        return found
