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
error ends the hook with exit code 0 and no output (``run_hook``). It is a new process on every
tool call, so this module and the client it uses (``_hookhttp``) import the standard library only.

A turn hands each lesson to the agent once: what recall gave at the prompt is not repeated before a
tool call, and a call that breaks no lesson it has not seen gets nothing.
"""
from __future__ import annotations

import os
import sys

from . import _hookjson as json
from ._hookhttp import Answer, HookClient
from ._snapshot import snapshot

# typing, dataclasses (which imports inspect), pathlib and tempfile are left out: each is a few
# milliseconds of every hook's start-up; so are json, re, hashlib and signal (the first loads re,
# enum, functools and collections; signal and socket load enum): the C modules under them are used
TYPE_CHECKING = False
if TYPE_CHECKING:
    import signal
    from hashlib import sha256
else:
    try:
        import _signal as signal
    except ImportError:  # pragma: no cover - another interpreter
        import signal
    try:
        from _sha256 import sha256  # CPython 3.11
    except ImportError:  # pragma: no cover
        try:
            from _sha2 import sha256  # CPython 3.12+
        except ImportError:
            from hashlib import sha256
if TYPE_CHECKING:
    from pathlib import Path
    from typing import IO, Any, Callable, Sequence

EVENTS = ("prompt", "pre-tool", "post-tool", "stop")
DEFAULT_AGENT = "claude-code"
_ID_SAFE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._:@/+=-")


def default_state_dir() -> str:
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return os.path.join(base, "hindsight", "hooks")


class Turn:
    """What the hooks of one session remember between calls."""

    FIELDS = ("turn", "goal", "started", "last_failed", "calls", "shown")

    def __init__(self, turn: int = 1, goal: str | None = None, started: bool = False, last_failed: bool = False,
                 calls: int = 0, shown: list[str] | None = None) -> None:  # fmt: skip
        self.turn, self.goal, self.started, self.last_failed, self.calls = turn, goal, started, last_failed, calls
        self.shown: list[str] = list(shown or ())  # the lessons handed to the agent in this turn

    def as_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.FIELDS}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Turn) and self.as_dict() == other.as_dict()

    def __repr__(self) -> str:
        return f"Turn({self.as_dict()})"


def _safe(text: str, limit: int = 80) -> str:
    cleaned = "".join(c if c in _ID_SAFE else "-" for c in text).strip("-") or "session"
    return cleaned[:limit]


def trajectory_id(session_id: str, turn: int) -> str:
    return f"cc-{_safe(session_id)}-{turn}"


class SessionState:
    def __init__(self, state_dir: str | Path, session_id: str) -> None:
        digest = sha256(session_id.encode()).hexdigest()[:24]
        self.dir = os.fspath(state_dir)
        self.path = os.path.join(self.dir, f"{digest}.json")

    def load(self) -> Turn:
        try:
            with open(self.path) as f:
                return Turn(**json.loads(f.read()))
        except (OSError, ValueError, TypeError):
            return Turn()

    def save(self, turn: Turn) -> None:
        # written whole then renamed: a hook killed half way leaves the previous state, not half a file
        os.makedirs(self.dir, exist_ok=True)
        tmp = os.path.join(self.dir, f".tmp-{os.getpid()}-{os.urandom(4).hex()}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "w") as f:
                f.write(json.dumps(turn.as_dict()))
            os.replace(tmp, self.path)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise


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


def _item_number(line: str) -> str | None:
    """The number of a numbered line ("12. ..." -> "12"), else None."""
    digits = len(line) - len(line.lstrip("0123456789"))
    return line[:digits] if digits and line[digits:digits + 2] == ". " else None


def unseen_lessons(advice: str, hit_ids: Sequence[str], shown: Sequence[str]) -> tuple[str, list[str]]:
    """``advice`` (the service's block: a header, one numbered line per hit in ``hit_ids`` order, a
    footer) without the lines of lessons in ``shown``, renumbered; and the ids of the lines kept."""
    if not advice or not hit_ids:
        return "", []
    lines = advice.splitlines()
    items = [i for i, line in enumerate(lines) if _item_number(line) is not None]
    if not items or len(items) > len(hit_ids):  # not the shape this reads: all of it, or nothing
        new = [h for h in hit_ids if h not in shown]
        return (advice, list(hit_ids)) if new else ("", [])
    keep = {i: hit for i, hit in zip(items, hit_ids) if hit not in shown}
    if not keep:
        return "", []
    out, n = [], 0
    for i, line in enumerate(lines):
        if i in keep:
            n += 1
            out.append(f"{n}. " + line[len(_item_number(line) or "") + 2:])
        elif i not in items:
            out.append(line)
    return "\n".join(out), list(keep.values())


class HookRunner:
    """One hook invocation: the payload, the client, the session's state."""

    def __init__(self, client: HookClient, payload: dict[str, Any], *, agent_id: str = DEFAULT_AGENT,
                 state_dir: str | Path | None = None, timeout: float = 2.0) -> None:  # fmt: skip
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
        digest = sha256(json.dumps(self.payload, sort_keys=True).encode()).hexdigest()[:24]
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
        text_for_agent = ""
        if text:
            answer = self.client.recall(text[:4000], agent_id=self.agent_id)
            text_for_agent = self._unseen(answer)
            if text_for_agent:
                events.append(self._recall_event(answer))
        if events:
            self.client.append_events(self.trajectory_id, events)
        return self._context(text_for_agent) if text_for_agent else None

    def pre_tool(self) -> dict[str, Any] | None:
        tool = str(self.payload.get("tool_name") or "")
        if not tool:
            return None
        self._ensure_started()
        params = self.payload.get("tool_input") if isinstance(self.payload.get("tool_input"), dict) else {}
        answer = self.client.advise(tool, snapshot(params), goal=self.turn.goal, agent_id=self.agent_id,
                                    trajectory_id=self.trajectory_id)  # fmt: skip
        text = self._unseen(answer)
        if not text:
            return None
        self.client.append_events(self.trajectory_id, [self._recall_event(answer)])
        return self._context(text)

    def _unseen(self, answer: Answer) -> str:
        """The answer's block with only the lessons not yet handed over in this turn; marks them handed."""
        text, new = unseen_lessons(answer.advice, answer.hit_ids, self.turn.shown)
        self.turn.shown += new
        return text

    @staticmethod
    def _recall_event(answer: Answer) -> dict[str, Any]:
        return {"event_id": f"recall-{answer.recall_id}", "type": "recall", "content": {"recall_id": answer.recall_id}}

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


MAX_PAYLOAD = 4 * 1024 * 1024


class _Deadline(Exception):
    pass


def _alarm(_signum: int, _frame: Any) -> None:
    raise _Deadline()


def run_hook(event: str, *, url: str, api_key: str | None, agent_id: str = DEFAULT_AGENT, timeout: float = 2.0,
             state_dir: str | Path | None = None, verbose: bool = False, stdin: IO[str] | None = None,
             stdout: IO[str] | None = None, stderr: IO[str] | None = None) -> int:  # fmt: skip
    """One hook command: the payload from stdin, the answer (if any) to stdout; always exit code 0.

    Fail-open: whatever happens (no key, the service down or slow, a payload it does not understand),
    it prints nothing and returns within about twice ``timeout`` seconds; errors go to stderr only
    with ``verbose``."""
    stdin, stdout, stderr = stdin or sys.stdin, stdout or sys.stdout, stderr or sys.stderr
    # a hard stop for anything the per-request timeouts do not bound (DNS, a stuck read of stdin)
    has_alarm = hasattr(signal, "SIGALRM")
    if has_alarm:
        signal.signal(signal.SIGALRM, _alarm)
        signal.setitimer(signal.ITIMER_REAL, timeout * 2 + 1)
    try:
        payload = json.loads(stdin.read(MAX_PAYLOAD) or "{}")
        if not isinstance(payload, dict):
            raise ValueError("the hook payload is not a JSON object")
        if not api_key:
            raise ValueError("HINDSIGHT_API_KEY is not set")
        client = HookClient(url, api_key, timeout=timeout)
        answer = HookRunner(client, payload, agent_id=agent_id, state_dir=state_dir, timeout=timeout).run(event)
        if answer:
            stdout.write(json.dumps(answer) + "\n")
    except (Exception, _Deadline) as exc:  # fail-open: the agent must never wait on its memory
        if verbose:
            stderr.write(f"hindsight-xp hook {event}: {type(exc).__name__}: {exc}\n")
    finally:
        if has_alarm:
            signal.setitimer(signal.ITIMER_REAL, 0)
    return 0
