"""Small builders for domain objects, so tests say only what matters to them."""
from __future__ import annotations

from datetime import datetime, timezone
from itertools import count

from chalicelib.domain.models import Event, Experience, Trajectory

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
_seq = count(1)


def traj(**kw) -> Trajectory:
    base = dict(
        tenant_id="t1", trajectory_id="tr1", agent_id="a1", goal="What is the weather in Paris tomorrow?",
        created_at=T0, updated_at=T0, task_type="query", tools=["get_weather", "ask_user"], outcome="success",
    )
    return Trajectory(**(base | kw))


def call(tool: str, params: dict | None = None, ok: bool = True, error: str | None = None, result=None) -> Event:
    n = next(_seq)
    content = {"tool": tool, "params": params or {}, "status": "ok" if ok else "error"}
    if error is not None:
        content["error"] = error
    if result is not None:
        content["result"] = result
    return Event(event_id=f"e{n}", type="tool_call", timestamp=T0, content=content, seq=n)


def said(text: str, kind: str = "user_input", **content) -> Event:
    n = next(_seq)
    return Event(event_id=f"e{n}", type=kind, timestamp=T0, content={"text": text, **content}, seq=n)


def experience(**kw) -> Experience:
    base = dict(
        tenant_id="t1", experience_id="x1", situation="Weather queries without a city.", action="asked",
        result="worked", lesson="Ask for the city first.", advice="Ask the user for the city before calling get_weather.",
        created_at=T0, updated_at=T0, renewed_at=T0, tools=["get_weather"], task_type="query",
    )
    return Experience(**(base | kw))
