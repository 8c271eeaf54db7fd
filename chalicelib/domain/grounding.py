"""Is a lesson a model wrote supported by the trajectory it was learned from?

A model, and a small one most of all, writes lessons that read well and say nothing ("1,", "The
city is not specified"), that loop ("book a flight, book a flight, ..."), that copy its example, or
that speak of tools, values and errors the trajectory never had. Such a lesson must not be stored:
it would be recalled as advice. The checks here need no model and no store: the lesson's texts
against what the trajectory itself contains (its goal, tools, parameters, values, errors, and what
the user said).

``check_lesson`` returns a stable reason code, or None when the lesson may go on to the quality gate.
"""
from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

from .models import Event, Trajectory

# Reason codes, stable: they are counted per reason in review summaries and benchmarks.
VACUOUS = "vacuous"  # too few words to say anything, or says only that something is unknown
REPETITIVE = "repetitive"  # loops on the same words, or its fields repeat one another
NO_ACTION = "no_action"  # the advice tells the agent to do nothing in particular
UNGROUNDED = "ungrounded"  # names no tool, parameter or value of the trajectory
OUTSIDE_TRAJECTORY = "outside_trajectory"  # names a tool, identifier or quoted value the trajectory does not have
UNSUPPORTED_ERROR = "unsupported_error"  # an error the trajectory does not show
REASONS = (VACUOUS, REPETITIVE, NO_ACTION, UNGROUNDED, OUTSIDE_TRAJECTORY, UNSUPPORTED_ERROR)

_WORD = re.compile(r"[A-Za-z][A-Za-z'-]+")
_TOKEN = re.compile(r"[A-Za-z0-9_][\w.-]*")
_TICKED = re.compile(r"`([^`]{1,80})`")
_QUOTED = re.compile(r"\"([^\"]{2,80})\"")
_PLACEHOLDER = re.compile(r"^<[\w ]+>$|<[\w ]+>")
# identifiers written without backticks: snake_case or camelCase words (tool and parameter names)
_IDENT = re.compile(r"\b([a-z][a-z0-9]*(?:_[a-z0-9]+)+|[a-z]+[A-Z][A-Za-z0-9]*)\b")
_UNKNOWN_ONLY = re.compile(
    r"^\W*(?:the\s+|a\s+|an\s+)?[\w\s'-]{0,40}?\b(?:is|are|was|were)\s+(?:not\s+(?:specified|mentioned|given|provided|known|"
    r"stated|available|clear)|unknown|unspecified|unclear|missing)\W*$"
    r"|^\W*(?:n/?a|none|null|unknown|not specified|no lesson|nothing)\W*$",
    re.I,
)
# Imperatives and prohibitions an agent can act on.
_ACTION = re.compile(
    r"\b(?:call|use|ask|set|pass|include|add|remove|omit|leave|change|check|verify|validate|confirm|retry|wait|avoid|"
    r"prefer|switch|replace|provide|specify|send|run|look\s+up|lookup|search|query|request|fetch|convert|format|"
    r"encode|escape|quote|split|limit|reduce|increase|give|read|open|create|select|choose|pick|filter|sort|start|"
    r"stop|try|take|do|make\s+sure|ensure|first|before|after|instead|never|always|don't|must|should)\b",
    re.I,
)
MIN_WORDS = {"situation": 3, "lesson": 3, "advice": 4}
MIN_VALUE_CHARS = 3  # a value this short ("1", "ok") names nothing by itself


@dataclass(frozen=True)
class Evidence:
    """What the trajectory contains, for the checks: lower-cased."""

    tools: frozenset[str]
    params: frozenset[str]
    values: frozenset[str]  # literal values of parameters, results, errors
    tokens: frozenset[str]  # every word and identifier of the trajectory's text
    text: str  # the trajectory's text, for quoted values
    errors: str  # the failed calls' error texts
    failed: bool  # a call failed, or the user objected


def _flatten(value: Any) -> Iterable[str]:
    if isinstance(value, dict):
        for k, v in value.items():
            yield str(k)
            yield from _flatten(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _flatten(v)
    elif value is not None and not isinstance(value, bool):
        yield str(value)


def evidence(traj: Trajectory, events: Sequence[Event]) -> Evidence:
    tools = {t for t in traj.tools} | {e.tool for e in events if e.tool}
    params: set[str] = set()
    values: set[str] = set()
    errors: list[str] = []
    texts = [traj.goal, traj.intent or "", traj.task_type or "", traj.feedback or "", " ".join(tools)]
    failed = False
    for e in events:
        content = e.content
        if e.is_tool_call:
            p = content.get("params")
            if isinstance(p, dict):
                params |= {str(k) for k in p}
                values |= {v for v in _flatten(p.values()) if len(v) <= 200}
            for key in ("result", "error"):
                if content.get(key) not in (None, ""):
                    values |= {v for v in _flatten(content[key]) if len(v) <= 200}
            if e.failed:
                failed = True
                errors.append(json.dumps(content.get("error") or content.get("result") or "", default=str))
        if e.type == "feedback" and content.get("sentiment") == "negative":
            failed = True
        texts.append(json.dumps(content, default=str, ensure_ascii=False))
    text = "\n".join(texts).lower()
    return Evidence(
        tools=frozenset(t.lower() for t in tools if t),
        params=frozenset(p.lower() for p in params),
        values=frozenset(v.strip().lower() for v in values if len(v.strip()) >= MIN_VALUE_CHARS),
        tokens=frozenset(m.lower() for m in _TOKEN.findall(text)) | frozenset(t.lower() for t in tools if t),
        text=text,
        errors="\n".join(errors).lower(),
        failed=failed,
    )


def _words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


def _norm(text: str) -> str:
    return " ".join(_words(text))


def is_vacuous(text: str, min_words: int) -> bool:
    return len(_words(text)) < min_words or _UNKNOWN_ONLY.match(text.strip()) is not None


def is_repetitive(text: str) -> bool:
    """Loops: one word is most of the text, a word chain repeats ("flight_flight_flight"), or
    the same three words come back three times or more."""
    words = _words(text.replace("_", " "))
    if len(words) >= 6 and Counter(words).most_common(1)[0][1] > len(words) * 0.4:
        return True
    trigrams = Counter(zip(words, words[1:], words[2:]))
    return bool(trigrams) and trigrams.most_common(1)[0][1] >= 3


def _names(text: str, names: Iterable[str]) -> bool:
    low = text.lower()
    return any(re.search(rf"(?<![\w-]){re.escape(n)}(?![\w-])", low) for n in names if n)


def _known(identifier: str, ev: Evidence) -> bool:
    ident = identifier.strip().lower()
    if not ident or _PLACEHOLDER.fullmatch(ident):
        return True
    if ident in ev.tools or ident in ev.params or ident in ev.values or ident in ev.tokens:
        return True
    # a call written out ("get_weather(city=<city>)"), or a value with its placeholders: every
    # identifier-like part must be known, and the rest be placeholders or punctuation
    parts = _TOKEN.findall(_PLACEHOLDER.sub(" ", ident))
    return bool(parts) and all(p in ev.tokens or p in ev.values for p in parts)


def check_lesson(
    situation: str, lesson: str, advice: str, error_class: str | None, ev: Evidence, action: str = "", result: str = "",
) -> str | None:
    """The reason code this lesson is not supported by the trajectory (``REASONS``), or None."""
    fields = {"situation": situation, "lesson": lesson, "advice": advice}
    if any(is_vacuous(text, MIN_WORDS[name]) for name, text in fields.items()):
        return VACUOUS
    if any(is_repetitive(text) for text in (situation, lesson, advice, action, result)):
        return REPETITIVE
    normed = [_norm(t) for t in (situation, lesson, advice)]
    if len(set(normed)) < len(normed):  # the same words written into two fields
        return REPETITIVE
    everything = " ".join((situation, action, result, lesson, advice))
    ticked = _TICKED.findall(everything)
    bare = _IDENT.findall(everything)
    if any(not _known(t, ev) for t in (*ticked, *bare)):
        return OUTSIDE_TRAJECTORY
    if any(not _placeholdered_known(q, ev) for q in _QUOTED.findall(everything)):
        return OUTSIDE_TRAJECTORY
    if not (_names(everything, ev.tools) or _names(everything, ev.params) or _names(everything, ev.values)):
        return UNGROUNDED
    if not _ACTION.search(advice):
        return NO_ACTION
    if error_class and error_class.strip():
        if not ev.failed or error_class.strip().lower() not in ev.errors:
            return UNSUPPORTED_ERROR
    return None


def _placeholdered_known(quoted: str, ev: Evidence) -> bool:
    """A quoted value must occur in the trajectory (as it is, or with placeholders for literals);
    quoted words of the user's own text are in the trajectory's text too."""
    q = quoted.strip().lower()
    if q in ev.text:
        return True
    return all(p in ev.text for p in (p.strip() for p in _PLACEHOLDER.split(q)) if p)


_NAMED = re.compile(r"`([A-Za-z_][\w.-]*)`")


def covers(tools: Sequence[str], rule_tools: Sequence[str], text: str = "", rule_advice: str = "") -> bool:
    """A model's lesson may take the place of the rules' lesson for the same situation only if it
    says at least as much: it names every tool the rules' fix names, and its ``text`` names every
    tool or parameter the rules' advice names (`city`, `ask_user`). A grounded but vaguer wording
    ("ask for the city") would otherwise replace the precise one."""
    have = {t.lower() for t in tools}
    if not all(t.lower() in have for t in rule_tools):
        return False
    words = {w.strip(".-") for w in re.findall(r"[\w.-]+", text.lower())}
    return all(name.lower() in words for name in _NAMED.findall(rule_advice))
