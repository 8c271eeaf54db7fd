"""Typed results of the HTTP API v1.

Parsing keeps only the fields named here and ignores the rest, so a newer service that adds
fields does not break an older client; ``raw`` keeps the whole answer for anything else.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

Outcome = Literal["success", "failure", "partial"]
Signal = Literal["adopted", "ignored", "succeeded", "failed"]
ExperienceStatus = Literal["active", "archived", "forgotten"]
TrajectoryStatus = Literal["open", "finalized", "reviewed", "review_failed"]
EventType = Literal["user_input", "llm_reasoning", "tool_call", "state_change", "feedback", "recall"]

# The fields POST /v1/experiences accepts; export/import round-trips exactly these.
WRITABLE_EXPERIENCE_FIELDS = (
    "experience_id", "situation", "action", "result", "lesson", "advice", "tags", "task_type", "tools",
    "agent_id", "user_id", "source", "sources", "confidence",
)  # fmt: skip


def _number(value: Any) -> float | None:
    return None if value is None else float(value)


def parse_time(value: Any) -> datetime | None:
    if not value:
        return None
    return datetime.fromisoformat(str(value).replace("Z", "+00:00"))


@dataclass(frozen=True)
class Health:
    status: str
    backend: str

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Health:
        return cls(status=data["status"], backend=data.get("backend", ""))


@dataclass(frozen=True)
class TenantCreated:
    tenant_id: str
    api_key: str = field(repr=False)  # shown once by the service; kept out of logs and reprs
    name: str | None = None

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TenantCreated:
        return cls(tenant_id=data["tenant_id"], api_key=data["api_key"], name=data.get("name"))


@dataclass(frozen=True)
class Tenant:
    tenant_id: str
    name: str
    created_at: datetime | None
    event_retention_days: int | None = None  # its trajectories keep their events this long (0: for good); None: the default

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Tenant:
        return cls(tenant_id=data["tenant_id"], name=data.get("name", ""), created_at=parse_time(data.get("created_at")),
                   event_retention_days=data.get("event_retention_days"))


def parse_tenants(data: dict[str, Any]) -> list[Tenant]:
    return [Tenant.from_json(t) for t in data.get("tenants", [])]


@dataclass(frozen=True)
class TenantPage:
    tenants: tuple[Tenant, ...]
    cursor: str | None  # pass it back for the next page; None on the last

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TenantPage:
        return cls(tenants=tuple(parse_tenants(data)), cursor=data.get("cursor"))


@dataclass(frozen=True)
class Trajectory:
    trajectory_id: str
    status: TrajectoryStatus
    event_count: int = 0
    experience_ids: tuple[str, ...] = ()
    review: dict[str, Any] | None = None
    agent_id: str | None = None
    goal: str | None = None
    outcome: str | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Trajectory:
        return cls(
            trajectory_id=data["trajectory_id"],
            status=data["status"],
            event_count=data.get("event_count", 0),
            experience_ids=tuple(data.get("experience_ids") or ()),
            review=data.get("review"),
            agent_id=data.get("agent_id"),
            goal=data.get("goal"),
            outcome=data.get("outcome"),
            raw=data,
        )

    @property
    def done(self) -> bool:
        """True once the review ran (or gave up): nothing about this trajectory changes any more."""
        return self.status in ("reviewed", "review_failed")


@dataclass(frozen=True)
class EventsAccepted:
    accepted: int
    duplicates: int

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> EventsAccepted:
        return cls(accepted=data["accepted"], duplicates=data["duplicates"])


@dataclass(frozen=True)
class Experience:
    experience_id: str
    situation: str
    lesson: str
    advice: str
    action: str = ""
    result: str = ""
    tags: tuple[str, ...] = ()
    task_type: str | None = None
    tools: tuple[str, ...] = ()
    agent_id: str | None = None
    user_id: str | None = None
    source: str = "human"
    sources: tuple[str, ...] = ()
    confidence: float = 0.0
    freshness: float = 0.0
    utility: float = 0.0
    status: ExperienceStatus = "active"
    status_reason: str | None = None
    version: int = 1
    created_at: datetime | None = None
    updated_at: datetime | None = None
    # credit from outcomes: trajectories served it, those that followed it, and the success rates
    served: int = 0
    adopted: int = 0
    success_when_adopted: float | None = None
    success_when_ignored: float | None = None
    lift: float | None = None
    # the version chain: the lesson this one replaced, the one that replaced it
    supersedes: str | None = None
    superseded_by: str | None = None
    # in the answer to a write only: active lessons of the same scope and situation whose advice
    # this one contradicts and does not supersede (probable corrections; write again with
    # supersedes naming them, or "auto", to replace them)
    correction_of: tuple[str, ...] = ()
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Experience:
        return cls(
            experience_id=data["experience_id"],
            situation=data.get("situation", ""),
            lesson=data.get("lesson", ""),
            advice=data.get("advice", ""),
            action=data.get("action", ""),
            result=data.get("result", ""),
            tags=tuple(data.get("tags") or ()),
            task_type=data.get("task_type"),
            tools=tuple(data.get("tools") or ()),
            agent_id=data.get("agent_id"),
            user_id=data.get("user_id"),
            source=data.get("source", "human"),
            sources=tuple(data.get("sources") or ()),
            confidence=float(data.get("confidence", 0.0)),
            freshness=float(data.get("freshness", 0.0)),
            utility=float(data.get("utility", 0.0)),
            status=data.get("status", "active"),
            status_reason=data.get("status_reason"),
            version=int(data.get("version", 1)),
            created_at=parse_time(data.get("created_at")),
            updated_at=parse_time(data.get("updated_at")),
            served=int(data.get("served") or 0),
            adopted=int(data.get("adopted") or 0),
            success_when_adopted=_number(data.get("success_when_adopted")),
            success_when_ignored=_number(data.get("success_when_ignored")),
            lift=_number(data.get("lift")),
            supersedes=data.get("supersedes"),
            superseded_by=data.get("superseded_by"),
            correction_of=tuple(data.get("correction_of") or ()),
            raw=data,
        )

    def writable(self) -> dict[str, Any]:
        """The fields POST /v1/experiences accepts, as JSON: what an export line holds."""
        return {k: self.raw[k] for k in WRITABLE_EXPERIENCE_FIELDS if self.raw.get(k) is not None}


@dataclass(frozen=True)
class ExperiencePage:
    items: tuple[Experience, ...]
    cursor: str | None

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ExperiencePage:
        return cls(items=tuple(Experience.from_json(e) for e in data.get("items", [])), cursor=data.get("cursor"))


@dataclass(frozen=True)
class Explanation:
    semantic: float = 0.0
    tag_match: float = 0.0
    freshness: float = 0.0
    utility: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Explanation:
        known = ("semantic", "tag_match", "freshness", "utility")
        return cls(
            **{k: float(data.get(k, 0.0)) for k in known},
            extra={k: v for k, v in data.items() if k not in known},
        )


@dataclass(frozen=True)
class Hit:
    experience: Experience
    score: float
    explanation: Explanation

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Hit:
        return cls(
            experience=Experience.from_json(data["experience"]),
            score=float(data["score"]),
            explanation=Explanation.from_json(data.get("explanation") or {}),
        )


@dataclass(frozen=True)
class RecallResult:
    hits: tuple[Hit, ...]
    advice: str
    """The hits rendered as one block for the agent's prompt; empty when nothing was recalled."""
    recall_id: str = ""
    """Attach it to the running trajectory (``TrajectoryRecorder.attach_recall``) so its review
    credits these lessons."""
    hidden_by_scope: dict[str, dict[str, int]] = field(default_factory=dict)
    """When there is no hit: how many lessons would have matched but belong to another agent or
    user, e.g. ``{"agent_id": {"weather-bot": 2}}`` (recall with that ``agent_id`` to see them)."""

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RecallResult:
        hidden = data.get("hidden_by_scope") or {}
        return cls(hits=tuple(Hit.from_json(h) for h in data.get("hits", [])), advice=data.get("advice") or "",
                   recall_id=data.get("recall_id") or "",
                   hidden_by_scope={str(k): {str(a): int(n) for a, n in v.items()} for k, v in hidden.items()})  # fmt: skip


@dataclass(frozen=True)
class AdviseWarning:
    experience_id: str
    message: str
    """What about this call broke the lesson."""
    fix: str
    """What worked instead (the lesson's advice)."""

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> AdviseWarning:
        return cls(experience_id=data["experience_id"], message=data.get("message", ""), fix=data.get("fix", ""))


@dataclass(frozen=True)
class AdviseResult:
    """What past runs say about one tool call, before it is made."""

    recall_id: str
    warnings: tuple[AdviseWarning, ...]
    hits: tuple[Hit, ...]
    advice: str
    """The block to show the agent; empty when nothing applies."""

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> AdviseResult:
        return cls(recall_id=data.get("recall_id") or "",
                   warnings=tuple(AdviseWarning.from_json(w) for w in data.get("warnings") or ()),
                   hits=tuple(Hit.from_json(h) for h in data.get("hits") or ()), advice=data.get("advice") or "")  # fmt: skip


@dataclass(frozen=True)
class DecayReport:
    decayed: int
    archived: int
    archived_ids: tuple[str, ...] = ()  # archived, or in a dry run to be archived (the first 1,000)
    dry_run: bool = False

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> DecayReport:
        return cls(
            decayed=data["decayed"], archived=data["archived"],
            archived_ids=tuple(data.get("archived_ids") or ()), dry_run=bool(data.get("dry_run", False)),
        )


@dataclass(frozen=True)
class KeyRotated:
    tenant_id: str
    api_key: str = field(repr=False)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> KeyRotated:
        return cls(tenant_id=data["tenant_id"], api_key=data["api_key"])


@dataclass(frozen=True)
class ReindexReport:
    reindexed: int
    cursor: str | None = None  # the next batch's; None once every lesson is indexed again

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ReindexReport:
        return cls(reindexed=data["reindexed"], cursor=data.get("cursor"))


@dataclass(frozen=True)
class Stats:
    experiences: dict[str, int]
    trajectories: dict[str, int]
    freshness_histogram: tuple[tuple[str, int], ...]
    as_of: datetime | None = None  # when the pass that counted these started
    complete: bool = True  # False while the first pass over a large tenant is under way: ask again

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Stats:
        return cls(
            experiences=dict(data.get("experiences") or {}),
            trajectories=dict(data.get("trajectories") or {}),
            freshness_histogram=tuple((b["bucket"], int(b["count"])) for b in data.get("freshness_histogram") or ()),
            as_of=parse_time(data.get("as_of")),
            complete=bool(data.get("complete", True)),
        )


@dataclass(frozen=True)
class FailedReview:
    """A review the service gave up on after its last attempt (admin: ``failed_reviews``)."""

    tenant_id: str
    trajectory_id: str
    kind: str
    attempts: int
    error: str | None = None
    failed_at: datetime | None = None

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> FailedReview:
        return cls(tenant_id=data["tenant_id"], trajectory_id=data["trajectory_id"], kind=data["kind"],
                   attempts=int(data["attempts"]), error=data.get("error"), failed_at=parse_time(data.get("failed_at")))  # fmt: skip


def parse_failed_reviews(data: dict[str, Any]) -> list[FailedReview]:
    return [FailedReview.from_json(f) for f in data.get("failed") or ()]


def parse_redriven(data: dict[str, Any]) -> int:
    return int(data["redriven"])
