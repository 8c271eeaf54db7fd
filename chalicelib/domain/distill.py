"""From reviewed lessons to experiences: quality gate and merge into what is already known."""
from __future__ import annotations

import hashlib
import re
from dataclasses import replace
from datetime import datetime
from typing import Any, Collection, Mapping

from .call_rule import CallRule, merged_rule, rule_words
from .generalize import names, recurring_literals, without_examples
from .lesson import TEXT_FIELDS, LessonDraft, without_kept, write
from .lexical import terms
from .models import Experience, ExperienceStatus, Source, Trajectory
from .rule_reading import read_rule

_GENERIC = re.compile(
    r"^\s*(?:be careful|try again|do better|try harder|pay (?:more )?attention|double[- ]check|be more careful"
    r"|make sure (?:to|that) (?:everything|it) works|think (?:carefully|harder))\b",
    re.I,
)
MIN_ADVICE_CHARS = 20
MIN_SITUATION_CHARS = 12


def passes_quality_gate(draft: LessonDraft) -> tuple[bool, str]:
    """Keep only lessons an agent can act on: a specific situation, a clear result, and advice that
    names the tool (or, for user feedback, quotes what the user said)."""
    if len(draft.situation.strip()) < MIN_SITUATION_CHARS:
        return False, "situation too vague"
    if not draft.result.strip():
        return False, "no result"
    if len(draft.advice) < MIN_ADVICE_CHARS:
        return False, "advice too short"
    if _GENERIC.search(draft.advice):
        return False, "generic advice"
    if draft.kind == "negative_feedback":
        return (True, "") if '"' in draft.advice else (False, "does not say what the user objected to")
    if not draft.tools:
        return False, "names no tool"
    if not any(t.lower() in draft.advice.lower() for t in draft.tools):
        return False, "advice does not name its tool"
    return True, ""


def experience_id_for(tenant_id: str, trajectory_id: str, fingerprint: str) -> str:
    """Deterministic, so a review that runs twice writes the same experience, not a second one."""
    digest = hashlib.sha256(f"{tenant_id}|{trajectory_id}|{fingerprint}".encode()).hexdigest()
    return f"exp_{digest[:24]}"


MAX_EXAMPLES = 5


def _examples(*lists: list[str]) -> list[str]:
    """Distinct task examples, newest last, at most MAX_EXAMPLES."""
    out: list[str] = []
    for example in (e for items in lists for e in items):
        if example and example not in out:
            out.append(example)
    return out[-MAX_EXAMPLES:]


def draft_rule(draft: LessonDraft) -> CallRule | None:
    """The draft's call rule: the reviewer's, or read from its words as written when it has only
    those (a model's lesson)."""
    if draft.rule_in_words:
        return read_rule(draft.advice, draft.lesson, draft.situation, draft.tools)
    return draft.rule


def draft_to_experience(draft: LessonDraft, traj: Trajectory, now: datetime) -> Experience:
    return Experience(
        tenant_id=traj.tenant_id,
        experience_id=experience_id_for(traj.tenant_id, traj.trajectory_id, draft.fingerprint),
        situation=draft.situation,
        action=draft.action,
        result=draft.result,
        lesson=draft.lesson,
        advice=draft.advice,
        created_at=now,
        updated_at=now,
        renewed_at=now,
        tags=sorted(set(traj.tags) | set(draft.tags)),
        task_type=traj.task_type,
        tools=list(draft.tools),
        agent_id=traj.agent_id,
        user_id=traj.user_id,
        source=Source.AGENT,
        sources=[traj.trajectory_id],
        confidence=0.6 if traj.outcome == "success" else 0.5,
        polarity=draft.polarity,
        fingerprint=draft.fingerprint,
        situation_key=draft.situation_key or None,
        error_class=draft.error_class,
        rule=draft_rule(draft),
        intent=traj.intent,
        examples=_examples([draft.example]),
        literals=dict(draft.literals),
        anchors=list(draft.kept_literals),  # candidates: a merge keeps those every task example names
    )


def literals_to_keep(existing: Experience, draft: LessonDraft, trajectory_id: str) -> dict[str, str]:
    """The literals (by digest) the lesson's sources so far and this new one all had. Only
    another task counts: a trajectory reviewed again (a local review, then the full one; a
    redelivery) shares every literal with itself and proves nothing."""
    if trajectory_id in existing.sources:
        return {}
    return recurring_literals(existing.literals, draft.literals)


def written_keeping(draft: LessonDraft, keep: Collection[str], salt: str) -> LessonDraft:
    """The draft written again from its pieces, keeping the literals in ``keep`` (by digest) as
    they are; the same lesson (its identity does not depend on the wording). A draft without
    pieces is returned as it is."""
    if not draft.wording:
        return draft
    values = without_kept(draft.values, keep, salt)
    texts: dict[str, Any] = {name: write(draft.wording[name], values) for name in TEXT_FIELDS if name in draft.wording}
    return replace(draft, **texts, kept_literals=tuple(v for v in draft.values if v not in values))


def specialized_experience(draft: LessonDraft, keep: Mapping[str, str], traj: Trajectory, now: datetime) -> Experience | None:
    """The new source's lesson written again keeping the literals every source so far had
    (``keep``, by digest: ``main`` in each push to the protected branch), or None when none
    recur: a lesson abstracts only what varies across its tasks (least general generalization)."""
    if not keep or not draft.wording:
        return None
    return draft_to_experience(written_keeping(draft, keep, traj.tenant_id), traj, now)


def merge_into(existing: Experience, new: Experience, now: datetime, specialized: bool = False) -> Experience:
    """Fold a repeat of a known lesson into it: more support, more confidence, renewed.

    A source already counted (a review delivered twice) changes nothing. ``specialized``: the new
    wording keeps the literals every source shared, which a wording from a single source (support
    1) could not know; it is the more specific one.
    """
    added = [s for s in new.sources if s not in existing.sources]
    if not added:
        return existing
    support = existing.support + len(added)
    confidence = min(0.95, existing.confidence + (1 - existing.confidence) * 0.2 * len(added))
    # Keep the more specific wording: the longer advice says more (names more of the fix).
    more_specific = (specialized and existing.support == 1) or len(new.advice) > len(existing.advice)
    wording, other = (new, existing) if more_specific else (existing, new)
    examples = _examples(existing.examples, new.examples)
    # the rule of the wording kept (the other's when that one states none), with what both showed
    rule = merged_rule(wording.rule, other.rule)
    advice = wording.advice
    if rule is not None and wording.rule is not None and rule != wording.rule and advice.startswith(rule_words(wording.rule)):
        advice = rule_words(rule) + advice[len(rule_words(wording.rule)):]
    return replace(
        existing,
        situation=wording.situation,
        action=wording.action,
        result=wording.result,
        lesson=wording.lesson,
        advice=advice_keeping(advice, other.advice),
        rule=rule,
        sources=existing.sources + added,
        examples=examples,
        literals=recurring_literals(existing.literals, new.literals),
        anchors=[a for a in new.anchors if examples and all(names(e, a) for e in examples)],
        support=support,
        confidence=round(confidence, 6),
        tags=sorted(set(existing.tags) | set(new.tags)),
        renewed_at=now,
        freshness=1.0,
        updated_at=now,
        version=existing.version + 1,
    )


ANOTHER_TASK = " In another task: "
MAX_FIXES = 3  # the fixes one advice keeps: the kept wording's and up to two more
_TOKEN = re.compile(r'`[^`]*`|"[^"]*"')  # a name or value as code, or a quotation: whichever opens first
_VALUE = re.compile(r"(?:not )?a value like `[^`]*`")
_CLAUSE_END = re.compile(r"(?<=[.:])\s+")
_PLACEHOLDER = re.compile(r"<[a-z0-9_]+>")
NEW_WORDS = 0.5  # a quotation of the other advice with more than this share of its words new says something new


def advice_keeping(kept: str, other: str) -> str:
    """The kept advice, and what the other advice of the same lesson says that it does not.

    Two tasks merged into one lesson (the same tool failing the same way, the same kind of fix)
    may have been fixed differently: other parameters passed, or another reason the agent read
    in what it saw. The wording kept for the lesson must not drop the other task's fix, which is
    exactly what a look-alike task needs: the clauses of the other advice that name a tool or
    parameter the kept one does not, or quote something (an agent's note, a user's words) whose
    words are mostly new, are added; what the kept advice already says is not repeated.
    """
    if kept.count(ANOTHER_TASK) >= MAX_FIXES - 1 or other in kept:
        return kept
    known = set(terms(kept))
    new = [f"`{n}`" for n in _names(other) - _names(kept)]
    new += [q for q in _quotations(other) if _mostly_new(q, known)]
    clauses = _clauses(other)
    says = [any(x in c for x in new) for c in clauses]
    for i, c in enumerate(clauses[:-1]):  # a label ("What showed it:") goes with what it introduces
        says[i] = says[i] or (says[i + 1] and c.endswith(":") and not _TOKEN.search(c))
    added = " ".join(c for c, keep in zip(clauses, says) if keep)
    if not added:
        return kept
    return f"{kept}{ANOTHER_TASK}{added[:-1] + '.' if added.endswith(':') else added}"


def _quotations(text: str) -> list[str]:
    return [m[0] for m in _TOKEN.finditer(text) if m[0].startswith('"')]


def _names(advice: str) -> set[str]:
    """The tools and parameters an advice names as code, less the values: the example and the
    failing values (``a value like `x```), which differ from task to task, and any value with
    spaces or quotes (`LIMIT 20`, `"Full Name"`)."""
    text = _VALUE.sub("", without_examples(advice))
    return {m[0][1:-1] for m in _TOKEN.finditer(text) if m[0].startswith("`") and not re.search(r"[\s\"']", m[0])}


def _clauses(text: str) -> list[str]:
    """The text cut after each colon or full stop outside a quotation or code."""
    masked = _TOKEN.sub(lambda m: "\x00" * len(m[0]), text)
    out, start = [], 0
    for m in _CLAUSE_END.finditer(masked):
        out.append(text[start:m.start()])
        start = m.end()
    return [c for c in (*out, text[start:]) if c.strip()]


def _mostly_new(quote: str, known: set[str]) -> bool:
    words = set(terms(_PLACEHOLDER.sub(" ", quote)))  # a placeholder names a role, not what was said
    return bool(words) and len(words - known) > NEW_WORDS * len(words)


CREDIBILITY = {Source.HUMAN: 3, Source.AGENT: 2, Source.SIMULATION: 1}


def should_supersede(old: Experience, new: Experience) -> bool:
    """A lesson about the same situation with another fix replaces the old one when its evidence
    is stronger: as credible a source, and more support (or the old one stopped helping).
    Otherwise both stay, as alternatives, until the evidence tips: one run against one run is a
    tie, and two look-alike tasks (the same request, the same error) may well need two fixes."""
    if old.experience_id == new.experience_id or old.fingerprint == new.fingerprint:
        return False
    if CREDIBILITY[new.source] < CREDIBILITY[old.source]:
        return False
    return new.support > old.support or old.utility < 0.4


def corrects(new: Experience, old: Experience) -> bool:
    """Whether ``new`` says something else than ``old`` (their advice differs once case, spacing
    and punctuation are set aside): about the same situation, a contradiction, not a repeat."""
    def said(e: Experience) -> str:
        return " ".join(re.findall(r"\w+", (e.advice or e.lesson).lower()))

    return new.experience_id != old.experience_id and said(new) != said(old)


def supersede(old: Experience, new: Experience, now: datetime) -> tuple[Experience, Experience]:
    """Demote the old lesson (archived, kept for audit) and chain the new one to it."""
    demoted = replace(
        old, status=ExperienceStatus.ARCHIVED, status_reason=f"superseded by {new.experience_id}",
        superseded_by=new.experience_id, updated_at=now,
    )
    promoted = replace(new, supersedes=old.experience_id, version=max(new.version, old.version + 1), updated_at=now)
    return demoted, promoted
