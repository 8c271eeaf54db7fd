"""Hooks for coding agents that call a command around each tool (Claude Code and the like).

    hindsight-xp hook prompt     UserPromptSubmit: starts the turn's trajectory with the prompt as its
                              goal, recalls lessons for it and hands them to the agent
    hindsight-xp hook pre-tool   PreToolUse: advise on the call about to be made; the advice goes to
                              the agent and its recall id onto the trajectory
    hindsight-xp hook post-tool  PostToolUse (and PostToolUseFailure): records the call and its outcome
    hindsight-xp hook stop       Stop: finalizes the turn's trajectory (failure if the last call failed)

Each reads the hook's JSON on stdin (``session_id``, ``hook_event_name``, ``tool_name``,
``tool_input``, ``tool_response``, ``tool_use_id``, ``prompt``, ``cwd``). A session is a series of
turns; each turn (up to a Stop) is one trajectory, ``cc-<session>-<turn>``, so a long session is
reviewed turn by turn. What a hook must remember between calls (the turn, its goal, whether the
last call failed) is a small JSON file per session in ``state_dir``.

A hook never stands in the agent's way: every request has a short timeout and no retry, and any
error ends the hook with exit code 0 and no output (``run_hook``).
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable

from ._snapshot import snapshot
from .client import Hindsight

EVENTS = ("prompt", "pre-tool", "post-tool", "stop")
DEFAULT_AGENT = "claude-code"
_ID_UNSAFE = re.compile(r"[^A-Za-z0-9._:@/+=-]")


def default_state_dir() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(base) / "hindsight" / "hooks"


@dataclass
class Turn:
    """What the hooks of one session remember between calls."""

    turn: int = 1
    goal: str | None = None
    started: bool = False
    last_failed: bool = False
    calls: int = 0


def _safe(text: str, limit: int = 80) -> str:
    cleaned = _ID_UNSAFE.sub("-", text).strip("-") or "session"
    return cleaned[:limit]


def trajectory_id(session_id: str, turn: int) -> str:
    return f"cc-{_safe(session_id)}-{turn}"


class SessionState:
    def __init__(self, state_dir: Path, session_id: str) -> None:
        digest = hashlib.sha256(session_id.encode()).hexdigest()[:24]
        self.path = state_dir / f"{digest}.json"

    def load(self) -> Turn:
        try:
            return Turn(**json.loads(self.path.read_text()))
        except (OSError, ValueError, TypeError):
            return Turn()

    def save(self, turn: Turn) -> None:
        # written whole then renamed: a hook killed half way leaves the previous state, not half a file
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".tmp-")
        with os.fdopen(fd, "w") as f:
            json.dump(asdict(turn), f)
        os.replace(tmp, self.path)


def tool_failed(payload: dict[str, Any]) -> bool:
    """Whether the call failed, from what the agent reports: a failure event, or an error in the response."""
    if payload.get("hook_event_name") == "PostToolUseFailure" or payload.get("error"):
        return True
    response = payload.get("tool_response")
    if isinstance(response, dict):
        return bool(response.get("error") or response.get("is_error") or response.get("success") is False
                    or response.get("interrupted"))  # fmt: skip
    return False


def _error_text(payload: dict[str, Any]) -> str:
    response = payload.get("tool_response")
    err = payload.get("error")
    if not err and isinstance(response, dict):
        err = response.get("error") or response.get("stderr") or response.get("message")
    return str(err or response or "the tool reported an error")[:2000]


class HookRunner:
    """One hook invocation: the payload, the client, the session's state."""

    def __init__(self, client: Hindsight, payload: dict[str, Any], *, agent_id: str = DEFAULT_AGENT,
                 state_dir: Path | None = None, timeout: float = 2.0) -> None:  # fmt: skip
        self.client, self.payload, self.agent_id, self.timeout = client, payload, agent_id, timeout
        self.session_id = str(payload.get("session_id") or "").strip()
        if not self.session_id:
            raise ValueError("the hook payload has no session_id")
        self.state = SessionState(state_dir or default_state_dir(), self.session_id)
        self.turn = self.state.load()

    @property
    def trajectory_id(self) -> str:
        return trajectory_id(self.session_id, self.turn.turn)

    def _goal(self) -> str:
        if self.turn.goal:
            return self.turn.goal
        where = os.path.basename(str(self.payload.get("cwd") or "").rstrip("/")) or "a project"
        return f"Coding session in {where}"

    def _ensure_started(self) -> None:
        if self.turn.started:
            return
        self.client.start_trajectory(self.agent_id, self._goal(), trajectory_id=self.trajectory_id,
                                     metadata={"session_id": self.session_id, "turn": self.turn.turn})  # fmt: skip
        self.turn.started = True

    def _event_id(self, kind: str) -> str:
        use_id = self.payload.get("tool_use_id")
        if use_id:
            return _safe(f"{kind}-{use_id}", 190)
        digest = hashlib.sha256(json.dumps(self.payload, sort_keys=True, default=str).encode()).hexdigest()[:24]
        return f"{kind}-{digest}"

    def _context(self, text: str) -> dict[str, Any]:
        """The answer Claude Code reads from a hook's stdout: text added to the model's context."""
        return {"hookSpecificOutput": {"hookEventName": self.payload.get("hook_event_name") or "", "additionalContext": text}}

    def prompt(self) -> dict[str, Any] | None:
        text = str(self.payload.get("prompt") or "").strip()
        if self.turn.started and self.turn.calls:  # a prompt after tool calls with no Stop between: new turn
            self._finalize()
        if text:
            self.turn.goal = text[:4000]
        self._ensure_started()
        events: list[dict[str, Any]] = []
        if text:
            events.append({"event_id": self._event_id("prompt"), "type": "user_input", "content": {"text": text[:8000]}})
        result = self.client.recall(text[:4000], agent_id=self.agent_id) if text else None
        if result is not None and result.hits:
            events.append({"event_id": f"recall-{result.recall_id}", "type": "recall", "content": {"recall_id": result.recall_id}})
        if events:
            self.client.append_events(self.trajectory_id, events)
        return self._context(result.advice) if result is not None and result.advice else None

    def pre_tool(self) -> dict[str, Any] | None:
        tool = str(self.payload.get("tool_name") or "")
        if not tool:
            return None
        self._ensure_started()
        params = self.payload.get("tool_input") if isinstance(self.payload.get("tool_input"), dict) else {}
        result = self.client.advise(tool, snapshot(params), goal=self.turn.goal, agent_id=self.agent_id,
                                    trajectory_id=self.trajectory_id)  # fmt: skip
        if not result.hits:
            return None
        self.client.append_events(self.trajectory_id, [
            {"event_id": f"recall-{result.recall_id}", "type": "recall", "content": {"recall_id": result.recall_id}}])
        return self._context(result.advice)

    def post_tool(self) -> None:
        tool = str(self.payload.get("tool_name") or "")
        if not tool:
            return None
        self._ensure_started()
        params = self.payload.get("tool_input") if isinstance(self.payload.get("tool_input"), dict) else {}
        failed = tool_failed(self.payload)
        content: dict[str, Any] = {"tool": tool, "params": snapshot(params), "status": "error" if failed else "ok"}
        if failed:
            content["error"] = _error_text(self.payload)
        else:
            content["result"] = snapshot(self.payload.get("tool_response"))
        self.client.append_events(self.trajectory_id, [{"event_id": self._event_id("call"), "type": "tool_call", "content": content}])
        self.turn.last_failed, self.turn.calls = failed, self.turn.calls + 1
        return None

    def stop(self) -> None:
        if self.payload.get("stop_hook_active"):  # Stop fired again by a hook's own continuation
            return None
        if self.turn.started:
            self._finalize()
        return None

    def _finalize(self) -> None:
        self.client.finalize(self.trajectory_id, "failure" if self.turn.last_failed else "success")
        self.turn = Turn(turn=self.turn.turn + 1)

    def run(self, event: str) -> dict[str, Any] | None:
        handler: Callable[[], dict[str, Any] | None] = {
            "prompt": self.prompt, "pre-tool": self.pre_tool, "post-tool": self.post_tool, "stop": self.stop,
        }[event]  # fmt: skip
        try:
            return handler()
        finally:
            self.state.save(self.turn)
