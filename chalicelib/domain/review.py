"""The rule reviewer: what went wrong in a trajectory, what fixed it, and the lesson.

It needs no LLM, so it always runs. From the attribution over the decision graph it takes:

* contrasts: a call failed, and at the same decision point another choice worked (other
  parameters, another tool first, another tool instead) -> a lesson naming the tool, the error
  and the fix;
* blind retries: the same call (tool + parameters) failed again and again -> do not retry it;
* a call that failed after the same tool had worked for the same value of an argument -> call it
  once per such value;
* a failure nothing fixed in the run -> a lesson that says so and quotes the error;
* negative user feedback right after an action -> avoid that action.

A fix is what changed between the failed call and the call that worked, generalized: a value that
must start with what the failing one lacked, characters to leave out, a list as long as another,
values taken from what an earlier call returned, one of the values that worked. A tool that ends
the task or only records a thought is never a fix (``domain.escape``), and a value of one run is
never the rule (a value that worked is checked only once several runs show it).

Each lesson carries its call rule as data (``domain.call_rule``): the advice's words for it are
rendered from the rule, and advise and credit read the rule, never the words.

Texts of the trajectory in a lesson (its goal, errors, what the user said) are kept as ``Raw``
pieces and generalized when written (``domain.lesson``), so that the lesson fits the next task of
its kind; errors and what the user said are cited as quoted, capped excerpts, names and values in
backticks (``domain.inert``): a hostile error message reads as data in another agent's prompt.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Sequence

from .attribution import Attribution, Contrast, attribute, call_key, changed_keys, params_of
from .call_rule import Argument, ArgumentKind, CallRule, RuleKind, changes_words, fed_words, rule_words
from .escape import never_a_fix
from .generalize import generalize
from .inert import code
from .lesson import (
    LessonDraft,
    Raw,
    Wording,
    class_words,
    drafted,
    error_class,
    error_text,
    excerpt,
    fingerprint,
    fix_fingerprint,
    goal_wording,
    param_changes,
    short,
    situation_key,
    trajectory_literals,
)
from .lexical import terms
from .models import FULL_SCOPE, Event, LLMLessonFigures, Trajectory


@dataclass
class Review:
    """What a reviewer found in a trajectory (or the window of a local review)."""

    kind: str  # the scope of ``models.ReviewKind``: full | local
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
    llm_lessons: LLMLessonFigures | None = None  # set by a reviewer that asked a language model

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


class _Context:
    """What every lesson of one trajectory shares: its task, events and literal values."""

    def __init__(self, traj: Trajectory, events: Sequence[Event]) -> None:
        self.traj = traj
        self.events = events
        self.values = trajectory_literals(events, traj.goal)

    def quoted_error(self, event: Event) -> str:
        """The event's error as a lesson quotes it: generalized, inert, capped, in quotes."""
        return Raw(error_text(event), quote=True).written(self.values)

    def task(self) -> Wording:
        kind = f" ({self.traj.task_type})" if self.traj.task_type else ""
        intent = f" Intent: {self.traj.intent}." if self.traj.intent else ""
        return (f"Task{kind}: ", Raw(self.traj.goal, strip=".?!"), f".{intent}")

    def draft(self, situation: Wording, action: Wording, result: Wording, lesson: Wording, advice: Wording,
              **identity: Any) -> LessonDraft:
        wording = {"situation": situation, "action": action, "result": result, "lesson": lesson, "advice": advice,
                   "example": goal_wording(self.traj, self.events)}
        return drafted(wording, self.values, self.traj.tenant_id, **identity)


def _redone(events: Sequence[Event], c: Contrast) -> tuple[Event, Event] | None:
    """For an order fix whose prerequisite had already been called before the failure (an upload,
    then the submit that failed, then the upload again, with OCR): that earlier call and the one
    that worked, when their parameters differ. Calling it first was not the news; how it was
    called the second time is."""
    again = c.prerequisite_call
    if c.kind != "order" or again is None:
        return None
    first = next((e for e in reversed(events) if e.is_tool_call and e.tool == again.tool and e.succeeded
                  and e.seq < c.failed.seq), None)
    if first is None or params_of(first) == params_of(again):
        return None
    return first, again


def _contrast_key(c: Contrast, events: Sequence[Event] = ()) -> str:
    """The fingerprint of the lesson a contrast teaches: same situation, fix naming the same tools
    and parameters. Known before the lesson is worded, so a contrast repeated along a long
    trajectory is worded once."""
    tool = c.failed.tool or "?"
    if c.kind == "param":
        names: tuple[str, ...] = (tool, *c.changed_params)
    elif c.kind == "order":
        pair = _redone(events, c)
        before, now = (params_of(pair[0]), params_of(pair[1])) if pair else ({}, {})
        names = (tool, c.prerequisite or "?", *changed_keys(before, now))
    else:
        names = (tool, c.worked.tool or "?")
    return fix_fingerprint(situation_key(tool, error_class(c.failed)), names)


# a note of the agent's with fewer words of its own than this ("Retry.", "Trying another way.")
# says nothing about why the fix worked
MIN_NOTE_WORDS = 5
MAX_NOTE_CHARS = 240


def _note_words(text: str, known: str) -> int:
    """Words of the note that the failure itself (the tool and its error) does not say."""
    return len(set(terms(text)) - set(terms(known)))


def _text(event: Event) -> str:
    return str(event.content.get("text") or "").strip()


# an agent's note that asks the user something: what the user says next answers it
_ASKS = re.compile(r"\?|\bask(?:s|ed|ing)?\b", re.IGNORECASE)


def fix_note(ctx: _Context, c: Contrast) -> tuple[str, str | None] | None:
    """What the agent reasoned between the failure and the call that worked, the last such note
    that says something of its own: why the fix applies ("the check is open and unpaid: void the
    item instead"). It is the situation a look-alike task with the same error does not share, and
    often the fix in words. When nothing was said before the call that worked, what the agent said
    on its result (before its next call) is the why: a fix explained once it had worked.

    The second item: what the user said after that note and before the fix, when the note asked
    them nothing: a correction of the agent's plan ("the drawings haven't changed; there's a
    re-inspection charge outstanding"), which the note alone would misstate (it is the agent's
    guess, and the guess is often the look-alike task's fix). The answer to a question the note asks
    ("Manager PIN is 4471") is not one."""
    known = f"{c.failed.tool} {error_text(c.failed)}"
    said = [
        e for e in ctx.events
        if e.type in ("llm_reasoning", "user_input") and c.failed.seq < e.seq < c.worked.seq
        and _note_words(_text(e), known) >= MIN_NOTE_WORDS
    ]
    notes = [e for e in said if e.type == "llm_reasoning"]
    if notes:
        note = _text(notes[-1])
        last = said[-1]
        correction = _text(last) if last.type == "user_input" and not _ASKS.search(note) else None
        return note, correction
    # nothing said before the call that worked: what the agent made of its result, before its next
    # call, is the why ("That worked. The controller reads the setpoint in Celsius"; for a failing
    # tool replaced by a look, "three holds on the item": why it stopped retrying). The same call
    # working again for the task's next item (the second twin registered like the first) is the fix
    # carried on, not the next step: the summary after it still tells why.
    until = min((e.seq for e in ctx.events if e.is_tool_call and e.seq > c.worked.seq
                 and not (e.tool == c.worked.tool and e.succeeded)), default=None)
    after = [
        _text(e) for e in ctx.events
        if e.type == "llm_reasoning" and c.worked.seq < e.seq and (until is None or e.seq < until)
    ]
    summary = next((n for n in after if _note_words(n, known) >= MIN_NOTE_WORDS), None)
    return (summary, None) if summary is not None else None


MAX_SEEN = 4  # fields of what a look returned


def _looks(ctx: _Context, c: Contrast) -> list[tuple[Event, dict[str, Any]]]:
    """The calls that worked between the failure and the call that worked, with what they returned
    as fields: what the agent looked at before it chose the fix."""
    return [
        (e, e.content["result"]) for e in ctx.events
        if e.succeeded and c.failed.seq < e.seq < c.worked.seq and isinstance(e.content.get("result"), dict)
    ]


def seen_state(ctx: _Context, c: Contrast) -> str | None:
    """What the calls between the failure and the call that worked returned, as words: the short
    text fields of their results ("status ACTIVATING", "hold_reason recent_detail_change"). The
    state the agent looked at before it chose the fix is the situation a look-alike task lacks."""
    seen = []
    for _, result in _looks(ctx, c):
        for key, value in result.items():
            field = f"{key} {value}"
            if isinstance(value, str) and 2 <= len(value) <= 40 and len(value.split()) <= 3 and field not in seen:
                seen.append(field)
    return ", ".join(seen[:MAX_SEEN]) or None


def _with_note(ctx: _Context, c: Contrast) -> Wording:
    found = fix_note(ctx, c)
    if found is None:
        return ()
    note, correction = found
    if correction is None:
        return (" What showed it: ", Raw(excerpt(note, MAX_NOTE_CHARS), strip="", quote=True), ".")
    return (" What showed it: ", Raw(excerpt(note, MAX_NOTE_CHARS), strip="", quote=True), "; the user: ",
            Raw(excerpt(correction, MAX_NOTE_CHARS), strip="", quote=True), ".")


MAX_LOOKS, MAX_LOOK_FIELDS = 2, 4


def checked(ctx: _Context, c: Contrast) -> str | None:
    """The looks between the failure and the call that worked, each named with the fields its result
    held: `get_driver_hours` (`drive_remaining_h`, `duty_remaining_h`). What the agent checked to
    find the cause is what tells a failure from its look-alike (the same error, refused for
    another reason: a driver's hours, or a missing endorsement), and what to check next time; the
    values are the task's own. Not the call that worked, nor the prerequisite it teaches."""
    skip = c.prerequisite_call.event_id if c.prerequisite_call is not None else None
    shown: dict[str, str] = {}
    for e, result in _looks(ctx, c):
        if e.event_id != skip and e.tool and e.tool != c.failed.tool and e.tool not in shown:
            names = list(result)[:MAX_LOOK_FIELDS]
            shown[e.tool] = code(e.tool) + (f" ({', '.join(code(k) for k in names)})" if names else "")
    return ", ".join(list(shown.values())[:MAX_LOOKS]) or None


def _scalars(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [s for v in value.values() for s in _scalars(v)]
    if isinstance(value, (list, tuple)):
        return [s for v in value for s in _scalars(v)]
    return [] if value is None or isinstance(value, bool) else [str(value).strip().lower()]


_SHORT_WORDS = re.compile(r"[^\W\d_][^\d]{0,38}")  # a few words, no digit: a kind, not an instance


def _generalized(key: str, old: Any, new: Any, now: dict[str, Any], earlier: Sequence[Event]) -> Argument | None:
    """What tells the value that worked from the one that failed, as a pattern that holds beyond this
    run (None: none found): a list as long as another argument, values taken from what an earlier
    call returned (and the failing one's were not), a leading mark the failing value lacked,
    characters it held that the working one does not, or a short word value (a kind of thing:
    checked once more runs show the same values)."""
    if isinstance(old, list) and isinstance(new, list) and len(old) != len(new):
        same = [k for k, v in now.items() if k != key and isinstance(v, list) and len(v) == len(new)]
        if same:
            return Argument(ArgumentKind.SAME_LENGTH, key, other=sorted(same)[0])
    if isinstance(old, str) and isinstance(new, str):
        # the same value, with the mark it lacked, or cleaned of characters: what changed is the
        # mark or the characters, wherever the value came from
        mark = re.match(r"[^\w\s]+", new)
        if mark and new[len(mark[0]):] == old:
            return Argument(ArgumentKind.PREFIX, key, shape=mark[0])
        gone = sorted({ch for ch in old if not ch.isalnum() and not ch.isspace()} - set(new))
        if gone and "".join(ch for ch in old if ch not in gone).split() == new.split():
            return Argument(ArgumentKind.WITHOUT, key, avoided="".join(gone))
    news = [v for v in _scalars(new) if len(v) >= 3]
    olds = [v for v in _scalars(old) if v not in news]
    if news and olds:
        returned = {e.tool: set(_scalars(e.content.get("result"))) for e in earlier if e.tool}
        everything = set().union(*returned.values()) if returned else set()
        source = next((t for t in reversed([e.tool for e in earlier if e.tool])
                       if all(v in returned[t] for v in news)), None)
        if source is not None and any(v not in everything for v in olds):
            return Argument(ArgumentKind.FROM_RESULT, key, other=source)
    if isinstance(old, str) and isinstance(new, str):
        if _SHORT_WORDS.fullmatch(new) and _SHORT_WORDS.fullmatch(old) and len(new.split()) <= 4:
            return Argument(ArgumentKind.ONE_OF, key, keys=(new,), avoided_example=code(short(old, 60)))
    return None


_LIKE = "a value like "
_DIGITS = re.compile(r"\d+")


def _kind_of(value: str) -> str:
    """A value as a kind of value: its digits masked (`paypal_<n>` for `paypal_8049766`)."""
    return _DIGITS.sub("<n>", value)


def _general(arg: Argument) -> Argument:
    """A change whose only words are the two values of this run ("a value like `x`, not a value
    like `y`"; the items added to a list and taken out) is no rule: what changed, with this run's
    values as evidence, and nothing to check."""
    if arg.kind is ArgumentKind.VALUE_SHAPE and (arg.shape or "").startswith(_LIKE):
        # the values' kinds, their digits masked: one run's values are evidence, not the rule
        worked = _kind_of(arg.shape[len(_LIKE):])  # type: ignore[index]
        failed = f" where {_kind_of((arg.avoided or '')[len(_LIKE):])} failed" if (arg.avoided or "").startswith(_LIKE) else ""
        return Argument(ArgumentKind.NAMED, arg.name,
                        words=f"use another value for {code(arg.name)} (in one run a value like {worked} worked{failed})")
    if arg.kind is ArgumentKind.NAMED and (arg.words or "").startswith(f"in {code(arg.name)}, include"):
        return Argument(ArgumentKind.NAMED, arg.name, words=f"change the items of {code(arg.name)} (in one run: {_kind_of(arg.words or '')})")
    return arg


def fix_arguments(events: Sequence[Event], failed: Event, worked: Event) -> tuple[Argument, ...]:
    """What changed between a failed call and the later call of the same tool that worked,
    argument by argument, generalized (``_generalized``) where the values allow it."""
    before, now = params_of(failed), params_of(worked)
    earlier = [e for e in events if e.succeeded and e.seq < worked.seq and e.tool != failed.tool]
    out = []
    for arg in param_changes(before, now):
        found = _generalized(arg.name, before.get(arg.name), now.get(arg.name), now, earlier) if arg.name in before else None
        if found is not None and found.kind is ArgumentKind.ONE_OF and not (arg.shape or "").startswith(_LIKE):
            found = None  # a value of a pattern ("a 3-letter uppercase code") says more than the value
        out.append(found or _general(arg))
    return tuple(out)


def _one_run(arg: Argument) -> bool:
    """A change told only by the two values of one run ("a value like `#W1`, not `#W2`")."""
    swapped = arg.kind is ArgumentKind.VALUE_SHAPE and (arg.avoided or "").startswith(_LIKE)
    return (swapped and (arg.shape or "").startswith(_LIKE)) or (arg.words or "").startswith(f"in {code(arg.name)}, include")


def _fed(c: Contrast, name: str) -> Argument:
    """What the tool called first passes on to the call that worked: when every value the call was
    given for ``name`` is in what that tool returned, a check that the values come from it (a
    product's id where an order's item id goes fails it); else only that ``name`` is given. An
    argument the failed call lacked is what was missing, wherever a later call finds it (the city
    the user names in the request is as good as the one a lookup returns)."""
    if params_of(c.failed).get(name) in (None, "", [], {}):
        return Argument(ArgumentKind.MISSING, name)
    source = c.prerequisite_call
    got = set(_scalars(source.content.get("result"))) if source is not None else set()
    values = [v for v in _scalars(params_of(c.worked).get(name)) if len(v) >= 3]
    if source is not None and values and all(v in got for v in values):
        return Argument(ArgumentKind.FROM_RESULT, name, other=source.tool)
    return Argument(ArgumentKind.MISSING, name)


def _contrast_rule(ctx: _Context, c: Contrast) -> CallRule:
    """What a contrast teaches about calling the tool that failed: other arguments, another tool
    first (called another way when it had been called before the failure), or another tool."""
    tool = c.failed.tool or "?"
    err = ctx.quoted_error(c.failed)
    if c.kind == "param":
        return CallRule(RuleKind.ARGUMENTS, tool, fix_arguments(ctx.events, c.failed, c.worked), error=err)
    if c.kind == "order":
        fed = tuple(_fed(c, n) for n in c.changed_params)
        pair = _redone(ctx.events, c)
        # how the first tool was called again; a change whose only words are this run's two values
        # (another order's id) is no rule: what it returned, passed on, is (``_fed``)
        how = tuple(a for a in param_changes(params_of(pair[0]), params_of(pair[1])) if not _one_run(a)) if pair else ()
        return CallRule(RuleKind.CALL_FIRST, tool, fed, other_tool=c.prerequisite or "?", first_arguments=how, error=err)
    return CallRule(RuleKind.USE_INSTEAD, tool, other_tool=c.worked.tool or "?", error=err)


MAX_STATE_FIELDS = 2


def state_named_by_error(c: Contrast) -> str | None:
    """The fields of what the tool called first returned whose value the error names ("`status`
    `pending`" for "non-pending order cannot be cancelled"): the state the call needs."""
    result = c.prerequisite_call.content.get("result") if c.prerequisite_call is not None else None
    if not isinstance(result, dict):
        return None
    words = set(re.findall(r"[a-z]+", error_text(c.failed).lower()))
    named = [f"{code(k)} {code(v)}" for k, v in result.items()
             if isinstance(v, str) and 2 < len(v) <= 30 and " " not in v.strip() and v.lower() in words]
    return ", ".join(named[:MAX_STATE_FIELDS]) or None


def _from_contrast(ctx: _Context, c: Contrast) -> LessonDraft:
    tool, cls = c.failed.tool or "?", error_class(c.failed)
    err = Raw(error_text(c.failed), quote=True)
    t, said_cls = code(tool), class_words(cls)
    note = _with_note(ctx, c)
    looked = checked(ctx, c)
    if looked:
        note = (*note, f" Checked before the fix: {looked}.")
    state = seen_state(ctx, c)
    seen: Wording = (" Seen before the fix: ", Raw(state, strip="", quote=True), ".") if state else ()
    situation = (*ctx.task(), f" Calling {t} failed with ", err, ".", *seen)
    outcome = ctx.traj.outcome
    rule = _contrast_rule(ctx, c)
    fix_tools: tuple[str, ...]
    if rule.kind is RuleKind.ARGUMENTS:
        change = changes_words(rule.arguments)
        names = ", ".join(code(n) for n in c.changed_params)
        action, fix_tools = f"Called {t} again with {names} changed.", (tool,)
        lesson = f"{t} fails with {said_cls} when {names} is wrong or missing; it worked once you {change}."
        advice: Wording = (f"{rule_words(rule)}: otherwise it fails with ", err, ".")
    elif rule.kind is RuleKind.CALL_FIRST:
        pre, fed = code(rule.other_tool or "?"), fed_words(rule)
        action, fix_tools = f"Called {pre} first{fed}, then {t} succeeded.", (tool, rule.other_tool or "?")
        state = state_named_by_error(c)
        when = f"; go on once it shows {state}" if state else ""
        if not rule.first_arguments:
            lesson = f"{t} fails with {said_cls} unless {pre} is called before it{fed}{when}."
            advice = (f"{rule_words(rule)}{when}: calling {t} first fails with ", err, ".")
        else:
            how = changes_words(rule.first_arguments)
            action = f"Called {pre} again, this time {how}{fed}, then {t} succeeded."
            lesson = (f"{t} fails with {said_cls} after {pre} as it was first called; it worked once you"
                      f" called {pre} again, this time {how}{fed}.")
            advice = (f"{rule_words(rule)}: after {pre} without that, {t} fails with ", err, ".")
    else:
        fix = code(rule.other_tool or "?")
        action, fix_tools = f"Used {fix} instead of {t}, which worked.", (tool, rule.other_tool or "?")
        lesson = f"{t} fails with {said_cls} for this kind of task, and {fix} works."
        advice = (f"{rule_words(rule)}: {t} fails with ", err, ".")
    return ctx.draft(
        situation,
        (action,),
        ("It worked after the change." + (f" The task ended as {outcome}." if ctx.traj.outcome else ""),),
        (lesson, *note),
        (*advice, *note),
        tools=fix_tools,
        kind="recovery",
        rule=rule,
        fingerprint=_contrast_key(c, ctx.events),
        situation_key=situation_key(tool, cls),
        error_class=cls,
    )


def _blind_retry(ctx: _Context, failures: list[Event]) -> LessonDraft:
    first = failures[0]
    tool, cls = first.tool or "?", error_class(first)
    err, n = Raw(error_text(first), quote=True), len(failures)
    t, said_cls = code(tool), class_words(cls)
    rule = CallRule(RuleKind.DO_NOT_RETRY, tool, error=ctx.quoted_error(first))
    return ctx.draft(
        (*ctx.task(), f" {t} kept failing with ", err, "."),
        (f"Retried {t} {n} times with the same parameters.",),
        (f"All {n} identical calls failed with {said_cls}.",),
        (f"Retrying {t} unchanged after {said_cls} does not help.",),
        (
            f"{rule_words(rule)} after it fails with ", err,
            ": change the parameters, call a prerequisite tool, or ask the user.",
        ),
        tools=(tool,),
        kind="blind_retry",
        rule=rule,
        fingerprint=fingerprint("retry", tool, cls),
        situation_key=fingerprint("retry-situation", tool, cls),
        error_class=cls,
    )


def _repeated_for(calls: Sequence[Event], failed: Event) -> str | None:
    """The argument for whose value the tool had already worked before this call failed (the
    same order changed twice: the second call finds it changed): its name, or None."""
    params = params_of(failed)
    for e in calls:
        if e.seq >= failed.seq or e.tool != failed.tool or not e.succeeded:
            continue
        same = [k for k, v in params_of(e).items() if isinstance(v, str) and len(v) >= 3 and params.get(k) == v]
        if same:
            return sorted(same)[0]
    return None


def _once_per(ctx: _Context, failed: Event, key: str) -> LessonDraft:
    tool, cls = failed.tool or "?", error_class(failed)
    err, t, k = Raw(error_text(failed), quote=True), code(failed.tool or "?"), code(key)
    rule = CallRule(RuleKind.ONCE_PER, tool, (Argument(ArgumentKind.NAMED, key, words=f"one call per {k}"),),
                    error=ctx.quoted_error(failed))
    return ctx.draft(
        (*ctx.task(), f" {t} failed with ", err, f" after an earlier call of {t} for the same {k} had worked."),
        (f"Called {t} a second time for the same {k}.",),
        ("The second call failed." + (f" The task ended as {ctx.traj.outcome}." if ctx.traj.outcome else ""),),
        (f"{t} works once per {k}: a second call for it fails with {class_words(cls)}.",),
        (f"{rule_words(rule)}: a second call fails with ", err, "."),
        tools=(tool,),
        kind="once_per",
        rule=rule,
        fingerprint=fingerprint("once", tool, key, cls),
        situation_key=situation_key(tool, cls),
        error_class=cls,
    )


def _no_fix(ctx: _Context, failed: Event) -> LessonDraft:
    """A failure nothing in the run fixed: the lesson says so and quotes the error, and checks
    nothing (what would have worked is unknown)."""
    tool, cls = failed.tool or "?", error_class(failed)
    err, t = Raw(error_text(failed), quote=True), code(failed.tool or "?")
    after = [e.tool for e in ctx.events if e.is_tool_call and e.seq > failed.seq and e.succeeded and never_a_fix(e.tool)]
    gave_up = f" The agent then called {code(after[-1] or '?')}." if after else ""
    rule = CallRule(RuleKind.NO_FIX, tool, error=ctx.quoted_error(failed))
    return ctx.draft(
        (*ctx.task(), f" {t} failed with ", err, ". No later call of it worked.", gave_up),
        (f"Called {t}; it failed, and the run did not call it again successfully.",),
        ("No fix was found." + (f" The task ended as {ctx.traj.outcome}." if ctx.traj.outcome else ""),),
        (f"{t} can fail with {class_words(cls)}; this run showed no fix.",),
        (f"{rule_words(rule)}: it failed with ", err, ". Find out why before calling it this way again."),
        tools=(tool,),
        kind="no_fix",
        rule=rule,
        fingerprint=fingerprint("nofix", tool, cls),
        situation_key=situation_key(tool, cls),
        error_class=cls,
    )


# what the user said is often the situation and the fix in their words ("the reader needs a blank
# after service"): cut at 80 characters it lost both
MAX_QUOTE_CHARS = 240


def _negative_feedback(ctx: _Context, feedback: Event, before: Event | None) -> LessonDraft | None:
    text = _text(feedback)
    if not text or before is None:
        return None
    said = Raw(excerpt(text, MAX_QUOTE_CHARS), quote=True)
    said0 = generalize(short(text), ctx.values)  # identity: every literal generalized, whatever a wording keeps
    if before.is_tool_call:
        names = ", ".join(code(k) for k in params_of(before))
        what = f"calling {code(before.tool or '')}" + (f" (with {names})" if names else "")
        tools: tuple[str, ...] = (before.tool or "",)
        objected = CallRule(RuleKind.OBJECTED, before.tool or "")
        rule = objected if objected.tool else None
        action: Wording = (f"The agent was {what}.",)
        advice: Wording = (f"{rule_words(objected)}: ", said, ". Do what they asked instead.")
    else:
        done = Raw(short(str(before.content.get("text") or before.type)), quote=True)
        tools, rule = (), None
        action = ("The agent did: ", done, ".")
        advice = ("Take into account what the user said after you did this (", done, "): ", said, ".")
    return ctx.draft(
        (*ctx.task(), " The user objected" + (f" to {code(before.tool or '')}." if before.is_tool_call else ".")),
        action,
        ("The user said: ", said),
        ("The user objected to this step: ", said),
        advice,
        tools=tuple(t for t in tools if t),
        kind="negative_feedback",
        rule=rule,
        fingerprint=fingerprint("feedback", said0, *tools),
        situation_key=fingerprint("feedback-situation", said0, *tools),
    )


MAX_RULE_PARAMS = 6  # parameter names a stated rule's call is shown with


def _stated_rule(ctx: _Context, calls: Sequence[Event]) -> LessonDraft | None:
    """A task done right the first time, where the agent said why before it acted ("anything under
    a legal hold must survive: check holds first and exclude them"; "two plans and the request does
    not say which: asking the user"): the rule it followed, with the calls that carried it out. Only
    when nothing failed, nobody objected and the task succeeded."""
    events = ctx.events
    if not calls or any(c.failed for c in calls) or any(e.is_negative_feedback for e in events):
        return None
    positive = any(e.type == "feedback" and e.content.get("sentiment") == "positive" for e in events)
    if not (ctx.traj.outcome == "success" or (ctx.traj.outcome is None and positive)):
        return None
    known = " ".join(c.tool or "" for c in calls)
    note = next((e for e in events if e.type == "llm_reasoning" and e.seq < calls[-1].seq
                 and _note_words(_text(e), known) >= MIN_NOTE_WORDS), None)
    if note is None:
        return None
    tools = tuple(dict.fromkeys(c.tool for c in calls if c.seq > note.seq and c.tool))
    if not tools:
        return None
    said = Raw(excerpt(_text(note), MAX_NOTE_CHARS), strip="", quote=True)
    seq = ", then ".join(code(t) for t in tools)

    def shown(tool: str) -> str:  # the tool and the names of what its first call was given
        first = next(c for c in calls if c.seq > note.seq and c.tool == tool)
        names = sorted(params_of(first))[:MAX_RULE_PARAMS]
        return code(tool) + (f" (with {', '.join(code(k) for k in names)})" if names else "")

    with_params = ", then ".join(shown(t) for t in tools)
    first = next(c for c in calls if c.seq > note.seq and c.tool == tools[0])
    # what a call of the first tool must do: what the call that worked was given
    named = tuple(Argument(ArgumentKind.NAMED, k) for k in sorted(params_of(first))[:MAX_RULE_PARAMS])
    return ctx.draft(
        (*ctx.task(), f" It went right the first time: {seq}."),
        (f"Called {seq}, which worked.",),
        ("It worked the first time." + (f" The task ended as {ctx.traj.outcome}." if ctx.traj.outcome else ""),),
        ("What the agent went by: ", said, f" Then it called {with_params}."),
        ("In this kind of task, what worked: ", said, f" (then {with_params})."),
        tools=tools,
        kind="stated_rule",
        rule=CallRule(RuleKind.ARGUMENTS, tools[0], named),
        fingerprint=fingerprint("rule", generalize(short(_text(note)), ctx.values), *tools),
    )


def review_by_rules(traj: Trajectory, events: Sequence[Event], kind: str = FULL_SCOPE) -> Review:
    """Find the lessons a trajectory teaches. Deterministic: same input, same lessons."""
    events = sorted(events, key=lambda e: e.seq)
    calls = [e for e in events if e.is_tool_call]
    attribution: Attribution = attribute(events)
    review = Review(kind=kind, reviewer="deterministic", tool_calls=len(calls))
    review.failed_calls = sum(1 for e in calls if e.failed)
    review.wasted_calls = attribution.wasted
    review.effective_steps = attribution.steps("effective") + attribution.steps("recovery")
    review.ineffective_steps = attribution.steps("failed") + attribution.steps("repeated")
    review.key_decisions = attribution.key_decisions(events)
    ctx = _Context(traj, events)
    seen: set[str] = set()

    def add(draft: LessonDraft | None) -> None:
        if draft is not None and draft.fingerprint not in seen:
            seen.add(draft.fingerprint)
            review.lessons.append(draft)

    for contrast in attribution.contrasts:
        if _contrast_key(contrast, events) not in seen:
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

    paired = {c.failed.event_id for c in attribution.contrasts}
    retried = {f[0].event_id for f in by_call.values() if len(f) >= 2}
    unfixed: list[Event] = []
    for call in calls:
        if not call.failed or call.event_id in paired or (call.tool, error_class(call)) in fixed:
            continue
        key = _repeated_for(calls, call)
        if key is not None:
            add(_once_per(ctx, call, key))
        elif call.event_id not in retried and not any(e.tool == call.tool and e.seq > call.seq and e.succeeded for e in calls):
            unfixed.append(call)
        fixed.add((call.tool or "?", error_class(call)))

    for i, event in enumerate(events):
        if event.is_negative_feedback:
            before = next((e for e in reversed(events[:i]) if e.type in ("tool_call", "llm_reasoning")), None)
            add(_negative_feedback(ctx, event, before))

    if not review.lessons and kind == FULL_SCOPE:  # a failure nothing fixed in the whole run, which teaches nothing else
        for call in unfixed:
            add(_no_fix(ctx, call))

    if not review.lessons:
        add(_stated_rule(ctx, calls))

    review.extra["contrasts"] = len(attribution.contrasts)
    if not review.lessons:
        review.notes.append(
            "no failure followed by a fix, no repeated failure, no negative feedback, no rule stated before a success")
    return review
