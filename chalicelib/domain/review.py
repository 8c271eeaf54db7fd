"""The deterministic reviewer: what went wrong in a trajectory, what fixed it, and the lesson.

It needs no LLM, so it always runs. From the attribution over the decision graph it takes:

* contrasts: a call failed, and at the same decision point another choice worked (other
  parameters, another tool first, another tool instead) -> a lesson naming the tool, the error
  and the fix;
* blind retries: the same call (tool + parameters) failed again and again -> do not retry it;
* negative user feedback right after an action -> avoid that action.

Literal values are generalized (``generalize``) so that the lesson fits the next task of its kind.
"""
from __future__ import annotations

import difflib
import hashlib
import json
import re
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any, Callable, Collection, Mapping, Sequence

from .attribution import Attribution, Contrast, attribute, call_key, params_of
from .generalize import describe_value, generalize, literal_digest, literal_digests, literal_values
from .models import Event, Trajectory

_MAX_VALUE = 80


@dataclass(frozen=True)
class LessonDraft:
    """A lesson before it becomes an experience (ids, scope and time are added by the service)."""

    situation: str
    action: str
    result: str
    lesson: str
    advice: str
    tools: tuple[str, ...]
    kind: str  # recovery | blind_retry | negative_feedback | llm
    fingerprint: str  # same situation and same fix
    situation_key: str = ""  # same situation: two drafts with this equal and other fixes conflict
    error_class: str | None = None
    polarity: str = "warning"  # learned from a failure
    tags: tuple[str, ...] = ()
    example: str = ""  # the task it was learned on, generalized like the lesson
    # the literal values generalized away (salted digest -> placeholder), and the same lesson
    # written again keeping some of them (by digest): see ``generalize.recurring_literals``
    literals: Mapping[str, str] = field(default_factory=dict)
    kept: tuple[str, ...] = ()  # the literal values this wording keeps as they are
    specialize: Callable[[Collection[str]], "LessonDraft | None"] | None = field(default=None, compare=False, repr=False)


@dataclass
class Review:
    kind: str  # full | local
    reviewer: str
    lessons: list[LessonDraft] = field(default_factory=list)
    tool_calls: int = 0
    failed_calls: int = 0
    wasted_calls: int = 0
    effective_steps: list[str] = field(default_factory=list)
    ineffective_steps: list[str] = field(default_factory=list)
    key_decisions: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "reviewer": self.reviewer,
            "tool_calls": self.tool_calls,
            "failed_calls": self.failed_calls,
            "wasted_calls": self.wasted_calls,
            "effective_steps": self.effective_steps,
            "ineffective_steps": self.ineffective_steps,
            "key_decisions": self.key_decisions,
            "lessons": len(self.lessons),
            "notes": self.notes,
            **self.extra,
        }


def short(value: Any, limit: int = _MAX_VALUE) -> str:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def error_text(event: Event) -> str:
    err = event.content.get("error")
    if isinstance(err, dict):
        err = err.get("message") or err.get("type") or err.get("code") or json.dumps(err, sort_keys=True)
    if not err:
        err = event.content.get("result") or "an error"
    return short(str(err))


_CLASS = re.compile(
    r"^\s*([A-Za-z_][\w.]*(?:Error|Exception|Fault))\b"  # ValueError, botocore.ClientError
    r"|^\s*([A-Z][A-Za-z0-9_.]+)\s*:"  # InvalidAirport: ...
    r"|^\s*([a-z][a-z0-9]*(?:_[a-z0-9]+)+)\b"  # channel_not_found ...
)
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
    return generalize(text).lower()[:60]


def fingerprint(*parts: str) -> str:
    return hashlib.sha1("|".join(p.strip().lower() for p in parts).encode()).hexdigest()[:16]


def situation_key(tool: str, cls: str) -> str:
    """Lessons with this key are about the same situation: this tool failing this way."""
    return fingerprint("situation", tool, cls)


def fix_fingerprint(situation: str, identifiers: Sequence[str]) -> str:
    """Same situation and a fix naming the same tools and parameters: the same lesson, however
    it is worded (so a deterministic and an LLM lesson, or two LLM phrasings, merge)."""
    return fingerprint("fix", situation, ",".join(sorted({i.lower() for i in identifiers})))


def trajectory_literals(events: Sequence[Event]) -> dict[str, str]:
    """The literal values of a trajectory's tool calls (value -> placeholder), and the answers
    that gave them ("Which city?" -> "Lyon")."""
    values = literal_values(params_of(e) for e in events if e.is_tool_call)
    for e in events:
        if e.is_tool_call and isinstance(e.content.get("result"), str):
            for v, p in list(values.items()):
                if v.lower() == str(e.content["result"]).strip().lower():
                    values.setdefault(e.content["result"].strip(), p)
    return values


def without_kept(values: Mapping[str, str], keep: Collection[str], salt: str) -> dict[str, str]:
    """``values`` less the literals to keep as they are (given by digest)."""
    keep = set(keep)
    return {v: p for v, p in values.items() if literal_digest(v, salt) not in keep}


def task_example(traj: Trajectory, events: Sequence[Event], keep: Collection[str] = ()) -> str:
    """The trajectory's task, generalized (less the literals to ``keep``): what a lesson learned
    from it is matched against."""
    return generalized_goal(traj, without_kept(trajectory_literals(events), keep, traj.tenant_id))


def generalized_goal(traj: Trajectory, values: Mapping[str, str]) -> str:
    return generalize(traj.goal, values).strip()


class _Context:
    """What every lesson of one trajectory shares: its generalized goal and literal values.

    ``keep``: digests of literals that recur in every task the lesson was learned from; they stay
    as they are (the texts then say "main", not "<branch>"). Identities (fingerprints) never
    depend on them: ``g0`` generalizes everything.
    """

    def __init__(self, traj: Trajectory, events: Sequence[Event], keep: Collection[str] = ()) -> None:
        self.traj = traj
        self.all_values = trajectory_literals(events)
        self.digests = literal_digests(self.all_values, traj.tenant_id)
        self.values = without_kept(self.all_values, keep, traj.tenant_id)
        self.kept = tuple(v for v in self.all_values if v not in self.values)

    def g(self, text: str) -> str:
        return generalize(text, self.values)

    def g0(self, text: str) -> str:
        return generalize(text, self.all_values)

    def goal(self) -> str:
        """The task, generalized: what every lesson of this trajectory was learned on."""
        return generalized_goal(self.traj, self.values)

    def task(self) -> str:
        kind = f" ({self.traj.task_type})" if self.traj.task_type else ""
        intent = f" Intent: {self.traj.intent}." if self.traj.intent else ""
        return f"Task{kind}: {self.goal().rstrip('.?!')}.{intent}"


def _describe_text_change(key: str, old: str, new: str) -> str | None:
    """For long text values (a query, a command) the difference is the lesson, not the values."""
    a, b = old.split(), new.split()
    ops = [op for op in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes() if op[0] != "equal"]
    if not ops or len(ops) > 2:
        return None
    words = []
    for tag, i1, i2, j1, j2 in ops:
        removed, added = " ".join(a[i1:i2]), " ".join(b[j1:j2])
        if tag == "insert":
            words.append(f"add `{short(added, 60)}`" + (" at the end" if i1 == len(a) else ""))
        elif tag == "delete":
            words.append(f"remove `{short(removed, 60)}`")
        else:
            words.append(f"use `{short(added, 60)}` instead of `{short(removed, 60)}`")
    return f"in `{key}`, " + " and ".join(words)


def _describe_change(key: str, old: Any, new: Any) -> str:
    if isinstance(old, dict) and isinstance(new, dict):
        added = sorted(set(new) - set(old))
        removed = sorted(set(old) - set(new))
        changed = sorted(k for k in set(old) & set(new) if old[k] != new[k])
        parts = [f"include {', '.join(f'`{k}`' for k in added)} in `{key}`"] if added else []
        parts += [f"leave {', '.join(f'`{k}`' for k in removed)} out of `{key}`"] if removed else []
        parts += [f"change {', '.join(f'`{k}`' for k in changed)} in `{key}`"] if changed else []
        return "; ".join(parts) or f"change `{key}`"
    if isinstance(old, str) and isinstance(new, str) and max(len(old), len(new)) > 24:
        text = _describe_text_change(key, old, new)
        if text:
            return text
    return f"set `{key}` to {describe_value(new)}, not {describe_value(old)}"


def describe_param_change(before: dict[str, Any], after: dict[str, Any]) -> str:
    """Human words for what changed between two parameter sets: patterns with examples, key
    differences of structured values, word differences of long text."""
    changes = []
    for key in sorted(set(before) | set(after)):
        if key not in after:
            changes.append(f"leave out `{key}`")
        elif key not in before:
            value = after[key]
            if isinstance(value, dict) and value:
                changes.append(f"set `{key}` with {', '.join(f'`{k}`' for k in sorted(value))}")
            else:
                changes.append(f"set `{key}` to {describe_value(value)}")
        elif before[key] != after[key]:
            changes.append(_describe_change(key, before[key], after[key]))
    return "; ".join(changes)


def _from_contrast(ctx: _Context, c: Contrast) -> LessonDraft:
    tool, cls = c.failed.tool or "?", error_class(c.failed)
    err = ctx.g(error_text(c.failed))
    situation = f"{ctx.task()} Calling `{tool}` failed with {err}."
    outcome = ctx.traj.outcome
    if c.kind == "param":
        change = describe_param_change(params_of(c.failed), params_of(c.worked))
        names = ", ".join(f"`{n}`" for n in c.changed_params)
        action, fix_tools = f"Called `{tool}` again with {names} changed.", (tool,)
        lesson = f"`{tool}` fails with {cls} when {names} is wrong or missing; it worked once you {change}."
        advice = f"When you call `{tool}`, {change}: otherwise it fails with {err}."
        key = fix_fingerprint(situation_key(tool, cls), (tool, *c.changed_params))
    elif c.kind == "order":
        pre = c.prerequisite or "?"
        fed = f" and pass what it returns as {', '.join(f'`{n}`' for n in c.changed_params)}" if c.changed_params else ""
        action, fix_tools = f"Called `{pre}` first{fed}, then `{tool}` succeeded.", (tool, pre)
        lesson = f"`{tool}` fails with {cls} unless `{pre}` is called before it{fed}."
        advice = f"Call `{pre}` before `{tool}`{fed}: calling `{tool}` first fails with {err}."
        key = fix_fingerprint(situation_key(tool, cls), (tool, pre))
    else:
        fix = c.worked.tool or "?"
        action, fix_tools = f"Used `{fix}` instead of `{tool}`, which worked.", (tool, fix)
        lesson = f"`{tool}` fails with {cls} for this kind of task, and `{fix}` works."
        advice = f"Use `{fix}` instead of `{tool}` for this: `{tool}` fails with {err}."
        key = fix_fingerprint(situation_key(tool, cls), (tool, fix))
    return LessonDraft(
        situation=situation,
        action=action,
        result="It worked after the change." + (f" The task ended as {outcome}." if ctx.traj.outcome else ""),
        lesson=lesson,
        advice=advice,
        tools=fix_tools,
        kind="recovery",
        fingerprint=key,
        situation_key=situation_key(tool, cls),
        error_class=cls,
    )


def _blind_retry(ctx: _Context, failures: list[Event]) -> LessonDraft:
    first = failures[0]
    tool, cls = first.tool or "?", error_class(first)
    err, n = ctx.g(error_text(first)), len(failures)
    return LessonDraft(
        situation=f"{ctx.task()} `{tool}` kept failing with {err}.",
        action=f"Retried `{tool}` {n} times with the same parameters.",
        result=f"All {n} identical calls failed with {cls}.",
        lesson=f"Retrying `{tool}` unchanged after {cls} does not help.",
        advice=(
            f"Do not retry `{tool}` with the same parameters after it fails with {err}: "
            "change the parameters, call a prerequisite tool, or ask the user."
        ),
        tools=(tool,),
        kind="blind_retry",
        fingerprint=fingerprint("retry", tool, cls),
        situation_key=fingerprint("retry-situation", tool, cls),
        error_class=cls,
    )


def _negative_feedback(ctx: _Context, feedback: Event, before: Event | None) -> LessonDraft | None:
    text = str(feedback.content.get("text") or "").strip()
    if not text or before is None:
        return None
    said, said0 = ctx.g(short(text)), ctx.g0(short(text))
    if before.is_tool_call:
        names = ", ".join(f"`{k}`" for k in params_of(before))
        what = f"calling `{before.tool}`" + (f" (with {names})" if names else "")
        tools: tuple[str, ...] = (before.tool or "",)
        advice = f"The user objected when you used `{before.tool}` for this: \"{said}\". Do what they asked instead."
    else:
        what = ctx.g(short(str(before.content.get("text") or before.type)))
        tools = ()
        advice = f"Take into account what the user said after you did this ({what}): \"{said}\"."
    return LessonDraft(
        situation=f"{ctx.task()} The user objected" + (f" to `{before.tool}`." if before.is_tool_call else "."),
        action=f"The agent was {what}." if before.is_tool_call else f"The agent did: {what}.",
        result=f"The user said: {said}",
        lesson=f"The user objected to this step: {said}",
        advice=advice,
        tools=tuple(t for t in tools if t),
        kind="negative_feedback",
        fingerprint=fingerprint("feedback", said0, *tools),
        situation_key=fingerprint("feedback-situation", said0, *tools),
    )


def _specialized(traj: Trajectory, events: Sequence[Event], kind: str, fp: str, keep: Collection[str]) -> LessonDraft | None:
    return next((d for d in review_trajectory(traj, events, kind, keep).lessons if d.fingerprint == fp), None)


def review_trajectory(traj: Trajectory, events: Sequence[Event], kind: str = "full", keep: Collection[str] = ()) -> Review:
    """Find the lessons a trajectory teaches. Deterministic: same input, same lessons.

    ``keep``: digests of literal values to leave as they are (see ``_Context``)."""
    events = sorted(events, key=lambda e: e.seq)
    calls = [e for e in events if e.is_tool_call]
    attribution: Attribution = attribute(events)
    review = Review(kind=kind, reviewer="deterministic", tool_calls=len(calls))
    review.failed_calls = sum(1 for e in calls if e.failed)
    review.wasted_calls = attribution.wasted
    review.effective_steps = attribution.steps("effective") + attribution.steps("recovery")
    review.ineffective_steps = attribution.steps("failed") + attribution.steps("repeated")
    review.key_decisions = attribution.key_decisions(events)
    ctx = _Context(traj, events, keep)
    example = ctx.goal()
    seen: set[str] = set()

    def add(draft: LessonDraft | None) -> None:
        if draft is not None and draft.fingerprint not in seen:
            seen.add(draft.fingerprint)
            review.lessons.append(replace(
                draft, example=example, literals=ctx.digests, kept=ctx.kept,
                specialize=partial(_specialized, traj, events, kind, draft.fingerprint),
            ))

    for contrast in attribution.contrasts:
        add(_from_contrast(ctx, contrast))
    fixed = {(d.tools[0], d.error_class) for d in review.lessons}

    by_call: dict[str, list[Event]] = {}
    for call in calls:
        if call.failed:
            by_call.setdefault(call_key(call), []).append(call)
    for failures in by_call.values():
        # "do not retry" says less than the fix this trajectory found for the same failure
        if len(failures) >= 2 and (failures[0].tool, error_class(failures[0])) not in fixed:
            add(_blind_retry(ctx, failures))

    for i, event in enumerate(events):
        if event.type == "feedback" and event.content.get("sentiment") == "negative":
            before = next((e for e in reversed(events[:i]) if e.type in ("tool_call", "llm_reasoning")), None)
            add(_negative_feedback(ctx, event, before))

    review.extra["contrasts"] = len(attribution.contrasts)
    if not review.lessons:
        review.notes.append("no failure followed by a fix, no repeated failure, no negative feedback")
    return review
