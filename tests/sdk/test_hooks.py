"""`hindsight-xp hook ...` as a coding agent runs it: a subprocess fed real-shaped hook JSON on stdin,
against the real server; and fail-open when anything is wrong."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from hindsight_xp import Hindsight

from devtools.server_process import ROOT

from .servers import HindsightServer

SRC = ROOT / "sdk" / "python" / "src"
WEATHER = "mcp__weather__get_weather"


def hook(event: str, payload: Any, *, url: str, api_key: str | None, state: Path, timeout: float = 5.0,
         raw: str | None = None) -> subprocess.CompletedProcess[str]:  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith("HINDSIGHT_")}
    env |= {"HINDSIGHT_URL": url, "PYTHONPATH": f"{SRC}{os.pathsep}{env.get('PYTHONPATH', '')}"}
    if api_key:
        env["HINDSIGHT_API_KEY"] = api_key
    return subprocess.run(
        [sys.executable, "-m", "hindsight_xp", "hook", event, "--state-dir", str(state), "--timeout", str(timeout)],
        input=raw if raw is not None else json.dumps(payload), capture_output=True, text=True, env=env, timeout=60,
    )


def base(session: str, event: str, **kw: Any) -> dict[str, Any]:
    return {"session_id": session, "transcript_path": f"/tmp/{session}.jsonl", "cwd": "/home/dev/weather-app",
            "hook_event_name": event, **kw}  # fmt: skip


def test_a_session_recorded_by_hooks_teaches_a_lesson_that_the_next_session_is_warned_with(
    server: HindsightServer, api_key: str, client: Hindsight, tmp_path: Path
) -> None:
    run = lambda event, payload: hook(event, payload, url=server.url, api_key=api_key, state=tmp_path)  # noqa: E731
    assert run("prompt", base("s1", "UserPromptSubmit", prompt="Will it rain tomorrow?")).returncode == 0
    assert run("pre-tool", base("s1", "PreToolUse", tool_name=WEATHER, tool_input={"date": "tomorrow"},
                                tool_use_id="toolu_01")).stdout == ""  # nothing known yet
    run("post-tool", base("s1", "PostToolUseFailure", tool_name=WEATHER, tool_input={"date": "tomorrow"},
                          tool_use_id="toolu_01", error="MissingParameter: city is required"))  # fmt: skip
    run("post-tool", base("s1", "PostToolUse", tool_name=WEATHER, tool_input={"date": "tomorrow", "city": "Lyon"},
                          tool_use_id="toolu_02", tool_response={"forecast": "rain"}))  # fmt: skip
    done = run("stop", base("s1", "Stop", stop_hook_active=False))
    assert done.returncode == 0 and done.stdout == ""
    traj = client.wait_for_review("cc-s1-1", timeout=20)
    assert traj.status == "reviewed" and traj.event_count == 3 and len(traj.experience_ids) == 1
    (lesson_id,) = traj.experience_ids

    warned = run("pre-tool", base("s2", "PreToolUse", tool_name=WEATHER, tool_input={"date": "today"}, tool_use_id="toolu_09"))
    assert warned.returncode == 0, warned.stderr
    answer = json.loads(warned.stdout)["hookSpecificOutput"]
    assert answer["hookEventName"] == "PreToolUse"
    assert "WARNING:" in answer["additionalContext"] and "`city`" in answer["additionalContext"]
    run("post-tool", base("s2", "PostToolUse", tool_name=WEATHER, tool_input={"date": "today", "city": "Oslo"},
                          tool_use_id="toolu_09", tool_response={"forecast": "sun"}))  # fmt: skip
    run("stop", base("s2", "Stop", stop_hook_active=False))
    second = client.wait_for_review("cc-s2-1", timeout=20)
    assert second.review["credit"]["adopted"] == [lesson_id]
    assert client.get_experience(lesson_id).adopted == 1

    # the next turn of the same session is a trajectory of its own
    run("post-tool", base("s2", "PostToolUse", tool_name="Bash", tool_input={"command": "ls"}, tool_use_id="toolu_10",
                          tool_response={"stdout": "a.py", "stderr": "", "interrupted": False}))  # fmt: skip
    assert client.get_trajectory("cc-s2-2").event_count == 1


def test_a_repeated_post_tool_payload_is_recorded_once(server: HindsightServer, api_key: str, client: Hindsight,
                                                       tmp_path: Path) -> None:  # fmt: skip
    payload = base("s3", "PostToolUse", tool_name="Read", tool_input={"file_path": "/x.py"}, tool_use_id="toolu_1",
                   tool_response={"content": "print(1)"})  # fmt: skip
    for _ in range(2):
        assert hook("post-tool", payload, url=server.url, api_key=api_key, state=tmp_path).returncode == 0
    assert client.get_trajectory("cc-s3-1").event_count == 1


@pytest.mark.parametrize("case", ["garbage", "not an object", "no session", "no key", "unreachable"])
def test_every_failure_exits_0_with_no_output(server: HindsightServer, api_key: str, tmp_path: Path, case: str) -> None:
    payload = base("s4", "PreToolUse", tool_name="Bash", tool_input={"command": "ls"})
    kw: dict[str, Any] = {"url": server.url, "api_key": api_key, "state": tmp_path}
    if case == "garbage":
        kw["raw"] = "{not json"
    elif case == "not an object":
        kw["raw"] = "[1, 2]"
    elif case == "no session":
        payload.pop("session_id")
    elif case == "no key":
        kw["api_key"] = None
    else:
        kw["url"] = "http://127.0.0.1:9"
    for event in ("prompt", "pre-tool", "post-tool", "stop"):
        result = hook(event, payload, **kw)
        assert (result.returncode, result.stdout, result.stderr) == (0, "", ""), (event, result)


def test_a_service_that_never_answers_holds_the_agent_for_the_timeout_only(tmp_path: Path, api_key: str) -> None:
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(16)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:  # takes the connections and never says a word
        silent.settimeout(0.1)
        while not stop.is_set():
            try:
                accepted.append(silent.accept()[0])
            except OSError:
                pass

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        started = time.monotonic()
        result = hook("pre-tool", base("s5", "PreToolUse", tool_name="Bash", tool_input={"command": "ls"}),
                      url=url, api_key=api_key, state=tmp_path, timeout=0.5)  # fmt: skip
        elapsed = time.monotonic() - started
    finally:
        stop.set()
        thread.join()
        for conn in accepted:
            conn.close()
        silent.close()
    assert (result.returncode, result.stdout) == (0, "")
    assert elapsed < 5.0  # interpreter start-up plus at most twice the timeout and a second
