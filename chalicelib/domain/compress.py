"""Trajectory compression for an LLM reviewer: one short line per event, nothing it does not need.

Tool calls keep the tool, parameter names with short values, status, error class and message, and a
truncated result; reasoning keeps its first sentence (the decision); user inputs and feedback keep
their text, truncated. Token counts are estimated with a word-piece-like split (words and
punctuation), close enough to compare sizes before and after.
"""
from __future__ import annotations

import json
import re
from typing import Any, Sequence

from .models import Event, Trajectory

_TOKEN = re.compile(r"\w+|[^\w\s]")
_SENTENCE = re.compile(r"(?<=[.!?])\s")


def estimate_tokens(text: str) -> int:
    return len(_TOKEN.findall(text))


def _clip(value: Any, limit: int) -> str:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str, ensure_ascii=False)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _params(params: Any) -> str:
    if not isinstance(params, dict):
        return _clip(params, 60)
    return ", ".join(f"{k}={_clip(v, 40)}" for k, v in params.items())


def compress_event(e: Event) -> str:
    c = e.content
    if e.type == "tool_call":
        head = f"{c.get('tool')}({_params(c.get('params', {}))})"
        if c.get("status") == "error":
            return f"#{e.seq} CALL {head} -> ERROR {_clip(c.get('error') or c.get('result') or '', 160)}"
        result = c.get("result")
        return f"#{e.seq} CALL {head} -> ok" + (f": {_clip(result, 120)}" if result not in (None, "") else "")
    if e.type == "llm_reasoning":
        first = _SENTENCE.split(str(c.get("text", "")).strip(), maxsplit=1)[0]
        return f"#{e.seq} THINK {_clip(first, 160)}"
    if e.type == "user_input":
        return f"#{e.seq} USER {_clip(c.get('text', ''), 200)}"
    if e.type == "feedback":
        return f"#{e.seq} FEEDBACK ({c.get('sentiment') or 'neutral'}) {_clip(c.get('text', ''), 200)}"
    if e.type == "state_change":
        return f"#{e.seq} STATE {c.get('key')} = {_clip(c.get('value'), 80)}"
    return f"#{e.seq} {e.type.upper()} {_clip(c, 120)}"


def compress_trajectory(traj: Trajectory, events: Sequence[Event]) -> str:
    header = [
        f"goal: {_clip(traj.goal, 300)}",
        f"task_type: {traj.task_type or '-'}; intent: {traj.intent or '-'}; outcome: {traj.outcome or 'in progress'}",
        f"tools available: {', '.join(traj.tools) or '-'}",
    ]
    if traj.feedback:
        header.append(f"final feedback: {_clip(traj.feedback, 200)}")
    return "\n".join(header + [compress_event(e) for e in sorted(events, key=lambda e: e.seq)])


def raw_size_tokens(traj: Trajectory, events: Sequence[Event]) -> int:
    """Tokens of the uncompressed trajectory as JSON: the baseline compression is measured against."""
    doc = {"goal": traj.goal, "events": [{"type": e.type, "content": e.content, "context": e.context} for e in events]}
    return estimate_tokens(json.dumps(doc, default=str, ensure_ascii=False))
