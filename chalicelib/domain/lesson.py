"""A lesson's identity and wording, whoever found it (the rule reviewer or an LLM).

Identity: fingerprints that say when two drafts are the same lesson (same situation and same fix)
or about the same situation (another fix conflicts); they never depend on which literal values a
wording keeps. Wording: a draft's texts are kept as pieces, fixed words and texts of the trajectory
(``Raw``) that are generalized when written, so that a merge can write the same lesson again
keeping the literals every task shared (``domain.distill.specialized_experience``).
"""
from __future__ import annotations

import difflib
import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any, Collection, Mapping, Sequence, Union

from .attribution import params_of
from .call_rule import Argument, ArgumentKind, CallRule, changes_words
from .generalize import (
    LiteralValues,
    describe_value,
    generalize,
    literal_digest,
    literal_digests,
    literal_values,
    rule_numbers,
    value_pattern,
    without_examples,
)
from .inert import code, inert_line, quoted_excerpt, visible
from .lexical import terms
from .models import Event, Trajectory

_MAX_VALUE = 80
EXCERPT_CHARS = 240  # an error or a user's words cited in a lesson (the objection that tells two tasks apart)
_MIN_CITED = 12  # shorter texts of the trajectory are words a model may use, not citations
_MIN_PREFIX = 24  # the start of a longer text a model copied, cut


@dataclass(frozen=True)
class Raw:
    """A text of the trajectory (its goal, an error, what the user said), written with its literal
    values generalized; ``strip``: then stripped, and these characters taken off its end.

    Whatever it held, it is written inert (``domain.inert``: one line, no role marker, template
    token or tag of the advice block): lessons end up in other agents' prompts. ``quote``: it is
    an excerpt of untrusted text (an error message, what the user said), written quoted and capped
    so that it reads as data. ``excerpts``: untrusted texts this text may cite (a model's lesson
    copying an error message): quoted where it does."""

    text: str
    strip: str | None = None
    quote: bool = False
    excerpts: tuple[str, ...] = ()

    def written(self, values: Mapping[str, str]) -> str:
        text = cite(self.text, self.excerpts) if self.excerpts else self.text
        out = generalize(text, values)
        if self.strip is not None:
            out = out.strip().rstrip(self.strip)
        return quoted_excerpt(out, EXCERPT_CHARS) if self.quote else inert_line(out)


Wording = tuple[Union[str, Raw], ...]

TEXT_FIELDS = ("situation", "action", "result", "lesson", "advice", "example")


def write(wording: Wording, values: Mapping[str, str]) -> str:
    return "".join(p if isinstance(p, str) else p.written(values) for p in wording)


@dataclass(frozen=True)
class LessonDraft:
    """A lesson before it becomes an experience (ids, scope and time are added by the service)."""

    situation: str
    action: str
    result: str
    lesson: str
    advice: str
    tools: tuple[str, ...]
    kind: str  # recovery | blind_retry | negative_feedback | stated_rule | llm
    fingerprint: str  # same situation and same fix
    situation_key: str = ""  # same situation: two drafts with this equal and other fixes conflict
    error_class: str | None = None
    polarity: str = "warning"  # learned from a failure
    tags: tuple[str, ...] = ()
    example: str = ""  # the task it was learned on, generalized like the lesson
    # the literal values generalized away (salted digest -> placeholder): see
    # ``generalize.recurring_literals``
    literals: Mapping[str, str] = field(default_factory=dict)
    kept_literals: tuple[str, ...] = ()  # the literal values this wording keeps as they are
    # the call rule the reviewer found, its words rendered from it (``call_rule.rule_words``); None:
    # about no call in particular, or (``rule_in_words``) stated in a model's words alone, to be
    # read from them when the lesson is stored (``rule_reading``)
    rule: CallRule | None = None
    rule_in_words: bool = False
    # what writing the lesson again takes: the trajectory's literal values by role (value ->
    # placeholder; in memory only, an experience keeps their digests) and each text field as
    # pieces (``TEXT_FIELDS``); empty: the texts are final
    values: Mapping[str, str] = field(default_factory=dict, compare=False, repr=False)
    wording: Mapping[str, Wording] = field(default_factory=dict, compare=False, repr=False)


def drafted(wording: Mapping[str, Wording], values: Mapping[str, str], salt: str, **identity: Any) -> LessonDraft:
    """A draft whose texts are ``wording`` written with every literal in ``values`` generalized."""
    texts: dict[str, Any] = {name: write(pieces, values) for name, pieces in wording.items()}
    return LessonDraft(
        **texts,
        **identity,
        literals=literal_digests(values, salt),
        values=values if isinstance(values, LiteralValues) else LiteralValues(values),
        wording=dict(wording),
    )


def cite(text: str, excerpts: Sequence[str]) -> str:
    """``text`` with what it copies of the excerpts quoted and capped: an excerpt whole (at least
    ``_MIN_CITED`` characters) or its first ``_MIN_PREFIX`` characters or more (a model copies a
    long message cut); quotes already around it are taken in. Compared as seen (``inert.visible``):
    a model copies a message with its line breaks and invisible characters gone."""
    text = visible(text)
    found: set[str] = set()
    for excerpt in {visible(x) for x in excerpts}:
        if len(excerpt) >= _MIN_CITED and (n := _copied_prefix(text, excerpt)) >= min(len(excerpt), _MIN_PREFIX):
            found.add(excerpt[:n])
    if not found:
        return text
    cited: list[str] = []

    def mark(m: re.Match[str]) -> str:
        cited.append(quoted_excerpt(m[2], EXCERPT_CHARS))
        return f"\x00{len(cited) - 1}\x00"

    for excerpt in sorted(found, key=len, reverse=True):  # a citation already marked is not cited again inside
        text = re.sub(rf"([\"'`]?)({re.escape(excerpt)})\1", mark, text)
    return re.sub(r"\x00(\d+)\x00", lambda m: cited[int(m[1])], text)


def _copied_prefix(text: str, excerpt: str) -> int:
    """The length of the longest start of ``excerpt`` that ``text`` holds."""
    if excerpt in text:
        return len(excerpt)
    lo, hi = 0, len(excerpt)  # a start held means every shorter start is held: bisect
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if excerpt[:mid] in text:
            lo = mid
        else:
            hi = mid - 1
    return lo


def untrusted_texts(events: Sequence[Event]) -> tuple[str, ...]:
    """What agents and users wrote in a trajectory (errors, results, what was said), whole and
    line by line: the texts a lesson may only cite."""
    out: list[str] = []
    for e in events:
        content = e.content
        err = content.get("error")
        texts = [err.get("message") if isinstance(err, dict) else err, content.get("result"), content.get("text")]
        for t in texts:
            if isinstance(t, str) and t.strip():
                out.append(t)
                out += [line for line in t.splitlines() if line.strip()]
    return tuple(dict.fromkeys(out))


def short(value: Any, limit: int = _MAX_VALUE) -> str:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+")


def excerpt(text: str, limit: int) -> str:
    """``text`` in at most ``limit`` characters, cut between sentences: its first and last sentences
    first, then the next ones in from each end, in their order, "…" where some were left out. What
    someone says at length opens with what went wrong and closes with what to do ("Stop resubmitting
    that one. [...] Just ask her for something current, a driving licence is fine."), where a cut at
    the limit keeps the opening and loses the instruction. A text whose first sentence alone is too
    long is cut at the limit (``short``)."""
    text = text.strip()
    if len(text) <= limit:
        return text
    parts = _SENTENCE_END.split(text)
    if len(parts) < 2 or len(parts[0]) + 2 > limit:
        return short(text, limit)
    kept: set[int] = set()
    size = 0
    for i in dict.fromkeys(i for pair in zip(range(len(parts)), reversed(range(len(parts)))) for i in pair):
        if size + len(parts[i]) + 2 <= limit:  # a sentence, its space and its share of "…"
            kept.add(i)
            size += len(parts[i]) + 2
    out: list[str] = []
    for i in sorted(kept):
        if out and i - 1 not in kept:
            out.append("…")
        out.append(parts[i])
    return " ".join(out)


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


# class names that say only that something failed: every error of some tools starts with one
# ("Error: order not found", "Error: invalid reason"), so the message is the kind of failure
GENERIC_CLASSES = frozenset({"error", "exception", "fault", "failure", "failed"})
_GENERIC_PREFIX = re.compile(r"^\s*(?:[A-Za-z_]*(?:Error|Exception|Fault)|error|failure|failed)\s*:\s*", re.I)


def error_template(text: str) -> str:
    """An error message with its values masked and a generic class name taken off: "Error:
    5426915165 not found" -> "<n> not found". What one kind of failure shares across tasks."""
    return generalize(_GENERIC_PREFIX.sub("", text, count=1)).lower().strip().rstrip(".")[:60]


def error_class(event: Event) -> str:
    """A stable name for the kind of failure: an exception type, an HTTP status or the message;
    the message's template when its class is only a generic name (``GENERIC_CLASSES``)."""
    err = event.content.get("error")
    if isinstance(err, dict):
        for key in ("type", "code", "class"):
            if err.get(key) and str(err[key]).lower() not in GENERIC_CLASSES:
                return str(err[key])
    text = error_text(event)
    for pattern in (_CLASS, _HTTP):
        m = pattern.search(text)
        if m:
            found = next(g for g in m.groups() if g)
            return error_template(text) if found.lower() in GENERIC_CLASSES else found
    return generalize(text).lower()[:60]


def class_words(cls: str) -> str:
    """An error class in a lesson's words: a name as it is, anything else (a message's words) quoted."""
    return cls if _CLASS_NAME.fullmatch(cls) else quoted_excerpt(cls, 60)


_CLASS_NAME = re.compile(r"[A-Za-z0-9_.:-]{1,60}")


def fingerprint(*parts: str) -> str:
    return hashlib.sha1("|".join(p.strip().lower() for p in parts).encode()).hexdigest()[:16]


def situation_key(tool: str, cls: str) -> str:
    """Lessons with this key are about the same situation: this tool failing this way."""
    return fingerprint("situation", tool, cls)


def fix_fingerprint(situation: str, identifiers: Sequence[str]) -> str:
    """Same situation and a fix naming the same tools and parameters: the same lesson, however
    it is worded (so a deterministic and an LLM lesson, or two LLM phrasings, merge)."""
    return fingerprint("fix", situation, ",".join(sorted({i.lower() for i in identifiers})))


def trajectory_literals(events: Sequence[Event], goal: str = "") -> LiteralValues:
    """The literal values of a trajectory's tool calls (value -> placeholder), and the answers
    that gave them ("Which city?" -> "Lyon"); with the numbers that are rules of it, not
    instances (``generalize.rule_numbers``; ``goal`` is part of the task)."""
    values = literal_values(params_of(e) for e in events if e.is_tool_call)
    by_lower: dict[str, str] = {}
    for v, p in values.items():
        by_lower.setdefault(v.lower(), p)
    for e in events:
        result = e.content.get("result") if e.is_tool_call else None
        if isinstance(result, str) and (placeholder := by_lower.get(result.strip().lower())) is not None:
            values.setdefault(result.strip(), placeholder)
    out = LiteralValues(values)
    stated = [str(e.content.get("error") or "") if e.is_tool_call else str(e.content.get("text") or "")
              for e in events if e.failed or e.type == "llm_reasoning" or e.is_negative_feedback]
    out.constants = rule_numbers(stated, [goal, *(t for e in events for t in _task_data(e))])
    return out


def _task_data(event: Event) -> list[str]:
    """What an event holds of the task itself: what the user asked or said of it, a call's parameters
    and result. Not the user's complaint: what it states that the task did not is the rule it
    broke ("only 7 days per request"), as an error's or the agent's reasoning's numbers are."""
    if event.is_tool_call:
        return [json.dumps([event.content.get("params"), event.content.get("result")], default=str)]
    if event.type == "user_input" or (event.type == "feedback" and not event.is_negative_feedback):
        return [str(event.content.get("text") or "")]
    return []


def without_kept(values: Mapping[str, str], keep: Collection[str], salt: str) -> LiteralValues:
    """``values`` less the literals to keep as they are (given by digest)."""
    keep = set(keep)
    out = LiteralValues({v: p for v, p in values.items() if literal_digest(v, salt) not in keep})
    out.constants = values.constants if isinstance(values, LiteralValues) else frozenset()
    return out


def user_request(traj: Trajectory, events: Sequence[Event]) -> str | None:
    """What the user asked before the agent's first call, when it says more than the goal: the
    task in the user's words often holds the situation the goal leaves out ("the lamp was changed
    this morning", "he starts in two weeks"), which is what tells look-alike tasks apart."""
    asked = []
    for e in sorted(events, key=lambda e: e.seq):
        if e.is_tool_call:
            break
        if e.type == "user_input" and (text := str(e.content.get("text") or "").strip()):
            asked.append(text)
    request = " ".join(asked)
    goal = set(terms(traj.goal))
    return request if request and set(terms(request)) - goal else None


def goal_wording(traj: Trajectory, events: Sequence[Event] = ()) -> Wording:
    """The trajectory's task, generalized: what every lesson learned from it is matched against
    (the goal, and the user's request when it says more)."""
    request = user_request(traj, events)
    goal: Wording = (Raw(traj.goal, strip=""),)
    return (*goal, " (", Raw(short(request, MAX_REQUEST_CHARS), strip="", quote=True), ")") if request else goal


MAX_REQUEST_CHARS = 240


def generalized_goal(traj: Trajectory, values: Mapping[str, str], events: Sequence[Event] = ()) -> str:
    return write(goal_wording(traj, events), values)


def task_example(traj: Trajectory, events: Sequence[Event], keep: Collection[str] = ()) -> str:
    """The trajectory's task, generalized (less the literals to ``keep``): what a lesson learned
    from it is matched against."""
    return generalized_goal(traj, without_kept(trajectory_literals(events, traj.goal), keep, traj.tenant_id), events)


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
            words.append(f"add {code(short(added, 60))}" + (" at the end" if i1 == len(a) else ""))
        elif tag == "delete":
            words.append(f"remove {code(short(removed, 60))}")
        else:
            words.append(f"use {code(short(added, 60))} instead of {code(short(removed, 60))}")
    return f"in {code(key)}, " + " and ".join(words)


def _named(key: str, words: str) -> Argument:
    return Argument(ArgumentKind.NAMED, key, words=words)


def _changed(key: str, old: Any, new: Any) -> list[Argument]:
    if isinstance(old, dict) and isinstance(new, dict):
        added = sorted(set(new) - set(old))
        removed = sorted(set(old) - set(new))
        changed = sorted(k for k in set(old) & set(new) if old[k] != new[k])
        parts = [Argument(ArgumentKind.KEYS, key, keys=tuple(added))] if added else []
        parts += [_named(key, f"leave {', '.join(code(k) for k in removed)} out of {code(key)}")] if removed else []
        parts += [_named(key, f"change {', '.join(code(k) for k in changed)} in {code(key)}")] if changed else []
        return parts or [_named(key, f"change {code(key)}")]
    if isinstance(old, str) and isinstance(new, str) and max(len(old), len(new)) > 24:
        text = _describe_text_change(key, old, new)
        if text:
            return [_named(key, text)]
    if without_examples(describe_value(new)) == without_examples(describe_value(old)):
        # "a whole number, not a whole number" says nothing: say how the values differ
        text = _describe_same_kind_change(key, old, new)
        if text:
            return [_named(key, text)]
    (shape, example), (avoided, avoided_example) = value_pattern(new), value_pattern(old)
    return [Argument(ArgumentKind.VALUE_SHAPE, key, shape, example, avoided, avoided_example)]


def _describe_same_kind_change(key: str, old: Any, new: Any) -> str | None:
    """Two values of one kind: what was added to or taken out of a list, or by what factor a
    number changed (500.0 -> 50000: "multiplied by 100", a unit), or which way."""
    if isinstance(old, list) and isinstance(new, list):
        a, b = [short(v, 40) for v in old], [short(v, 40) for v in new]
        added, removed = [v for v in b if v not in a], [v for v in a if v not in b]
        parts = [f"include {', '.join(code(v) for v in added)}"] if added else []
        parts += [f"leave out {', '.join(code(v) for v in removed)}"] if removed else []
        return f"in {code(key)}, " + " and ".join(parts) if parts else None
    numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (old, new))
    if numbers and old and new and (old > 0) == (new > 0):
        ratio = new / old
        for factor, how in ((ratio, "multiplied"), (1 / ratio, "divided")):
            if factor >= 2 and abs(factor - round(factor)) < 1e-3 * factor:
                return (f"set {code(key)} to the value that failed {how} by {int(round(factor))}"
                        f" (e.g. {short(new, 20)}, not {short(old, 20)})")
    if numbers:
        way = "lower" if new < old else "higher"
        return f"set {code(key)} to a {way} value than the one that failed (e.g. {short(new, 20)}, not {short(old, 20)})"
    return None


def param_changes(before: dict[str, Any], after: dict[str, Any]) -> tuple[Argument, ...]:
    """What changed between two parameter sets, argument by argument (by name): patterns with
    examples, key differences of structured values, word differences of long text. A fix's
    ``call_rule.Argument`` list, which its words are rendered from (``call_rule.changes_words``)."""
    changes: list[Argument] = []
    for key in sorted(set(before) | set(after)):
        if key not in after:
            changes.append(Argument(ArgumentKind.FORBIDDEN, key))
        elif key not in before:
            value = after[key]
            if isinstance(value, dict) and value:
                changes.append(Argument(ArgumentKind.STRUCTURE, key, keys=tuple(sorted(value))))
            else:
                shape, example = value_pattern(value)
                changes.append(Argument(ArgumentKind.VALUE, key, shape, example))
        elif before[key] != after[key]:
            changes += _changed(key, before[key], after[key])
    return tuple(changes)


def describe_param_change(before: dict[str, Any], after: dict[str, Any]) -> str:
    """Human words for what changed between two parameter sets (``param_changes``)."""
    return changes_words(param_changes(before, after))
