"""hindsight as an MCP server: memory tools for any MCP-capable agent.

Transports: stdio (``hindsight-xp mcp``) and streamable HTTP (``hindsight-xp mcp --http --port N``,
endpoint ``/mcp``, health check ``GET /health``). The service is reached over HTTP with the SDK's
async client. The tenant key is the ``Authorization: Bearer`` header of the MCP request when
there is one (HTTP), else HINDSIGHT_API_KEY.

Tool descriptions are written for the model: each says *when* to call the tool.
"""
from __future__ import annotations

import collections
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Annotated, Any, AsyncIterator, Literal, cast

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, Field

from ._retry import NO_RETRY
from .client import AsyncHindsight
from .config import Config
from .errors import HindsightError, NotFound
from .models import Experience, Trajectory

INSTRUCTIONS = """\
hindsight is your long-term memory of what worked and what failed in past tasks.
Before you act on a task, call memory_recall with the situation and the tools you have, and
follow the advice it returns; before a tool call you are unsure of, call memory_advise with the
tool and its arguments. While you work, record what you do with record_events (or
record_trajectory_node), and call finalize_trajectory when the task ends: hindsight reviews the
run and learns lessons from it. When you learn something worth keeping, call memory_write; when
a recalled lesson helped or misled you, call memory_feedback; when one is wrong, memory_forget."""

_STARTED_CACHE = 10_000


@dataclass
class _State:
    base: AsyncHindsight
    default_agent_id: str
    # Trajectories this process already created: skips an (idempotent) start request per call.
    started: collections.OrderedDict[str, None] = field(default_factory=collections.OrderedDict)

    def remember(self, trajectory_id: str) -> None:
        self.started[trajectory_id] = None
        self.started.move_to_end(trajectory_id)
        while len(self.started) > _STARTED_CACHE:
            self.started.popitem(last=False)


def _client(ctx: Context) -> tuple[AsyncHindsight, _State]:
    state = cast(_State, ctx.request_context.lifespan_context)
    headers = ctx.headers or {}
    auth = headers.get("authorization") or headers.get("Authorization")
    if auth and auth.lower().startswith("bearer ") and auth[7:].strip():
        return state.base.with_api_key(auth[7:].strip()), state
    if not state.base.config.api_key:
        raise ToolError("no hindsight API key: set HINDSIGHT_API_KEY or send 'Authorization: Bearer <key>'")
    return state.base, state


def _tool_error(exc: HindsightError) -> ToolError:
    return ToolError(f"hindsight: {exc}")


def _lesson(exp: Experience) -> dict[str, Any]:
    return {
        "experience_id": exp.experience_id, "advice": exp.advice, "lesson": exp.lesson, "situation": exp.situation,
        "tools": list(exp.tools), "tags": list(exp.tags), "status": exp.status, "confidence": exp.confidence,
        "freshness": exp.freshness, "utility": exp.utility, "served": exp.served, "adopted": exp.adopted,
        "success_when_adopted": exp.success_when_adopted, "success_when_ignored": exp.success_when_ignored,
        "lift": exp.lift, "supersedes": exp.supersedes, "superseded_by": exp.superseded_by,
    }  # fmt: skip


def _trajectory(traj: Trajectory) -> dict[str, Any]:
    return {"trajectory_id": traj.trajectory_id, "status": traj.status, "event_count": traj.event_count,
            "experience_ids": list(traj.experience_ids)}  # fmt: skip


class EventIn(BaseModel):
    """One step of the task, as the hindsight contract defines it."""

    type: Literal["user_input", "llm_reasoning", "tool_call", "state_change", "feedback", "recall"] = Field(
        description="user_input: what the user said; llm_reasoning: what you decided and why; tool_call: a tool "
        "you called and its outcome; feedback: the user's reaction; state_change: a fact that changed"
    )
    content: dict[str, Any] = Field(
        description='user_input/llm_reasoning: {"text"}; tool_call: {"tool", "params", "status": "ok"|"error", '
        '"result", "error"}; feedback: {"text", "sentiment": "positive"|"negative"}; state_change: {"key", "value"}; '
        'recall: {"recall_id"} (a recall_id you were shown)'
    )
    event_id: str | None = Field(default=None, description="Your id for the step; resending it is harmless.")
    node_id: str | None = Field(default=None, description="Id of this decision-graph node.")
    parent_id: str | None = Field(default=None, description="The node this one follows from (default: the previous step).")


async def _ensure_trajectory(client: AsyncHindsight, state: _State, trajectory_id: str, goal: str | None,
                             agent_id: str | None, tools: list[str], task_type: str | None) -> None:  # fmt: skip
    if trajectory_id in state.started:
        return
    if goal:
        await client.start_trajectory(agent_id or state.default_agent_id, goal, trajectory_id=trajectory_id,
                                      tools=tools, task_type=task_type)  # fmt: skip
    else:
        try:
            await client.get_trajectory(trajectory_id)
        except NotFound:
            raise ToolError(f"trajectory {trajectory_id!r} does not exist yet: pass `goal` on its first record call") from None
    state.remember(trajectory_id)


_ATTACH = ("Your current task's trajectory_id (as in record_events), if it has one: the answer is attached "
           "to it, so its outcome credits the lessons you were shown.")


async def _attach(client: AsyncHindsight, state: _State, trajectory_id: str | None, recall_id: str, served: bool) -> str | None:
    """Record a ``recall`` event on the caller's open trajectory; None when there is none to attach to
    (no id, not recorded yet, nothing served)."""
    if not trajectory_id or not served or not recall_id:
        return None
    if trajectory_id not in state.started:
        try:
            traj = await client.get_trajectory(trajectory_id)
        except NotFound:
            return None
        if traj.status != "open":
            return None
        state.remember(trajectory_id)
    await client.append_events(trajectory_id, [{"type": "recall", "content": {"recall_id": recall_id}}])
    return trajectory_id


def build_server(config: Config | None = None, *, default_agent_id: str = "mcp-agent") -> MCPServer:
    """A fresh server bound to ``config`` (default: the environment)."""
    config = config or Config.from_env()

    @asynccontextmanager
    async def lifespan(_: MCPServer) -> AsyncIterator[_State]:
        # Made inside the server's event loop: an httpx.AsyncClient belongs to the loop it runs in.
        async with AsyncHindsight(config.url, config.api_key, admin_key=config.admin_key, timeout=config.timeout) as base:
            yield _State(base, config.agent_id or default_agent_id)

    server = MCPServer("hindsight", instructions=INSTRUCTIONS, lifespan=lifespan, version="0.1.0")

    @server.tool(description=(
        "Recall lessons from past runs BEFORE you act on a task, and again when you are about to use "
        "a tool you have had trouble with or a step just failed. Describe the situation (the task in your "
        "words) and list the tools you have. Returns ranked lessons and `advice`, a block of text to "
        "follow (put it in your working notes). Empty advice means nothing relevant is known."
    ))  # fmt: skip
    async def memory_recall(
        situation: Annotated[str, Field(description="The task or the situation you are in, in plain words.")],
        ctx: Context,
        tools: Annotated[list[str], Field(description="Names of the tools you can use now.")] = [],  # noqa: B006
        task_type: Annotated[str | None, Field(description="e.g. query, operation, analysis")] = None,
        agent_id: Annotated[str | None, Field(description="Your agent id, to see your own lessons.")] = None,
        user_id: Annotated[str | None, Field(description="The user you act for, if any.")] = None,
        tags: Annotated[list[str], Field(description="Topic tags that lessons may carry.")] = [],  # noqa: B006
        top_k: Annotated[int, Field(ge=1, le=50, description="How many lessons at most.")] = 5,
        trajectory_id: Annotated[str | None, Field(description=_ATTACH)] = None,
    ) -> dict[str, Any]:
        client, state = _client(ctx)
        try:
            result = await client.recall(situation, agent_id=agent_id or state.default_agent_id, user_id=user_id,
                                         task_type=task_type, tools=tools, tags=tags, top_k=top_k)  # fmt: skip
            attached = await _attach(client, state, trajectory_id, result.recall_id, bool(result.hits))
        except HindsightError as exc:
            raise _tool_error(exc) from exc
        return {
            "advice": result.advice,
            "lessons": [{**_lesson(h.experience), "score": h.score} for h in result.hits],
            "recall_id": result.recall_id,
            "attached_to": attached,
        }

    @server.tool(description=(
        "Check a tool call BEFORE you make it: give the tool and the arguments you are about to pass. "
        "hindsight answers from past runs in milliseconds: `warnings` (this call failed before when an "
        "argument was missing or had this shape, and what fixed it) and `advice` to follow. Empty "
        "warnings and advice mean nothing is known against this call. Pass your trajectory_id so the "
        "outcome of your run credits the lessons you were shown."
    ))  # fmt: skip
    async def memory_advise(
        tool: Annotated[str, Field(description="The tool you are about to call.")],
        ctx: Context,
        params: Annotated[dict[str, Any], Field(description="The arguments you are about to pass.")] = {},  # noqa: B006
        goal: Annotated[str | None, Field(description="The task's goal, in your words.")] = None,
        agent_id: Annotated[str | None, Field(description="Your agent id, to see your own lessons.")] = None,
        user_id: Annotated[str | None, Field(description="The user you act for, if any.")] = None,
        trajectory_id: Annotated[str | None, Field(description=_ATTACH)] = None,
    ) -> dict[str, Any]:
        client, state = _client(ctx)
        try:
            known = trajectory_id if trajectory_id in state.started else None
            result = await client.advise(tool, params, goal=goal, agent_id=agent_id or state.default_agent_id,
                                         user_id=user_id, trajectory_id=known)  # fmt: skip
            attached = await _attach(client, state, trajectory_id, result.recall_id, bool(result.hits))
        except HindsightError as exc:
            raise _tool_error(exc) from exc
        return {
            "warnings": [{"experience_id": w.experience_id, "message": w.message, "fix": w.fix} for w in result.warnings],
            "advice": result.advice,
            "lessons": [{**_lesson(h.experience), "score": h.score} for h in result.hits],
            "recall_id": result.recall_id,
            "attached_to": attached,
        }

    @server.tool(description=(
        "Bring an archived lesson back into memory_recall (lessons are archived when they go stale or "
        "keep failing). Call it when query_experience shows an archived lesson you know is still right. "
        "A forgotten lesson cannot be restored."
    ))  # fmt: skip
    async def memory_restore(
        experience_id: Annotated[str, Field(description="The archived lesson's experience_id.")],
        ctx: Context,
    ) -> dict[str, Any]:
        client, _ = _client(ctx)
        try:
            return _lesson(await client.restore(experience_id))
        except HindsightError as exc:
            raise _tool_error(exc) from exc

    @server.tool(description=(
        "Save a lesson worth remembering for future tasks: call it when you found out how to do something "
        "that was not obvious (a failure and its fix, a required order of steps, a user preference). "
        "Give the situation, what you did (action), what happened (result) and the lesson; `advice` is the "
        "lesson as an instruction to your future self. Do not save facts about this task only. When it corrects "
        "a lesson memory_recall gave you (that lesson turned out wrong or outdated), pass its experience_id in "
        "`supersedes`: the old one is archived and linked to the new one. The answer's `correction_of` names "
        "lessons this one probably corrects that it did not replace."
    ))  # fmt: skip
    async def memory_write(
        situation: Annotated[str, Field(description="When the lesson applies.")],
        lesson: Annotated[str, Field(description="What you learned, in one or two sentences.")],
        ctx: Context,
        action: Annotated[str, Field(description="What you did.")] = "",
        result: Annotated[str, Field(description="What happened.")] = "",
        advice: Annotated[str, Field(description="The lesson as an instruction, e.g. 'Call X before Y'.")] = "",
        tags: Annotated[list[str], Field(description="Topic tags.")] = [],  # noqa: B006
        tools: Annotated[list[str], Field(description="Tools the lesson is about.")] = [],  # noqa: B006
        task_type: str | None = None,
        agent_id: str | None = None,
        user_id: str | None = None,
        experience_id: Annotated[str | None, Field(description="Your id for it; writing it again is harmless.")] = None,
        supersedes: Annotated[list[str] | Literal["auto"] | None, Field(description=(
            "The experience_ids of lessons this one corrects (same agent_id and user_id), or \"auto\" for the "
            "lessons the service finds it probably corrects."))] = None,  # fmt: skip
    ) -> dict[str, Any]:
        client, state = _client(ctx)
        try:
            exp = await client.write_experience(
                situation, lesson=lesson, advice=advice, action=action, result=result, tags=tags, tools=tools,
                task_type=task_type, agent_id=agent_id or state.default_agent_id, user_id=user_id, source="agent",
                experience_id=experience_id, supersedes=supersedes or None,
            )  # fmt: skip
        except HindsightError as exc:
            raise _tool_error(exc) from exc
        return {**_lesson(exp), "correction_of": list(exp.correction_of)}

    @server.tool(description=(
        "Forget a lesson for good: call it when a recalled lesson is wrong, outdated or harmful (not merely "
        "unhelpful once: use memory_feedback for that). It never appears in recall again."
    ))  # fmt: skip
    async def memory_forget(
        experience_id: Annotated[str, Field(description="The lesson's experience_id, from memory_recall.")],
        reason: Annotated[str, Field(description="Why it is wrong; kept for audit.")],
        ctx: Context,
    ) -> dict[str, Any]:
        client, _ = _client(ctx)
        try:
            return _lesson(await client.forget(experience_id, reason))
        except HindsightError as exc:
            raise _tool_error(exc) from exc

    @server.tool(description=(
        "Tell hindsight how a recalled lesson worked out, after you used (or chose not to use) it: "
        "adopted = you followed it; ignored = you did not; succeeded = following it worked; failed = "
        "following it did not work. Lessons that keep helping rank higher; failing ones fade."
    ))  # fmt: skip
    async def memory_feedback(
        experience_id: Annotated[str, Field(description="The lesson's experience_id, from memory_recall.")],
        signal: Literal["adopted", "ignored", "succeeded", "failed"],
        ctx: Context,
    ) -> dict[str, Any]:
        client, _ = _client(ctx)
        try:
            return _lesson(await client.feedback(experience_id, signal))
        except HindsightError as exc:
            raise _tool_error(exc) from exc

    @server.tool(description=(
        "Record the steps of the task you are doing, as you go (several at once is best): the user's input, "
        "your reasoning, each tool call with its params and result or error, the user's feedback. Use one "
        "trajectory_id per task (you choose it) and pass `goal` on the first call. hindsight learns from "
        "these steps after finalize_trajectory."
    ))  # fmt: skip
    async def record_events(
        trajectory_id: Annotated[str, Field(description="Your id for this task run, e.g. 'task-2024-05-01-1'.")],
        events: Annotated[list[EventIn], Field(min_length=1, max_length=100)],
        ctx: Context,
        goal: Annotated[str | None, Field(description="The task's goal; required on the first call.")] = None,
        agent_id: str | None = None,
        tools: Annotated[list[str], Field(description="The tools you have for this task.")] = [],  # noqa: B006
        task_type: str | None = None,
    ) -> dict[str, Any]:
        client, state = _client(ctx)
        try:
            await _ensure_trajectory(client, state, trajectory_id, goal, agent_id, tools, task_type)
            accepted = await client.append_events(trajectory_id, [e.model_dump(exclude_none=True) for e in events])
        except HindsightError as exc:
            raise _tool_error(exc) from exc
        return {"trajectory_id": trajectory_id, "accepted": accepted.accepted, "duplicates": accepted.duplicates}

    @server.tool(description=(
        "Record one step of the task as a node of its decision graph: use it instead of record_events when "
        "you branch (try an alternative after a failure) so that parent_id says which step this one follows. "
        "For a tool call give tool, params and result or error; for text steps give text."
    ))  # fmt: skip
    async def record_trajectory_node(
        trajectory_id: str,
        node_type: Literal["user_input", "llm_reasoning", "tool_call", "state_change", "feedback"],
        ctx: Context,
        node_id: Annotated[str | None, Field(description="Your id for this node.")] = None,
        parent_id: Annotated[str | None, Field(description="The node this one follows from.")] = None,
        text: str | None = None,
        tool: str | None = None,
        params: dict[str, Any] | None = None,
        result: Any = None,
        error: str | None = None,
        sentiment: Literal["positive", "negative"] | None = None,
        key: Annotated[str | None, Field(description="For state_change: what changed.")] = None,
        value: Annotated[Any, Field(description="For state_change: its new value.")] = None,
        goal: Annotated[str | None, Field(description="The task's goal; required on the first call.")] = None,
        agent_id: str | None = None,
    ) -> dict[str, Any]:
        if node_type == "tool_call":
            if not tool:
                raise ToolError("a tool_call node needs `tool`")
            content: dict[str, Any] = {"tool": tool, "params": params or {}, "status": "error" if error else "ok"}
            content["error" if error else "result"] = error if error else result
        elif node_type == "state_change":
            if not key:
                raise ToolError("a state_change node needs `key`")
            content = {"key": key, "value": value}
        else:
            content = {"text": text or ""}
            if node_type == "feedback" and sentiment:
                content["sentiment"] = sentiment
        event = {k: v for k, v in {"type": node_type, "content": content, "event_id": node_id, "node_id": node_id,
                                   "parent_id": parent_id}.items() if v is not None}  # fmt: skip
        client, state = _client(ctx)
        try:
            await _ensure_trajectory(client, state, trajectory_id, goal, agent_id, [], None)
            accepted = await client.append_events(trajectory_id, [event])
        except HindsightError as exc:
            raise _tool_error(exc) from exc
        return {"trajectory_id": trajectory_id, "accepted": accepted.accepted, "duplicates": accepted.duplicates}

    @server.tool(description=(
        "Close a task's trajectory when the task is over, with its outcome (success, failure or partial) "
        "and, if any, what the user said about it. hindsight then reviews the recorded steps and learns "
        "lessons from them; they become available to memory_recall shortly after."
    ))  # fmt: skip
    async def finalize_trajectory(
        trajectory_id: str,
        outcome: Literal["success", "failure", "partial"],
        ctx: Context,
        feedback: Annotated[str | None, Field(description="The user's verdict, if any.")] = None,
    ) -> dict[str, Any]:
        client, _ = _client(ctx)
        try:
            return _trajectory(await client.finalize(trajectory_id, outcome, feedback))
        except HindsightError as exc:
            raise _tool_error(exc) from exc

    @server.tool(description=(
        "Look up what hindsight stores: one lesson by experience_id; a trajectory's review status and the "
        "lessons learned from it by trajectory_id (e.g. to check that a finalized task was reviewed); or "
        "otherwise a list of lessons filtered by agent_id and status (active, archived, forgotten)."
    ))  # fmt: skip
    async def query_experience(
        ctx: Context,
        experience_id: str | None = None,
        trajectory_id: str | None = None,
        agent_id: str | None = None,
        status: Literal["active", "archived", "forgotten"] | None = None,
        limit: Annotated[int, Field(ge=1, le=200)] = 20,
        cursor: Annotated[str | None, Field(description="From a previous answer, for the next page.")] = None,
    ) -> dict[str, Any]:
        client, _ = _client(ctx)
        try:
            if experience_id:
                return {"experience": _lesson(await client.get_experience(experience_id))}
            if trajectory_id:
                return {"trajectory": _trajectory(await client.get_trajectory(trajectory_id))}
            page = await client.list_experiences(agent_id=agent_id, status=status, limit=limit, cursor=cursor)
        except HindsightError as exc:
            raise _tool_error(exc) from exc
        return {"experiences": [_lesson(e) for e in page.items], "cursor": page.cursor}

    _add_health_route(server, config)
    return server


def _add_health_route(server: MCPServer, config: Config) -> None:
    from starlette.requests import Request
    from starlette.responses import JSONResponse

    @server.custom_route("/health", methods=["GET"])
    async def health(request: Request) -> JSONResponse:
        """200 when this MCP server runs and reaches the hindsight service; 503 otherwise."""
        async with AsyncHindsight(config.url, timeout=5.0, retry=NO_RETRY) as client:
            try:
                upstream = await client.health()
            except HindsightError as exc:
                return JSONResponse({"status": "degraded", "hindsight": str(exc)}, status_code=503)
        return JSONResponse({"status": "ok", "hindsight": {"url": config.url, "backend": upstream.backend}})


def run(transport: Literal["stdio", "streamable-http"] = "stdio", *, host: str = "127.0.0.1", port: int = 8765,
        config: Config | None = None) -> None:  # fmt: skip
    import logging

    server = build_server(config)
    # One INFO line per HTTP request to the service would drown the server's own log (stderr).
    logging.getLogger("httpx").setLevel(logging.WARNING)
    if transport == "stdio":
        server.run("stdio")
    else:
        server.run("streamable-http", host=host, port=port)
