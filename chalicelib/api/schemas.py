"""Request and response models of HTTP API v1. They validate input and generate /v1/openapi.json."""

import json
from datetime import datetime, timezone
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, WithJsonSchema, model_validator
from pydantic_core import InitErrorDetails, PydanticCustomError

Id = Annotated[str, Field(min_length=1, max_length=200, pattern=r"^[A-Za-z0-9][A-Za-z0-9._:@/+=-]*$")]
Name = Annotated[str, Field(min_length=1, max_length=128)]
Text = Annotated[str, Field(max_length=8000)]
NameList = Annotated[list[Name], Field(max_length=100)]
# Tool names reach lesson text and the advice injected into prompts: a safe character set, one
# line, no markup (letters, digits, _ . : / @ + -, single inner spaces).
ToolName = Annotated[str, Field(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9_.:/@+-]+( [A-Za-z0-9_.:/@+-]+)*$")]
ToolList = Annotated[list[ToolName], Field(max_length=100)]
MAX_METADATA_BYTES = 16_384
EPOCH_MS_MAX = 253402300800000  # 10000-01-01T00:00:00Z


def _to_utc(value: Any) -> Any:
    """Requests may send ISO-8601 or epoch milliseconds; naive times are taken as UTC."""
    if isinstance(value, bool):
        raise ValueError("expected ISO-8601 text or epoch milliseconds")
    if isinstance(value, (int, float)):
        if not 0 <= value < EPOCH_MS_MAX:
            raise ValueError("epoch milliseconds out of range")
        return datetime.fromtimestamp(value / 1000.0, tz=timezone.utc)
    return value


def _aware(value: datetime) -> datetime:
    if value.tzinfo is timezone.utc:  # epoch milliseconds, and most ISO texts: already UTC
        return value
    try:
        return value.replace(tzinfo=timezone.utc) if value.tzinfo is None else value.astimezone(timezone.utc)
    except OverflowError as exc:  # 0001-01-01T00:00:00+01:00 is before year 1 in UTC
        raise ValueError("time out of range once converted to UTC") from exc


Time = Annotated[
    datetime,
    BeforeValidator(_to_utc),
    AfterValidator(_aware),
    WithJsonSchema({"anyOf": [{"type": "string", "format": "date-time"},
                              {"type": "number", "minimum": 0, "exclusiveMaximum": EPOCH_MS_MAX,
                               "description": "epoch milliseconds"}]}, mode="validation"),
]


def _small_json(value: dict[str, Any]) -> dict[str, Any]:
    if len(json.dumps(value, default=str)) > MAX_METADATA_BYTES:
        raise ValueError(f"must serialize to at most {MAX_METADATA_BYTES} bytes")
    return value


SmallObject = Annotated[dict[str, Any], AfterValidator(_small_json)]


class Model(BaseModel):
    # Validators are built on first use, not at import: a Lambda cold start pays only for the
    # models its first request needs.
    model_config = ConfigDict(defer_build=True)


class Strict(Model):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True, defer_build=True)


# --- tenants ---------------------------------------------------------------------------------


class TenantIn(Strict):
    name: Name


class TenantOut(Model):
    tenant_id: str
    name: str
    api_key: str = Field(description="Shown once; only its hash is stored.")


class TenantSummary(Model):
    tenant_id: str
    name: str
    created_at: datetime
    event_retention_days: int | None = Field(
        default=None, description="Days its trajectories keep their events (0: for good); null: the deployment's default")


class RetentionIn(Strict):
    event_retention_days: Annotated[int, Field(strict=True, ge=0, le=3650)] | None = Field(
        description="Days the events of the trajectories it starts from now on are kept (0: for good); null: the deployment's"
                    " default. Trajectories, their reviews and lessons are kept whatever it says")


class TenantList(Model):
    tenants: list[TenantSummary] = Field(description="A page of tenants, oldest first")
    cursor: str | None = Field(default=None, description="The next page's cursor; null after the last page")


class TenantsQuery(Strict):
    limit: Annotated[int, Field(ge=1, le=1000)] = Field(default=100, description="Tenants of the page")
    cursor: Annotated[str, Field(max_length=1000)] | None = Field(
        default=None, description="The cursor of the previous page's answer; one the server did not issue answers 422")


class KeyRotateIn(Strict):
    revoke_old: Annotated[bool, Field(strict=True)] = True


class KeyOut(Model):
    tenant_id: str
    api_key: str = Field(description="Shown once; only its hash is stored.")


# --- trajectories ----------------------------------------------------------------------------


class TrajectoryIn(Strict):
    agent_id: Id
    goal: Annotated[str, Field(min_length=1, max_length=4000)]
    user_id: Id | None = None
    trajectory_id: Id | None = Field(default=None, description="Client-chosen id; a repeat is idempotent.")
    task_type: Name | None = Field(default=None, description="e.g. query | operation | analysis")
    tools: ToolList = []
    intent: Annotated[str, Field(max_length=500)] | None = None
    tags: NameList = []
    metadata: SmallObject = {}


class EventContext(Model):
    model_config = ConfigDict(extra="allow", defer_build=True)
    goal: Text | None = None
    subtask: Text | None = None
    last_user_input: Text | None = None


def _no_error(value: Any) -> bool:
    """``null``, ``false`` and an empty text, object or list say "no error" (tools write all four)."""
    return value is None or value is False or (isinstance(value, (str, dict, list)) and not (value.strip() if isinstance(value, str) else value))


class ToolCallContent(Model):
    """A call of one of the agent's tools and its outcome. A call with an `error` failed: its status is
    "error" unless given, and `status: "ok"` beside an `error` is refused (422), as is any field not listed
    here."""

    model_config = ConfigDict(extra="forbid", defer_build=True)
    tool: ToolName = Field(description="The tool's name, as the agent knows it")
    params: dict[str, Any] = Field(default={}, description="The arguments the agent called it with")
    status: Literal["ok", "error"] | None = Field(
        default=None, description='Default: "error" when `error` is given, else "ok"; "ok" beside an `error` is 422')
    result: Any = Field(default=None, description="What the tool returned")
    error: Any = Field(default=None, description='What went wrong; null, false, "", {} and [] mean no error')
    available_tools: ToolList = Field(default=[], description="The tools the agent could have called instead")
    duration_ms: Annotated[float, Field(ge=0)] | None = Field(default=None, description="How long the call took")

    @model_validator(mode="after")
    def _status_follows_error(self) -> "ToolCallContent":
        if _no_error(self.error):
            self.__dict__["error"] = None
        if self.status is None:
            self.__dict__["status"] = "ok" if self.error is None else "error"
        elif self.status == "ok" and self.error is not None:
            raise PydanticCustomError(
                "status_contradicts_error",
                '`status` is "ok" but `error` is given: a call with an error failed. Send status "error" with the '
                'error, or leave status out (an error then means "error"), or leave error out if the call succeeded')
        return self


class TextContent(Model):
    """What the user said (`user_input`) or the model thought (`llm_reasoning`)."""

    model_config = ConfigDict(extra="allow", defer_build=True)
    text: str


class FeedbackContent(Model):
    """What the user said about the agent's work; a negative sentiment is an objection."""

    model_config = ConfigDict(extra="allow", defer_build=True)
    text: str = ""
    sentiment: Literal["positive", "negative"] | None = None


class StateChangeContent(Model):
    """Something in the agent's world changed."""

    model_config = ConfigDict(extra="allow", defer_build=True)
    key: Name = Field(description="What changed")
    value: Any = Field(default=None, description="Its new value")


class RecallContent(Model):
    """Lessons were shown to the agent at this point; the review credits them with the outcome."""

    model_config = ConfigDict(extra="allow", defer_build=True)
    recall_id: Id = Field(description="The recall_id of a recall or advise answer shown to the agent at this point.")


CONTENT_MODELS: dict[str, type[BaseModel]] = {
    "user_input": TextContent,
    "llm_reasoning": TextContent,
    "tool_call": ToolCallContent,
    "feedback": FeedbackContent,
    "state_change": StateChangeContent,
    "recall": RecallContent,
}


def _content_by_type(schema: dict[str, Any]) -> None:
    """The document says what the validator below checks: the content's shape follows the type."""
    variants = []
    for type_, model in CONTENT_MODELS.items():
        content = model.model_json_schema()
        variant: dict[str, Any] = {"properties": {"type": {"const": type_}, "content": content}}
        if content.get("required"):
            variant["required"] = ["content"]
        variants.append(variant)
    schema["oneOf"] = variants


def _under_content(exc: ValidationError, model: type[BaseModel]) -> ValidationError:
    """The content's errors located under ``content`` (``events.0.content.tool``, not ``events.0.tool``);
    an unknown field's error names the fields the content has."""
    fields = ", ".join(model.model_fields)
    details: list[InitErrorDetails] = []
    for e in exc.errors(include_url=False):
        loc = ("content", *e["loc"])
        if e["type"] == "extra_forbidden":
            error = PydanticCustomError("unknown_field", f"unknown field (this content has {fields})")
            details.append({"type": error, "loc": loc, "input": e["input"]})
        else:
            details.append({"type": PydanticCustomError(e["type"], e["msg"]), "loc": loc, "input": e["input"]})
    return ValidationError.from_exception_data(exc.title, details)


class EventIn(Strict):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True, defer_build=True, json_schema_extra=_content_by_type)
    type: Literal["user_input", "llm_reasoning", "tool_call", "state_change", "feedback", "recall"]
    event_id: Id = Field(description="Client-chosen and required: an event already stored under this id is counted as a "
                                     "duplicate, not stored again, so a retried append is harmless.")
    timestamp: Time | None = None
    node_id: Id | None = None
    parent_id: Id | None = Field(default=None, description="Decision-graph parent; default: the previous event.")
    context: EventContext = Field(default_factory=EventContext)  # a factory: an instance here would build the model at import
    content: dict[str, Any] = {}

    @model_validator(mode="after")
    def _content_matches_type(self) -> "EventIn":
        # model_validate(...).model_dump(exclude_none=True), without their wrappers: this runs for
        # every event of every append
        model = CONTENT_MODELS[self.type]
        try:
            valid = model.__pydantic_validator__.validate_python(self.content)
        except ValidationError as exc:
            raise _under_content(exc, model) from None
        content = model.__pydantic_serializer__.to_python(valid, exclude_none=True)
        # what BaseModel.__setattr__ does for a field (no validate_assignment here), without its dispatch
        self.__dict__["content"] = content
        self.__pydantic_fields_set__.add("content")
        return self


class EventsIn(Strict):
    events: Annotated[list[EventIn], Field(min_length=1)]


class RecentEventIn(EventIn):
    """An event that advise reads as context and does not store: it needs no id."""

    # widened from the stored event's: mypy sees a narrower subclass field, pydantic a field of its own
    event_id: Id | None = Field(default=None, description="Optional: advise stores nothing, so there is no repeat to detect.")  # type: ignore[assignment]


class EventsOut(Model):
    accepted: int
    duplicates: int


class FinalizeIn(Strict):
    outcome: Literal["success", "failure", "partial"]
    feedback: Annotated[str, Field(max_length=4000)] | None = None


class TrajectoryOut(Model):
    trajectory_id: str
    status: Literal["open", "finalized", "reviewed", "review_failed"]
    agent_id: str
    user_id: str | None = None
    goal: str
    task_type: str | None = None
    tools: list[str] = []
    intent: str | None = None
    tags: list[str] = []
    metadata: dict[str, Any] = {}
    event_count: int
    outcome: str | None = None
    experience_ids: list[str] = []
    review: dict[str, Any] | None = None
    events_expire_at: datetime | None = Field(default=None, description="When its events expire (event retention); null: kept")
    events_expired: bool = Field(default=False, description="Its events expired: the trajectory, its review and lessons stay,"
                                                            " its events page is empty")
    created_at: datetime
    updated_at: datetime


class EventOut(Model):
    event_id: str
    seq: int = Field(description="Order of arrival, from 1")
    type: str
    timestamp: datetime
    node_id: str | None = None
    parent_id: str | None = Field(default=None, description="As recorded")
    context: dict[str, Any] = {}
    content: dict[str, Any] = {}
    parent: str | None = Field(description="The event_id of its parent in the decision graph (parent_id resolved; "
                               "default: the event before it); null for the root")
    label: Literal["effective", "recovery", "failed", "repeated", "objected"] | None = Field(
        description="What the call did for the outcome (tool calls only): effective, recovery (fixed an earlier "
                    "failure), failed, repeated (the same call again), objected (the user objected to it)")
    contribution: float = Field(description="The value of the calls below it, propagated up the graph")


class ContrastOut(Model):
    failed: str = Field(description="event_id of the call that failed")
    worked: str = Field(description="event_id of the call that worked instead at the same decision point")
    kind: Literal["param", "order", "swap"]
    changed_params: list[str] = []
    prerequisite: str | None = Field(default=None, description="The tool called first, for kind order")


class TrajectoryEventsOut(Model):
    trajectory_id: str
    events: list[EventOut]
    contrasts: list[ContrastOut] = Field(description="Each decision point of the page where one choice failed and another worked")
    cursor: str | None = Field(default=None, description="The next page's cursor; null after the last page")
    events_expired: bool = Field(default=False, description="Its events expired (event retention): none are listed")


class EventsQuery(Strict):
    limit: Annotated[int, Field(ge=1, le=1000)] = Field(
        default=500, description="Events of the page; its attribution is computed over them")
    cursor: Annotated[str, Field(max_length=1000)] | None = Field(
        default=None, description="The cursor of the previous page; one the server did not issue answers 422")


# --- experiences -----------------------------------------------------------------------------


class ExperienceIn(Strict):
    model_config = ConfigDict(
        extra="forbid", str_strip_whitespace=True, defer_build=True,
        json_schema_extra={"anyOf": [{"required": [f], "properties": {f: {"pattern": r"\S"}}} for f in ("lesson", "advice")]},
    )
    situation: Annotated[str, Field(min_length=1, max_length=4000)]
    lesson: Annotated[str, Field(max_length=4000)] = ""
    advice: Annotated[str, Field(max_length=4000)] = ""
    action: Annotated[str, Field(max_length=4000)] = ""
    result: Annotated[str, Field(max_length=4000)] = ""
    experience_id: Id | None = Field(default=None, description="Client-chosen id; a repeat is idempotent.")
    tags: NameList = []
    task_type: Name | None = None
    tools: ToolList = []
    agent_id: Id | None = None
    user_id: Id | None = None
    source: Literal["human", "agent", "simulation"] = "human"
    sources: Annotated[list[Id], Field(max_length=100)] = []
    confidence: Annotated[float, Field(ge=0, le=1, strict=True)] | None = None
    supersedes: Annotated[list[Id], Field(min_length=1, max_length=20)] | Literal["auto"] | None = Field(
        default=None,
        description="Lessons this one replaces: ids in the same tenant and scope (agent_id, user_id), archived and "
        "chained to it in one write (another scope's or an unknown id: 404; a forgotten one: 409), or \"auto\" for the "
        "probable corrections the answer would name in correction_of.",
    )

    @model_validator(mode="after")
    def _says_something(self) -> "ExperienceIn":
        if not (self.lesson or self.advice):
            raise ValueError("give a lesson or advice (or both)")
        return self


class RuleArgumentOut(Model):
    kind: Literal["missing_argument", "forbidden_argument", "value", "value_shape", "structure", "keys", "named",
                  "prefix", "without_characters", "one_of", "same_length", "from_result"] = Field(
        description="missing_argument: must be given; forbidden_argument: must be left out; value: must be given, "
                    "of `shape`; value_shape: when given, of `shape` and not of `avoided`; structure: must be given, "
                    "holding `keys`; keys: a structure given holds `keys`; named: changed as `words` say, not checked; "
                    "prefix: when given, starts with `shape`; without_characters: when given, holds none of the "
                    "characters of `avoided`; one_of: when given, one of `keys`; same_length: when given, as many "
                    "items as the argument `other`; from_result: when given, held by what the tool `other` returned")
    name: str = Field(description="The argument")
    shape: str | None = None
    example: str | None = None
    avoided: str | None = None
    avoided_example: str | None = None
    keys: list[str] = []
    words: str | None = None
    other: str | None = None


class CallRuleOut(Model):
    kind: Literal["arguments", "call_first", "use_instead", "do_not_retry", "objected", "once_per", "no_fix"]
    tool: str = Field(description="The tool whose calls the rule is about")
    arguments: list[RuleArgumentOut] = Field(default=[], description="arguments: what a call must do with each; "
                                             "call_first: what to pass on from the first tool")
    other_tool: str | None = Field(default=None, description="call_first: the tool to call first; use_instead: the one to use")
    first_arguments: list[RuleArgumentOut] = Field(default=[], description="call_first: how to call the first tool")
    alternatives: list[str] = Field(default=[], description="call_first: other tools, any of which does as well")
    error: str | None = Field(default=None, description="The error the rule is about, as the lesson quotes it")


class ExperienceOut(Model):
    experience_id: str
    situation: str
    action: str
    result: str
    lesson: str
    advice: str
    tags: list[str]
    task_type: str | None
    tools: list[str]
    agent_id: str | None
    user_id: str | None
    source: Literal["human", "agent", "simulation"]
    sources: list[str]
    confidence: float
    freshness: float
    utility: float
    status: Literal["active", "archived", "forgotten"]
    status_reason: str | None = None
    support: int
    version: int
    supersedes: str | None = Field(default=None, description="The lesson this one replaced (its version chain)")
    superseded_by: str | None = Field(default=None, description="The lesson that replaced this one")
    created_at: datetime
    updated_at: datetime
    renewed_at: datetime | None = Field(default=None, description="Last written or used: freshness halves every "
                                        "half-life since then")
    served: int = Field(default=0, description="Reviewed trajectories that were served this lesson by a recall or advise "
                        "answer they attached (a `recall` event).")
    adopted: int = Field(default=0, description="Of those, the ones whose next actions followed it.")
    success_when_adopted: float | None = Field(default=None, description="Share of the adopting trajectories that "
                                               "succeeded; null before any adopted it.")
    success_when_ignored: float | None = Field(default=None, description="Share of the trajectories served it but not "
                                               "following it that succeeded; null before any ignored it.")
    lift: float | None = Field(default=None, description="success_when_adopted - success_when_ignored; null until both exist.")
    history: list[dict[str, Any]] = Field(default=[], description="Status changes worth auditing (restores), oldest first.")
    rule: CallRuleOut | None = Field(default=None, description="What a call of its tool must do, as advise checks it: "
                                     "stated by the reviewer that found it, or read from the words of a lesson a person or "
                                     "a model wrote; null when it is about no call in particular.")


class ExperienceWritten(ExperienceOut):
    correction_of: list[str] = Field(default=[], description="Active lessons of the same scope and situation whose "
                                     "advice this one contradicts and that it does not supersede: probable corrections. "
                                     "Write it again with supersedes naming them (or \"auto\") to replace them.")


class ExperienceList(Model):
    items: list[ExperienceOut]
    cursor: str | None = Field(description="Pass as ?cursor= for the next page; null on the last page.")


class ListQuery(Strict):
    agent_id: Id | None = None
    status: Literal["active", "archived", "forgotten"] | None = None
    limit: Annotated[int, Field(ge=1, le=200)] = 50
    cursor: Annotated[str, Field(max_length=1000)] | None = Field(
        default=None, description="The cursor of the previous page; one the server did not issue answers 422")


class ForgetIn(Strict):
    reason: Annotated[str, Field(max_length=1000)] | None = None


class FeedbackIn(Strict):
    signal: Literal["adopted", "ignored", "succeeded", "failed"]


# --- recall ----------------------------------------------------------------------------------


class RecallIn(Strict):
    query: Annotated[str, Field(min_length=1, max_length=4000)]
    agent_id: Id | None = None
    user_id: Id | None = None
    task_type: Name | None = None
    tools: ToolList = []
    intent: Annotated[str, Field(max_length=500)] | None = None
    tags: NameList = []
    top_k: Annotated[int, Field(ge=1, le=50, strict=True)] = 5
    min_score: Annotated[float, Field(ge=0, le=1, strict=True)] = 0.0


class ExplanationOut(Model):
    semantic: float
    lexical: float
    tag_match: float
    freshness: float
    utility: float
    confidence: float
    matched_tools: list[str]
    matched_tags: list[str]
    task_type_match: bool | None
    matched_anchors: list[str] = Field(default=[], description="Literal values every task the lesson was learned "
                                       "from named (e.g. `main`) that the query names too; missing ones lower tag_match.")
    corrects: list[str] = Field(default=[], description="Lessons served in this answer that this newer human lesson "
                                "contradicts (same scope and situation, other advice): it is ranked above them.")


class HitOut(Model):
    experience: ExperienceOut
    score: float
    explanation: ExplanationOut


class RecallOut(Model):
    recall_id: str = Field(description="Attach it to the running trajectory as a `recall` event: its review then "
                           "credits the lessons served here.")
    hits: list[HitOut]
    advice: str = Field(description="The hits rendered as one block to place in the agent's prompt.")
    advice_placement: str = Field(description="Where the block belongs: after_tools (after the tool descriptions), "
                                  "system_start, system_end or before_user.")
    hidden_by_scope: dict[str, dict[str, int]] = Field(
        default={}, description="Filled only when there is no hit: how many of the tenant's lessons would have matched "
        "but belong to another agent or user, by scope field and value, e.g. {\"agent_id\": {\"weather-bot\": 2}} (pass "
        "that agent_id to see them). Counts only; a lesson hidden by both its agent and its user counts under both.")
    degraded: Literal["lexical_only"] | None = Field(
        default=None, description="Absent or null for a full answer. `lexical_only`: the query could not be embedded "
        "(the embedding service failed or timed out), so the lessons were ranked by BM25 (the words they share with the "
        "query) and the other parts of the score, without semantic similarity.")


class AdviseIn(Strict):
    tool: ToolName = Field(description="The tool the agent is about to call.")
    params: SmallObject = Field(default={}, description="The arguments it is about to pass.")
    goal: Annotated[str, Field(max_length=4000)] | None = None
    agent_id: Id | None = None
    user_id: Id | None = None
    trajectory_id: Id | None = Field(default=None, description="The running trajectory; its last events stand in for "
                                     "recent_events when none are sent.")
    recent_events: Annotated[list[RecentEventIn], Field(max_length=20)] = Field(
        default=[], description="What the agent did just before, oldest first (at most 20).")
    top_k: Annotated[int, Field(ge=1, le=20, strict=True)] = 5


class AdviseWarningOut(Model):
    experience_id: str
    message: str = Field(description="What about this call broke the lesson's checks.")
    fix: str = Field(description="The lesson's advice: what worked instead.")


class AdviseOut(Model):
    recall_id: str = Field(description="Attach it to the running trajectory as a `recall` event.")
    warnings: list[AdviseWarningOut]
    hits: list[HitOut]
    advice: str = Field(description="The hits rendered as one block (warnings flagged); empty when nothing applies.")


# --- maintenance and misc --------------------------------------------------------------------


class DecayIn(Strict):
    as_of: Time | None = Field(default=None, description="Decay as of this time: at most 1 day before now, 366 days after")
    tenant_id: Id | None = Field(default=None, description="Only this tenant's lessons (default: every tenant's)")
    dry_run: Annotated[bool, Field(strict=True)] = Field(default=False, description="Write nothing; answer what would be decayed and archived")


class DecayOut(Model):
    decayed: int = Field(description="Active lessons whose freshness fell since it was last written (it is derived on every read, never written by decay)")
    archived: int
    archived_ids: list[str] = Field(description="The lessons archived (or, in a dry run, that would be), the first 1,000")
    dry_run: bool
    examined: int = Field(description="Active lessons read")
    written: int = Field(description="Lessons written: one conditional write per archive, nothing else")
    conflicts: int = Field(description="Archives not made because the lesson changed since it was read (the next decay decides again)")
    events_purged: int = Field(default=0, description="Events past their retention deleted (embedded backend; DynamoDB's TTL"
                                                      " deletes them on aws: 0)")


class ReindexIn(Strict):
    limit: Annotated[int, Field(ge=1, le=200)] = Field(
        default=50, description="Lessons of the batch, each embedded and indexed again; the request costs tokens by it")
    cursor: Annotated[str, Field(max_length=1000)] | None = Field(
        default=None, description="The cursor of the previous batch; one the server did not issue answers 422")


class ReindexOut(Model):
    reindexed: int
    cursor: str | None = Field(default=None, description="The next batch's cursor; null once every lesson is indexed again")


class FailedReviewsQuery(Strict):
    tenant_id: Id | None = Field(default=None, description="Only this tenant's")
    limit: Annotated[int, Field(ge=1, le=1000)] = 100


class FailedReviewOut(Model):
    tenant_id: str
    trajectory_id: str
    kind: str = Field(description="full, or local:<event_id> for the review of an ingest anomaly")
    attempts: int
    error: str | None = None
    failed_at: datetime | None = None


class FailedReviewList(Model):
    failed: list[FailedReviewOut]


class RedriveIn(Strict):
    """Without tenant_id nor trajectory_ids every failed review is sent round again."""

    tenant_id: Id | None = None
    trajectory_ids: Annotated[list[Id], Field(max_length=1000)] | None = None


class RedriveOut(Model):
    redriven: int


class HistogramBucket(Model):
    bucket: str
    count: int


class DecayPolicyOut(Model):
    half_life_days: float
    archive_below: float = Field(description="A lesson whose keep score falls below this is archived")
    min_age_days: float = Field(description="Nothing younger is archived by decay")


class StatsOut(Model):
    experiences: dict[str, int]
    trajectories: dict[str, int]
    freshness_histogram: list[HistogramBucket]
    decay: DecayPolicyOut | None = Field(default=None, description="The policy freshness and archiving follow")
    as_of: datetime | None = Field(default=None, description="When the pass that counted these started (a tenant counted"
                                                             " over several requests answers its last complete pass)")
    complete: bool = Field(default=True, description="False while the first pass over a large tenant is under way: the"
                                                      " counts cover part of it; ask again")


class AgentOut(Model):
    agent_id: str
    active_lessons: int = Field(description="Active lessons that belong to this agent (seen by a recall with its agent_id)")


class AgentList(Model):
    agents: list[AgentOut] = Field(description="The agents the tenant's active lessons belong to, most lessons first")
    shared_lessons: int = Field(description="Active lessons of no agent, seen by every recall")


class HealthOut(Model):
    status: Literal["ok"]
    backend: str


class ErrorBody(Model):
    code: str
    message: str
    details: Any = None


class ErrorOut(Model):
    error: ErrorBody


def validate_trace(draft: Any) -> None:
    """A trace's trajectory and events hold to the trajectory routes' limits (InvalidInput if not)."""
    from .http import validate

    validate(TrajectoryIn, {"agent_id": draft.agent_id, "goal": draft.goal, "user_id": draft.user_id,
                            "trajectory_id": draft.trajectory_id, "task_type": draft.task_type, "tools": draft.tools[:100]})
    if draft.events:  # in one call, as the events route validates its body
        validate(EventsIn, {"events": draft.events})
