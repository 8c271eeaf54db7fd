"""The deterministic reviewer: what went wrong in a trajectory and what fixed it.

It needs no LLM, so it always runs; it finds three honest patterns in the tool calls:

* recovery: a call failed, then a changed call (other parameters, or another tool first)
  made it succeed -> a lesson naming the tool, the error and the fix;
* blind retries: the same call (tool + parameters) failed again and again -> do not retry
  it unchanged;
* negative user feedback right after an action -> avoid that action.
"""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any, Sequence

from .models import Event, Trajectory

_MAX_VALUE = 60


@dataclass(frozen=True)
class LessonDraft:
    """A lesson before it becomes an experience (ids, scope and time are added by the service)."""

    situation: str
    action: str
    result: str
    lesson: str
    advice: str
    tools: tuple[str, ...]
    kind: str  # recovery | blind_retry | negative_feedback
    fingerprint: str
    polarity: str = "warning"  # learned from a failure
    tags: tuple[str, ...] = ()


@dataclass
class Review:
    kind: str  # full | local
    reviewer: str
    lessons: list[LessonDraft] = field(default_factory=list)
    tool_calls: int = 0
    failed_calls: int = 0
    wasted_calls: int = 0
    notes: list[str] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "reviewer": self.reviewer,
            "tool_calls": self.tool_calls,
            "failed_calls": self.failed_calls,
            "wasted_calls": self.wasted_calls,
            "lessons": len(self.lessons),
            "notes": self.notes,
        }


_NUM = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?![\d.])")
_HEXID = re.compile(r"\b(?=[0-9a-f-]*\d)[0-9a-f]{8,}(?:-[0-9a-f]{4,})*\b", re.I)


def generalize(text: str) -> str:
    """Replace literal ids and numbers so a lesson carries over to the next task of its kind."""
    return _NUM.sub("<n>", _HEXID.sub("<id>", text))


def short(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= _MAX_VALUE else text[: _MAX_VALUE - 1] + "…"


def error_text(event: Event) -> str:
    err = event.content.get("error")
    if isinstance(err, dict):
        err = err.get("message") or err.get("type") or err.get("code") or json.dumps(err, sort_keys=True)
    if not err:
        err = event.content.get("result") or "an error"
    return short(str(err))


_CLASS = re.compile(r"^\s*([A-Za-z_][\w.]*(?:Error|Exception|Fault))\b|^\s*([A-Z][A-Za-z0-9_.]+)\s*:")
_HTTP = re.compile(r"\b([45]\d\d)\b")


def error_class(event: Event) -> str:
    """A stable name for the kind of failure: an exception type, an HTTP status or the message."""
    err = event.content.get("error")
    if isinstance(err, dict):
        for key in ("type", "code", "class"):
            if err.get(key):
                return str(err[key])
    text = error_text(event)
    for pattern in (_CLASS, _HTTP):
        m = pattern.search(text)
        if m:
            return next(g for g in m.groups() if g)
    return generalize(text).lower()


def params_of(event: Event) -> dict[str, Any]:
    params = event.content.get("params")
    return params if isinstance(params, dict) else {}


def call_key(event: Event) -> str:
    return f"{event.tool}:{json.dumps(params_of(event), sort_keys=True, default=str)}"


def fingerprint(*parts: str) -> str:
    return hashlib.sha1("|".join(p.strip().lower() for p in parts).encode()).hexdigest()[:16]


def describe_param_change(before: dict[str, Any], after: dict[str, Any]) -> tuple[str, list[str]]:
    """Human words for what changed between two parameter sets, and the parameter names."""
    changes, names = [], []
    for key in sorted(set(before) | set(after)):
        if key not in after:
            changes.append(f"leave out `{key}`")
        elif key not in before:
            changes.append(f"set `{key}` (e.g. {short(after[key])})")
        elif before[key] != after[key]:
            changes.append(f"set `{key}` to a value like {short(after[key])} instead of {short(before[key])}")
        else:
            continue
        names.append(key)
    return "; ".join(changes), names


def _task_words(traj: Trajectory) -> str:
    kind = f" ({traj.task_type})" if traj.task_type else ""
    return f"Task{kind}: {generalize(traj.goal)}."


def _recovery(traj: Trajectory, failed: Event, fix: Event, later: Sequence[Event]) -> LessonDraft | None:
    tool, err, cls = failed.tool or "?", error_text(failed), error_class(failed)
    situation = f"{_task_words(traj)} Calling `{tool}` failed with {short(err)}."
    if fix.tool == tool:
        change, names = describe_param_change(params_of(failed), params_of(fix))
        if not names:
            return None  # same call succeeded on retry: a transient error, nothing to learn
        action = f"Called `{tool}` again and changed {', '.join(f'`{n}`' for n in names)}."
        lesson = f"`{tool}` fails with {cls} when called that way; it succeeded after you {change}."
        advice = f"When you call `{tool}`, {change}: otherwise it fails with {short(err)}."
        key = fingerprint("param", tool, cls, ",".join(names))
        tools: tuple[str, ...] = (tool,)
    else:
        retried = any(e.tool == tool and e.succeeded for e in later)
        if retried:
            action = f"Called `{fix.tool}` first, then `{tool}` succeeded."
            lesson = f"`{tool}` fails with {cls} unless `{fix.tool}` is called before it."
            advice = f"Call `{fix.tool}` before `{tool}`; calling `{tool}` first fails with {short(err)}."
            key = fingerprint("order", tool, cls, fix.tool or "")
        else:
            action = f"Used `{fix.tool}` instead of `{tool}`, which succeeded."
            lesson = f"`{tool}` failed with {cls} for this kind of task, and `{fix.tool}` worked."
            advice = f"Use `{fix.tool}` instead of `{tool}` for this: `{tool}` fails with {short(err)}."
            key = fingerprint("swap", tool, cls, fix.tool or "")
        tools = (tool, fix.tool or "")
    return LessonDraft(
        situation=situation,
        action=action,
        result=f"The call succeeded after the change; the trajectory ended as {traj.outcome or 'unknown'}.",
        lesson=lesson,
        advice=advice,
        tools=tuple(t for t in tools if t),
        kind="recovery",
        fingerprint=key,
    )


def _blind_retry(traj: Trajectory, failures: list[Event]) -> LessonDraft:
    first = failures[0]
    tool, err, cls = first.tool or "?", error_text(first), error_class(first)
    n = len(failures)
    return LessonDraft(
        situation=f"{_task_words(traj)} `{tool}` kept failing with {short(err)}.",
        action=f"Retried `{tool}` {n} times with the same parameters.",
        result=f"All {n} identical calls failed with {cls}.",
        lesson=f"Retrying `{tool}` unchanged after {cls} does not help.",
        advice=(
            f"Do not retry `{tool}` with the same parameters after it fails with {short(err)}: "
            "change the parameters, call a prerequisite tool, or ask the user."
        ),
        tools=(tool,),
        kind="blind_retry",
        fingerprint=fingerprint("retry", tool, cls),
    )


def _negative_feedback(traj: Trajectory, feedback: Event, before: Event | None) -> LessonDraft | None:
    text = str(feedback.content.get("text") or "").strip()
    if not text or before is None:
        return None
    if before.is_tool_call:
        what = f"calling `{before.tool}` with {short(params_of(before))}"
        tools: tuple[str, ...] = (before.tool or "",)
    else:
        what = short(str(before.content.get("text") or before.type))
        tools = ()
    return LessonDraft(
        situation=f"{_task_words(traj)} The user reacted negatively.",
        action=f"The agent was {what}." if before.is_tool_call else f"The agent did: {what}.",
        result=f"The user said: {short(text)}",
        lesson=f"The user objected to this step: {short(text)}",
        advice=f"Before {what if before.is_tool_call else 'this step'}, take into account what the user said: \"{short(text)}\".",
        tools=tuple(t for t in tools if t),
        kind="negative_feedback",
        fingerprint=fingerprint("feedback", generalize(text), *tools),
    )


def review_trajectory(traj: Trajectory, events: Sequence[Event], kind: str = "full") -> Review:
    """Find the lessons a trajectory teaches. Deterministic: same input, same lessons."""
    events = sorted(events, key=lambda e: e.seq)
    calls = [e for e in events if e.is_tool_call]
    review = Review(kind=kind, reviewer="deterministic", tool_calls=len(calls))
    review.failed_calls = sum(1 for e in calls if e.failed)
    seen: set[str] = set()

    def add(draft: LessonDraft | None) -> None:
        if draft is not None and draft.fingerprint not in seen:
            seen.add(draft.fingerprint)
            review.lessons.append(draft)

    # Recovery: the first failure of a (tool, error) and the first success after it.
    for i, call in enumerate(calls):
        if not call.failed:
            continue
        earlier_same = [c for c in calls[:i] if c.failed and c.tool == call.tool and error_class(c) == error_class(call)]
        if earlier_same:
            continue
        later = calls[i + 1 :]
        fix = next((c for c in later if c.succeeded), None)
        if fix is not None:
            add(_recovery(traj, call, fix, later[later.index(fix) + 1 :]))

    # Blind retries: identical failing calls.
    by_call: dict[str, list[Event]] = {}
    for call in calls:
        if call.failed:
            by_call.setdefault(call_key(call), []).append(call)
    for failures in by_call.values():
        if len(failures) >= 2:
            review.wasted_calls += len(failures) - 1
            add(_blind_retry(traj, failures))

    # Negative feedback: what the agent did just before it.
    for i, event in enumerate(events):
        if event.type == "feedback" and event.content.get("sentiment") == "negative":
            before = next((e for e in reversed(events[:i]) if e.type in ("tool_call", "llm_reasoning")), None)
            add(_negative_feedback(traj, event, before))

    if not review.lessons:
        review.notes.append("no failure followed by a fix, no repeated failure, no negative feedback")
    return review
