"""An agent's OpenTelemetry trace as a trajectory: which span is the task, which are its tool calls
and model steps, and how the trace ends.

Spans arrive decoded (``Span``: ids in hex, attribute values as plain Python values) from
``api.otlp``. They follow the GenAI semantic conventions (``gen_ai.operation.name`` =
``invoke_agent`` / ``execute_tool`` / ``chat``...) or OpenInference's (``openinference.span.kind`` =
``AGENT`` / ``TOOL`` / ``LLM``). What the service takes from them, in order of precedence:

- trajectory id: the attribute ``hindsight.trajectory_id`` (on any span of the trace, or the
  resource), else the trace id (32 hex characters);
- agent id: ``hindsight.agent_id``, ``gen_ai.agent.id``, ``gen_ai.agent.name``, the resource's
  ``service.name``, else ``otel-agent``; user id: ``hindsight.user_id``, ``user.id``, ``enduser.id``;
- goal: ``hindsight.goal``, the first user message of ``gen_ai.input.messages``, OpenInference's
  ``input.value`` of the agent span, else the agent span's name;
- a tool call per tool span: the tool from ``gen_ai.tool.name`` (``tool.name``), its arguments from
  ``gen_ai.tool.call.arguments`` (``input.value``), its result from ``gen_ai.tool.call.result``
  (``output.value``); failed when the span's status is ERROR, the error being the status message,
  the span's ``exception`` event, or ``error.type``;
- a reasoning step per model span whose output was recorded (``gen_ai.output.messages``,
  ``output.value``); none where content capture is off;
- the decision graph: each event's parent is its parent span's event, where that span is one;
- the end: the trace's root span (no parent) finalizes it, with ``hindsight.outcome`` if set, else
  ``failure`` when its status is ERROR and ``success`` otherwise. A trace whose root never arrives
  is finalized after an idle timeout (``services.otlp``) with ``hindsight.outcome`` if a span
  stated it, else ``partial`` (``idle_outcome``).

Event ids derive from span ids, so a span sent twice, or in several batches, is stored once.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Iterable

STATUS_ERROR = 2  # opentelemetry.proto.trace.v1.Status.STATUS_CODE_ERROR
DEFAULT_AGENT = "otel-agent"
OUTCOMES = ("success", "failure", "partial")
TEXT_LIMIT = 4000  # a goal or a reasoning step's text, at most (the API's own limit on a goal)
MODEL_OPERATIONS = {"chat", "text_completion", "generate_content"}


@dataclass(frozen=True)
class Span:
    trace_id: str
    span_id: str
    parent_span_id: str
    name: str
    start_ns: int
    end_ns: int
    attributes: dict[str, Any] = field(default_factory=dict)
    status_code: int = 0
    status_message: str = ""
    events: tuple[tuple[str, dict[str, Any]], ...] = ()  # (name, attributes) of the span's events
    resource: dict[str, Any] = field(default_factory=dict)


@dataclass
class TraceDraft:
    """What one batch says of one trace: the trajectory to start (idempotent), its events, and its
    outcome when the batch holds the root span."""

    trace_id: str
    trajectory_id: str
    agent_id: str
    goal: str
    user_id: str | None = None
    task_type: str | None = None
    tools: list[str] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    outcome: str | None = None  # the root span's: the trace ended in this batch
    stated_outcome: str | None = None  # ``hindsight.outcome`` on any span of the batch, or its resource
    spans: int = 0


def _attr(spans: Iterable[Span], *names: str) -> Any:
    """The first value of the first of ``names`` that a span, or else a span's resource, holds."""
    spans = list(spans)
    resources = list({id(s.resource): s.resource for s in spans}.values())  # a batch's spans share theirs
    for name in names:
        for span in spans:
            value = span.attributes.get(name)
            if value not in (None, ""):
                return value
        for resource in resources:
            value = resource.get(name)
            if value not in (None, ""):
                return value
    return None


def kind(span: Span) -> str:
    """``agent``, ``tool``, ``model`` or ``other``."""
    op = str(span.attributes.get("gen_ai.operation.name") or "").lower()
    oi = str(span.attributes.get("openinference.span.kind") or "").upper()
    if op == "execute_tool" or oi == "TOOL" or span.name.startswith("execute_tool "):
        return "tool"
    if op in ("invoke_agent", "create_agent") or oi == "AGENT" or span.name.startswith("invoke_agent"):
        return "agent"
    if op in MODEL_OPERATIONS or oi == "LLM":
        return "model"
    return "other"


def _json(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _message_text(messages: Any, role: str) -> str | None:
    """The text of the first message of ``role`` in GenAI's ``[{role, parts: [{type, content}]}]``
    (or the older ``[{role, content}]``)."""
    for msg in _json(messages) if isinstance(_json(messages), list) else []:
        if not isinstance(msg, dict) or msg.get("role") != role:
            continue
        content = msg.get("content")
        if isinstance(content, str):
            return content
        texts: list[str] = [p["content"] for p in msg.get("parts") or [] if isinstance(p, dict) and isinstance(p.get("content"), str)]
        if texts:
            return " ".join(texts)
    return None


def _text(value: Any) -> str:
    return (value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str))[:TEXT_LIMIT]


def safe_id(value: Any) -> str:
    """An attribute's value as an id the API takes (letters, digits and ``._:@/+=-``, at most 200)."""
    text = re.sub(r"[^A-Za-z0-9._:@/+=-]+", "-", str(value)).lstrip("._:@/+=-")[:200]
    return text or DEFAULT_AGENT


def safe_tool(value: Any) -> str:
    """A span's tool name as a tool name the API takes."""
    text = " ".join(re.sub(r"[^A-Za-z0-9_.:/@+-]+", "_", w) for w in str(value).split())[:128]
    return text or "tool"


def _time(ns: int) -> datetime:
    return datetime.fromtimestamp(ns / 1e9, tz=timezone.utc)


def event_id(span: Span, span_kind: str | None = None) -> str:
    """A tool span carrying its call's id (``gen_ai.tool.call.id``) shares the event of that call
    with the model span that asked for it (``_requested_calls``): whichever arrives first is stored,
    once. Any other span's event derives from its span id. ``span_kind``: ``kind(span)``, when known."""
    call = span.attributes.get("gen_ai.tool.call.id") if (span_kind or kind(span)) == "tool" else None
    return call_event_id(call) if call else f"span-{span.span_id}"


def call_event_id(call_id: Any) -> str:
    return "call-" + re.sub(r"[^A-Za-z0-9._:-]+", "-", str(call_id))[:120]


def _messages(value: Any) -> list[dict[str, Any]]:
    parsed = _json(value)
    return [m for m in parsed if isinstance(m, dict)] if isinstance(parsed, list) else []


def _parts(msg: dict[str, Any], part_type: str) -> list[dict[str, Any]]:
    return [p for p in msg.get("parts") or [] if isinstance(p, dict) and p.get("type") == part_type]


@dataclass
class _Call:
    """A tool call a model span asked for (a ``tool_call`` part of ``gen_ai.output.messages``), and
    its response where a later model span's ``gen_ai.input.messages`` carries it."""

    span: Span
    call_id: str
    name: str
    arguments: Any
    response: Any = None
    answered: bool = False


def _requested_calls(models: list[Span]) -> dict[str, _Call]:
    """The tool calls the batch's model spans asked for, by call id, with their responses."""
    calls: dict[str, _Call] = {}
    for span in models:
        for msg in _messages(span.attributes.get("gen_ai.output.messages")):
            for part in _parts(msg, "tool_call"):
                if part.get("id") and part["id"] not in calls:
                    calls[str(part["id"])] = _Call(span, str(part["id"]), str(part.get("name") or "tool"), part.get("arguments"))
    for span in models if calls else ():
        for msg in _messages(span.attributes.get("gen_ai.input.messages")):
            for part in _parts(msg, "tool_call_response"):
                call = calls.get(str(part.get("id")))
                if call is not None and not call.answered:
                    call.response, call.answered = part.get("response"), True
    return calls


_ERROR_TEXT = re.compile(r"^\s*(error|exception|traceback)\b|^\s*\w*(Error|Exception)\s*:", re.IGNORECASE)


def _called_event(call: _Call, parent: str | None) -> dict[str, Any]:
    """A tool call known from the model spans alone (no ``execute_tool`` span for it): its name
    and arguments from the request, its result from the response the next model call was sent. It
    failed when that response is an error's text (it starts with ``Error``, ``...Error:``,
    ``Exception`` or ``Traceback``) or an object with an ``error`` key."""
    params = _json(call.arguments)
    content: dict[str, Any] = {"tool": safe_tool(call.name),
                               "params": params if isinstance(params, dict) else ({} if params is None else {"input": params})}
    response = _json(call.response)
    if isinstance(response, dict) and response.get("error"):
        content |= {"status": "error", "error": _text(response["error"])}
    elif isinstance(call.response, str) and _ERROR_TEXT.search(call.response):
        content |= {"status": "error", "error": _text(call.response)}
    else:
        content |= {"status": "ok", "result": response}
    return {"event_id": call_event_id(call.call_id), "type": "tool_call", "timestamp": _time(call.span.end_ns or call.span.start_ns),
            "parent_id": parent, "content": content}


def _tool_event(span: Span, parent: str | None) -> dict[str, Any]:  # span: a tool span
    a = span.attributes
    tool = a.get("gen_ai.tool.name") or a.get("tool.name") or span.name.removeprefix("execute_tool ").strip() or "tool"
    params = _json(a.get("gen_ai.tool.call.arguments", a.get("input.value")))
    content: dict[str, Any] = {"tool": safe_tool(tool), "params": params if isinstance(params, dict) else ({} if params is None else {"input": params})}
    if span.status_code == STATUS_ERROR:
        exc = next((attrs for name, attrs in span.events if name == "exception"), {})
        error = span.status_message or exc.get("exception.message") or a.get("error.type") or "error"
        content |= {"status": "error", "error": _text(error)}
    else:
        result = a.get("gen_ai.tool.call.result", a.get("output.value"))
        content |= {"status": "ok", "result": _json(result)}
    return {"event_id": event_id(span, "tool"), "type": "tool_call", "timestamp": _time(span.start_ns), "parent_id": parent, "content": content}


def _model_event(span: Span, parent: str | None) -> dict[str, Any] | None:
    a = span.attributes
    text = _message_text(a.get("gen_ai.output.messages"), "assistant") or a.get("gen_ai.completion") or a.get("output.value")
    if not text:  # a turn that only asks for tools: which ones, with what
        asked = [f"{p.get('name') or 'tool'}({_text(p.get('arguments') if p.get('arguments') is not None else {})})"
                 for m in _messages(a.get("gen_ai.output.messages")) if m.get("role") in (None, "assistant")
                 for p in _parts(m, "tool_call")]
        text = "calls " + ", ".join(asked) if asked else None
    if not text:
        return None  # content capture off: the step says nothing to review
    return {"event_id": event_id(span, "model"), "type": "llm_reasoning", "timestamp": _time(span.start_ns), "parent_id": parent,
            "content": {"text": _text(_json(text) if not isinstance(text, str) else text)}}


def assemble(spans: Iterable[Span]) -> list[TraceDraft]:
    """One draft per trace in the batch, its events in the order the spans started."""
    by_trace: dict[str, list[Span]] = {}
    for span in spans:
        by_trace.setdefault(span.trace_id, []).append(span)
    return [_draft(trace_id, sorted(group, key=lambda s: (s.start_ns, s.span_id))) for trace_id, group in by_trace.items()]


def _draft(trace_id: str, spans: list[Span]) -> TraceDraft:
    ids = {s.span_id for s in spans}
    kinds = [kind(s) for s in spans]
    agents = [s for s, k in zip(spans, kinds) if k == "agent"]
    roots = [s for s in spans if not s.parent_span_id]
    head = agents[:1] or roots[:1] or spans[:1]
    goal = (_attr(spans, "hindsight.goal") or _message_text(_attr(head, "gen_ai.input.messages"), "user")
            or _attr(head, "input.value") or head[0].name)
    draft = TraceDraft(
        trace_id=trace_id,
        trajectory_id=safe_id(_attr(spans, "hindsight.trajectory_id") or trace_id),
        agent_id=safe_id(_attr(spans, "hindsight.agent_id", "gen_ai.agent.id", "gen_ai.agent.name", "service.name") or DEFAULT_AGENT),
        goal=_text(goal).strip() or head[0].name or "task",
        user_id=(lambda u: safe_id(u) if u is not None else None)(_attr(spans, "hindsight.user_id", "user.id", "enduser.id")),
        task_type=(lambda t: str(t) if t is not None else None)(_attr(spans, "hindsight.task_type")),
        spans=len(spans),
    )
    tools = [s for s, k in zip(spans, kinds) if k == "tool"]
    calls = _requested_calls([s for s, k in zip(spans, kinds) if k == "model"])
    executed = {str(s.attributes["gen_ai.tool.call.id"]) for s in tools if s.attributes.get("gen_ai.tool.call.id")} if calls else set()
    emitted = {s.span_id: f"span-{s.span_id}" for s, k in zip(spans, kinds) if k == "model"}
    emitted |= {s.span_id: event_id(s, "tool") for s in tools}
    for span, k in zip(spans, kinds):
        parent = emitted.get(span.parent_span_id) if span.parent_span_id in ids else None
        call = calls.get(str(span.attributes.get("gen_ai.tool.call.id"))) if calls and k == "tool" else None
        if call is not None and call.span.span_id in emitted:
            parent = emitted[call.span.span_id]  # the model turn that asked for this call decided it
        event = _tool_event(span, parent) if k == "tool" else _model_event(span, parent) if k == "model" else None
        if event is not None:
            draft.events.append(event)
        if k == "model" and calls:  # the calls it asked for that no tool span reports
            for c in calls.values():
                if c.span is span and c.call_id not in executed:
                    draft.events.append(_called_event(c, f"span-{span.span_id}" if event is not None else parent))
    for event in draft.events:
        if event["type"] == "tool_call" and event["content"]["tool"] not in draft.tools:
            draft.tools.append(event["content"]["tool"])
    stated = str(_attr(spans, "hindsight.outcome") or "").lower()
    draft.stated_outcome = stated if stated in OUTCOMES else None
    if roots:
        stated = str(_attr(roots, "hindsight.outcome") or "").lower()
        draft.outcome = stated if stated in OUTCOMES else "failure" if roots[0].status_code == STATUS_ERROR else "success"
    return draft


IDLE_JOB = "otlp_idle"  # the review queue's job kind of a trace's idle timeout (services.otlp.finalize_idle)
IDLE_OUTCOME = "partial"  # a trace whose root never ended, and no span said how it went


def idle_outcome(stated: object) -> str:
    """The outcome of a trace finalized for being idle: what a span stated (``hindsight.outcome``),
    else ``partial``: its root span, whose status would have told, never arrived."""
    return stated if isinstance(stated, str) and stated in OUTCOMES else IDLE_OUTCOME
