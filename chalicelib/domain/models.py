"""Domain objects. Plain dataclasses: persistence schemas live in the adapters."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import Enum
from functools import cached_property
from typing import Any, Iterable

from .call_rule import CallRule
from .command import call_name
from .generalize import without_examples

# json.dumps(..., sort_keys=True, default=str) builds an encoder per call; this is the same one, built once
_CANONICAL = json.JSONEncoder(sort_keys=True, default=str)


class TrajectoryStatus(str, Enum):
    OPEN = "open"
    FINALIZED = "finalized"
    REVIEWED = "reviewed"
    REVIEW_FAILED = "review_failed"


class ExperienceStatus(str, Enum):
    ACTIVE = "active"
    ARCHIVED = "archived"
    FORGOTTEN = "forgotten"


class Source(str, Enum):
    HUMAN = "human"
    AGENT = "agent"
    SIMULATION = "simulation"

    @property
    def default_confidence(self) -> float:
        """The confidence of a lesson written by hand that states none."""
        return {"human": 0.8, "agent": 0.6, "simulation": 0.4}[self.value]


class Signal(str, Enum):
    ADOPTED = "adopted"
    IGNORED = "ignored"
    SUCCEEDED = "succeeded"
    FAILED = "failed"


@dataclass(frozen=True)
class Scope:
    """Who a memory belongs to inside a tenant. ``None`` means shared at that level."""

    tenant_id: str
    agent_id: str | None = None
    user_id: str | None = None

    def visible_to(self, agent_id: str | None, user_id: str | None) -> bool:
        """A memory is seen by a reader of its own agent, and by everyone if it has no agent;
        the same for users."""
        return self.agent_id in (None, agent_id) and self.user_id in (None, user_id)

    def hidden_by(self, agent_id: str | None, user_id: str | None) -> tuple[tuple[str, str], ...]:
        """What hides this memory from that reader: ("agent_id", its agent) when it belongs to
        another agent, ("user_id", its user) when to another user; both, or none when visible."""
        out: list[tuple[str, str]] = []
        if self.agent_id not in (None, agent_id):
            out.append(("agent_id", self.agent_id))
        if self.user_id not in (None, user_id):
            out.append(("user_id", self.user_id))
        return tuple(out)


@dataclass
class Tenant:
    tenant_id: str
    name: str
    created_at: datetime
    # days a trajectory's events are kept, for trajectories started from now on; None: the
    # deployment's default (``Settings.event_retention_days``); 0: kept for good
    event_retention_days: int | None = None


def events_expire_at(created_at: datetime, retention_days: int) -> datetime | None:
    """When the events of a trajectory started at ``created_at`` expire (None: never, for 0 days)."""
    return created_at + timedelta(days=retention_days) if retention_days > 0 else None


@dataclass
class Trajectory:
    tenant_id: str
    trajectory_id: str
    agent_id: str
    goal: str
    created_at: datetime
    updated_at: datetime
    user_id: str | None = None
    task_type: str | None = None
    tools: list[str] = field(default_factory=list)
    intent: str | None = None
    tags: list[str] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    status: TrajectoryStatus = TrajectoryStatus.OPEN
    event_count: int = 0
    outcome: str | None = None
    feedback: str | None = None
    experience_ids: list[str] = field(default_factory=list)
    review: dict[str, Any] | None = None
    finalized_at: datetime | None = None
    # when its events expire (all of them at once, fixed when it starts: the tenant's retention
    # then); None: kept. The trajectory itself, its review and the lessons it taught stay.
    events_expire_at: datetime | None = None

    def events_expired(self, now: datetime) -> bool:
        """Whether its events are past their retention (read as gone, whatever a store still holds)."""
        return self.events_expire_at is not None and self.events_expire_at <= now


@dataclass(frozen=True)
class ReviewKind:
    """What a review job reviews: the whole trajectory (``full``, queued on finalize) or the events
    around an ingest anomaly (``local:<event_id>``). Queues store it as text: ``str(kind)``, read
    back with ``ReviewKind.parse``."""

    trigger: str | None = None  # the event that completed the anomaly, for a local review

    @classmethod
    def local(cls, trigger_id: str) -> "ReviewKind":
        return cls(trigger_id)

    @classmethod
    def parse(cls, text: str) -> "ReviewKind":
        if text == FULL_SCOPE:
            return cls()
        scope, sep, trigger = text.partition(":")
        if scope == LOCAL_SCOPE and sep:
            return cls(trigger)
        raise ValueError(f"unknown review kind {text!r}")

    @property
    def is_full(self) -> bool:
        return self.trigger is None

    @property
    def scope(self) -> str:
        """What a reviewer is told it reviews: ``full`` or ``local``."""
        return FULL_SCOPE if self.is_full else LOCAL_SCOPE

    def __str__(self) -> str:
        return FULL_SCOPE if self.trigger is None else f"{LOCAL_SCOPE}:{self.trigger}"


FULL_SCOPE, LOCAL_SCOPE = "full", "local"
FULL_REVIEW = ReviewKind()


@dataclass(frozen=True)
class RejectedLesson:
    """A language model's lesson that was not kept: why (a grounding check, the quality gate, a
    duplicate, weaker than the rules' lesson), its text and the gate's detail."""

    reason: str
    lesson: str
    detail: str = ""

    def as_dict(self) -> dict[str, str]:
        return {"reason": self.reason, "lesson": self.lesson} | ({"detail": self.detail} if self.detail else {})


@dataclass(frozen=True)
class LLMLessonFigures:
    """What became of a language model's answer in one review: ``outcome`` is ``ok`` or why the
    whole answer was dropped (invalid_json, off_schema, truncated, timeout); the latency of its
    call(s); the lessons it proposed, those accepted and those rejected; the tokens its calls used
    (metered per tenant, not kept with the review)."""

    outcome: str
    latency_ms: int
    proposed: int = 0
    accepted: int = 0
    rejected: tuple[RejectedLesson, ...] = ()
    tokens: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "outcome": self.outcome, "latency_ms": self.latency_ms, "proposed": self.proposed,
            "accepted": self.accepted, "rejected": [r.as_dict() for r in self.rejected],
        }


@dataclass(frozen=True)
class ReviewSummary:
    """A trajectory's ``review`` record, in each of its states: reviewed (``findings``), skipped,
    one local review (``findings`` and its ``trigger``), failed (``error``...), redriven. Every
    state of the trajectory's record keeps ``local``, the summaries of its local reviews."""

    kind: str | None = None
    findings: dict[str, Any] | None = None  # the reviewer's summary and what distillation made of it
    skipped: str | None = None
    trigger: str | None = None
    error: str | None = None
    attempts: int | None = None
    failed_at: datetime | None = None
    redriven_at: datetime | None = None
    previous: dict[str, Any] | None = None  # the record a redrive replaced, less ``local``
    local: list[dict[str, Any]] | None = None
    llm_lessons: LLMLessonFigures | None = None  # when a language model took part in the review
    credit: dict[str, Any] | None = None  # the lessons served in the run, adopted or ignored (``domain.credit``)

    @staticmethod
    def local_reviews(traj: Trajectory) -> list[dict[str, Any]]:
        reviews: list[dict[str, Any]] = (traj.review or {}).get(LOCAL_SCOPE, [])
        return reviews

    @staticmethod
    def with_local_review(record: dict[str, Any] | None, summary: dict[str, Any]) -> dict[str, Any]:
        """``record`` (a trajectory's ``review``) with one more local review's summary."""
        record = dict(record or {})
        record[LOCAL_SCOPE] = [*record.get(LOCAL_SCOPE, []), summary]
        return record

    @classmethod
    def redriven(cls, traj: Trajectory, at: datetime) -> "ReviewSummary":
        """A failed review sent round again: the failure is kept as ``previous``."""
        previous = {k: v for k, v in (traj.review or {}).items() if k != LOCAL_SCOPE}
        return cls(redriven_at=at, previous=previous, local=cls.local_reviews(traj))

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {**(self.findings or {})}
        for name in ("kind", "skipped", "trigger", "error", "attempts", "credit"):
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        if self.failed_at is not None:
            out["failed_at"] = self.failed_at.isoformat()
        if self.redriven_at is not None:
            out["redriven"] = {"at": self.redriven_at.isoformat(), "previous": self.previous or {}}
        if self.llm_lessons is not None:
            out["llm_lessons"] = self.llm_lessons.as_dict()
        if self.local is not None:
            out[LOCAL_SCOPE] = self.local
        return out


@dataclass
class Event:
    """One step of a trajectory. ``seq`` is the order of arrival, assigned by the store."""

    event_id: str
    type: str
    timestamp: datetime
    content: dict[str, Any] = field(default_factory=dict)
    node_id: str | None = None
    parent_id: str | None = None
    context: dict[str, Any] = field(default_factory=dict)
    seq: int = 0

    @property
    def is_tool_call(self) -> bool:
        return self.type == "tool_call"

    @cached_property
    def tool(self) -> str | None:
        """The tool called; a shell tool's call is named by its command, ``Bash(git push)``
        (``domain.command``)."""
        if not self.is_tool_call:
            return None
        return call_name(self.content.get("tool"), self.content.get("params"))

    @property
    def failed(self) -> bool:
        return self.is_tool_call and self.content.get("status") == "error"

    @property
    def succeeded(self) -> bool:
        return self.is_tool_call and self.content.get("status", "ok") == "ok"

    @property
    def is_negative_feedback(self) -> bool:
        """The user objected: an anomaly during ingest, a reason for a full review, and a lesson."""
        return self.type == "feedback" and self.content.get("sentiment") == "negative"

    @cached_property
    def call_key(self) -> str:
        """The tool and its parameters in one canonical text (keys sorted): equal for the same call.

        Computed once per event (events are not changed once built): ingest's anomaly check reads
        the same cached events, the store's tails, on every append to a trajectory."""
        params = self.content.get("params")
        return f"{self.tool}:{_CANONICAL.encode(params if isinstance(params, dict) else {})}"


@dataclass
class Experience:
    tenant_id: str
    experience_id: str
    situation: str
    action: str
    result: str
    lesson: str
    advice: str
    created_at: datetime
    updated_at: datetime
    renewed_at: datetime
    tags: list[str] = field(default_factory=list)
    task_type: str | None = None
    tools: list[str] = field(default_factory=list)
    agent_id: str | None = None
    user_id: str | None = None
    source: Source = Source.AGENT
    sources: list[str] = field(default_factory=list)
    confidence: float = 0.5
    freshness: float = 1.0
    utility: float = 0.5
    status: ExperienceStatus = ExperienceStatus.ACTIVE
    version: int = 1
    support: int = 1
    fingerprint: str | None = None  # same situation and same fix
    situation_key: str | None = None  # same situation, whatever the fix: lessons that can conflict
    polarity: str = "neutral"
    status_reason: str | None = None
    supersedes: str | None = None  # the experience this one replaced (version chain)
    superseded_by: str | None = None
    # active lessons of the same scope and situation whose advice this (newer, human) one contradicts
    # and did not supersede: recall ranks it above them (``domain.corrections``)
    contradicts: list[str] = field(default_factory=list)
    error_class: str | None = None
    # what a call of its tool must do, as data (``domain.call_rule``): stated by the reviewer that
    # found it, or read from its words when a person or a model wrote it; None: about no call
    rule: CallRule | None = None
    intent: str | None = None
    # the tasks it was learned from, generalized (newest last, at most MAX_EXAMPLES): a lesson is
    # matched against the kind of task it helps with, not only against its one wording
    examples: list[str] = field(default_factory=list)
    # the literals every source had in the same role (salted digest -> placeholder): what the
    # next source must share for the lesson to keep them (``generalize.recurring_literals``)
    literals: dict[str, str] = field(default_factory=dict)
    # literal values every task it was learned from named ("main"): a query that names none of
    # them is less likely to be this situation (see ``scoring.tag_match``)
    anchors: list[str] = field(default_factory=list)
    # credit from outcomes (``domain.credit``): reviewed trajectories that were served the lesson,
    # those that followed it, and how many of each kind ended in success
    served: int = 0
    adopted: int = 0
    adopted_successes: int = 0
    ignored_successes: int = 0
    # the trajectories credited last (newest last, bounded): a review that runs again after a
    # crash between this write and its marker (``ports.RecallLedger``) sees it was done
    credited: list[str] = field(default_factory=list)
    # status changes a reader may want to audit, oldest first: {"at", "event", "from", "reason"}
    history: list[dict[str, Any]] = field(default_factory=list)
    # the store's revision of this copy: bumped by every write, compared by a conditional write
    # (``ports.ExperienceStore.put_if``); 0 for a lesson never stored. Not ``version``, which
    # counts what the lesson learned (merges, supersessions, restores) and readers see.
    revision: int = 0

    @property
    def scope(self) -> Scope:
        return Scope(self.tenant_id, self.agent_id, self.user_id)

    def embedding_text(self) -> str:
        """What recall matches a query against: the situation and what to do about it."""
        return lesson_text(self.situation, self.lesson, self.tools)

    def embedding_texts(self) -> tuple[str, ...]:
        """Every text whose meaning the lesson's vector stands for: the lesson in its situation,
        then each task it was learned from (the vector is their normalised sum, a prototype)."""
        return (self.embedding_text(), *(e for e in self.examples if e))

    def search_text(self) -> str:
        """What lexical search matches: everything that names tools, parameters and errors, and the
        tasks it was learned from; not the example values of one past task (see ``without_examples``)."""
        text = " ".join(p for p in (self.situation, self.lesson, self.advice, self.action, " ".join(self.tools), *self.examples) if p)
        return without_examples(text)


def lesson_text(situation: str, lesson: str, tools: list[str]) -> str:
    """``Experience.embedding_text`` of these fields."""
    named = f" Tools: {', '.join(tools)}." if tools else ""
    return without_examples(f"{situation} {lesson}{named}".strip())


def match_key(value: str | None) -> str | None:
    """How task types, tools, tags and intents compare everywhere (the indexes' masks, the recall
    score): trimmed, case-insensitive; blank is none."""
    return (value or "").strip().lower() or None


def match_keys(values: Iterable[str | None]) -> set[str]:
    return {k for k in map(match_key, values) if k}


@dataclass(slots=True)
class Candidate:
    """What recall ranks a lesson by (``scoring.recall_score``), tells duplicates apart by
    (``recall._distinct``) and re-scores the leading ones on (the text of ``embedding_text``, whose
    kept token vectors late interaction reads): read for each of a recall's candidates, where the
    whole lesson is read only for the handful it returns. ``whole``: the whole lesson, when the
    store read it anyway."""

    tenant_id: str
    experience_id: str
    status: ExperienceStatus
    agent_id: str | None
    user_id: str | None
    tools: list[str]
    tags: list[str]
    task_type: str | None
    intent: str | None
    anchors: list[str]
    freshness: float
    renewed_at: datetime
    utility: float
    confidence: float
    advice: str
    fingerprint: str | None
    situation: str
    lesson: str
    whole: Experience | None = None

    @property
    def scope(self) -> Scope:
        return Scope(self.tenant_id, self.agent_id, self.user_id)

    @classmethod
    def of(cls, exp: Experience, keep_whole: bool = True) -> "Candidate":
        return cls(
            exp.tenant_id, exp.experience_id, exp.status, exp.agent_id, exp.user_id, exp.tools, exp.tags, exp.task_type,
            exp.intent, exp.anchors, exp.freshness, exp.renewed_at, exp.utility, exp.confidence, exp.advice,
            exp.fingerprint, exp.situation, exp.lesson, exp if keep_whole else None,
        )

    def embedding_text(self) -> str:
        return lesson_text(self.situation, self.lesson, self.tools)


@dataclass(frozen=True)
class RecallQuery:
    tenant_id: str
    query: str
    agent_id: str | None = None
    user_id: str | None = None
    task_type: str | None = None
    tools: tuple[str, ...] = ()
    intent: str | None = None
    tags: tuple[str, ...] = ()
    top_k: int = 5
    min_score: float = 0.0


@dataclass(frozen=True)
class Explanation:
    semantic: float
    tag_match: float
    freshness: float
    utility: float
    confidence: float
    lexical: float = 0.0
    matched_tools: tuple[str, ...] = ()
    matched_tags: tuple[str, ...] = ()
    task_type_match: bool | None = None
    matched_anchors: tuple[str, ...] = ()
    corrects: tuple[str, ...] = ()  # served lessons this one contradicts, as a newer human lesson


@dataclass(frozen=True)
class Hit:
    experience: Experience
    score: float
    explanation: Explanation
