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

import httpx
import pytest

from devtools.server_process import ROOT
from hindsight_xp import Hindsight

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


def test_a_turn_hands_each_lesson_to_the_agent_once(server: HindsightServer, api_key: str, client: Hindsight,
                                                    tmp_path: Path) -> None:  # fmt: skip
    run = lambda event, payload: hook(event, payload, url=server.url, api_key=api_key, state=tmp_path)  # noqa: E731
    run("prompt", base("d1", "UserPromptSubmit", prompt="Will it rain tomorrow?"))
    run("post-tool", base("d1", "PostToolUseFailure", tool_name=WEATHER, tool_input={"date": "tomorrow"},
                          tool_use_id="toolu_01", error="MissingParameter: city is required"))  # fmt: skip
    run("post-tool", base("d1", "PostToolUse", tool_name=WEATHER, tool_input={"date": "tomorrow", "city": "Lyon"},
                          tool_use_id="toolu_02", tool_response={"forecast": "rain"}))  # fmt: skip
    run("stop", base("d1", "Stop", stop_hook_active=False))
    (lesson_id,) = client.wait_for_review("cc-d1-1", timeout=20).experience_ids

    # the next session's prompt recalls the lesson: the agent has it from here on
    prompt = run("prompt", base("d2", "UserPromptSubmit", prompt="Will it rain tomorrow in my city? Check the weather."))
    assert "`city`" in json.loads(prompt.stdout)["hookSpecificOutput"]["additionalContext"]
    # three weather calls in the same turn: the lesson is not handed over again, warning or not
    for n, params in enumerate(({"date": "tomorrow"}, {"date": "today"}, {"date": "tomorrow", "city": "Lyon"})):
        pre = run("pre-tool", base("d2", "PreToolUse", tool_name=WEATHER, tool_input=params, tool_use_id=f"toolu_1{n}"))
        assert (pre.returncode, pre.stdout) == (0, ""), (params, pre.stdout)
    assert client.advise(WEATHER, {"date": "tomorrow"}, agent_id="claude-code").warnings  # the service still warns
    run("stop", base("d2", "Stop", stop_hook_active=False))
    # a new turn starts afresh: its first call that breaks the lesson is warned
    warned = run("pre-tool", base("d2", "PreToolUse", tool_name=WEATHER, tool_input={"date": "today"}, tool_use_id="toolu_20"))
    assert "WARNING:" in json.loads(warned.stdout)["hookSpecificOutput"]["additionalContext"]
    again = run("pre-tool", base("d2", "PreToolUse", tool_name=WEATHER, tool_input={"date": "today"}, tool_use_id="toolu_21"))
    assert again.stdout == ""
    events = httpx.get(f"{server.url}/v1/trajectories/cc-d2-2/events", headers={"Authorization": f"Bearer {api_key}"}).json()
    assert [e["type"] for e in events["events"]] == ["recall"]  # attached once: when the lesson was shown


HEAVY = ("httpx", "typer", "rich", "click", "anyio", "pydantic", "mcp", "urllib.request", "http.client", "email",
         "ssl", "typing", "dataclasses", "inspect", "pathlib", "tempfile", "asyncio",
         # the standard library's own weight: json loads re, re loads enum, functools and collections;
         # socket and signal load enum; hashlib loads OpenSSL; a str host name loads the idna codec
         "json", "re", "enum", "functools", "collections", "socket", "selectors", "signal", "hashlib",
         "encodings.idna", "importlib.util", "contextlib")  # fmt: skip
WHAT_LOADED = """
import io, sys
startup = set(sys.modules)
sys.argv = ["hindsight-xp", *sys.argv[1].split("\x1f")]
sys.stdin = io.StringIO('{"session_id": "imports", "hook_event_name": "PreToolUse", "tool_name": "Bash", '
                        '"tool_input": {"command": "ls"}}')
from hindsight_xp._entry import main
try:
    main()
except SystemExit as exc:
    code = exc.code
loaded = sorted(set(sys.modules) - startup)
import json
print(json.dumps({"code": code, "loaded": loaded}))
"""


@pytest.mark.parametrize("event", ["prompt", "pre-tool", "post-tool", "stop"])
def test_a_hook_command_loads_the_standard_library_and_nothing_heavy(server: HindsightServer, api_key: str,
                                                                     tmp_path: Path, event: str) -> None:  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith("HINDSIGHT_")}
    env |= {"HINDSIGHT_URL": server.url, "HINDSIGHT_API_KEY": api_key, "PYTHONPATH": str(SRC)}
    argv = ["hook", event, "--state-dir", str(tmp_path), "--timeout", "5"]
    out = subprocess.run([sys.executable, "-c", WHAT_LOADED, "\x1f".join(argv)], capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout.splitlines()[-1])
    assert seen["code"] == 0
    ours = {m for m in seen["loaded"] if m.split(".")[0] == "hindsight_xp"}
    assert ours <= {"hindsight_xp", "hindsight_xp._entry", "hindsight_xp._env", "hindsight_xp.hooks",
                    "hindsight_xp._hookhttp", "hindsight_xp._hookjson", "hindsight_xp._snapshot"}  # fmt: skip
    others = {m.split(".")[0] for m in seen["loaded"]} - {"hindsight_xp"}
    assert others <= set(sys.stdlib_module_names), others - set(sys.stdlib_module_names)
    assert not {m for m in seen["loaded"] if m in HEAVY or m.split(".")[0] in HEAVY}


def test_the_hook_commands_work_over_urllib_too(server: HindsightServer, api_key: str, client: Hindsight,
                                                tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    # a proxy in the environment (here one that is bypassed for the loopback address) takes the urllib path
    monkeypatch.setenv("http_proxy", "http://127.0.0.1:9")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    run = lambda event, payload: hook(event, payload, url=server.url, api_key=api_key, state=tmp_path)  # noqa: E731
    run("post-tool", base("u1", "PostToolUse", tool_name="Read", tool_input={"file_path": "/x.py"}, tool_use_id="toolu_1",
                          tool_response={"content": "print(1)"}))  # fmt: skip
    run("stop", base("u1", "Stop", stop_hook_active=False))
    traj = client.get_trajectory("cc-u1-1")
    assert traj.event_count == 1 and traj.status in ("finalized", "reviewed")


@pytest.mark.parametrize("argv, expected", [
    (["hook", "stop"], {"event": "stop", "timeout": 2.0, "state_dir": None, "verbose": False, "agent_id": "claude-code"}),
    (["--url", "http://h:1", "--api-key=k", "--admin-key", "a", "hook", "pre-tool", "--timeout=0.5", "--verbose",
      "--agent-id", "cc2", "--state-dir", "/s"],
     {"event": "pre-tool", "url": "http://h:1", "api_key": "k", "timeout": 0.5, "verbose": True, "agent_id": "cc2", "state_dir": "/s"}),
])  # fmt: skip
def test_the_fast_path_reads_the_hook_command_lines_the_docs_show(argv, expected, monkeypatch: pytest.MonkeyPatch) -> None:
    from hindsight_xp._entry import hook_command

    args = hook_command(argv)
    assert args is not None and {k: args[k] for k in expected} == expected


@pytest.mark.parametrize("argv", [
    ["hook"], ["hook", "nope"], ["hook", "stop", "--help"], ["--help"], ["hook", "stop", "--timeout", "99"],
    ["hook", "stop", "--timeout", "x"], ["hook", "stop", "extra"], ["--bogus", "hook", "stop"], ["recall", "q"],
    ["hook", "stop", "--timeout"],
])  # fmt: skip
def test_anything_else_goes_to_the_typer_app(argv) -> None:
    from hindsight_xp._entry import hook_command

    assert hook_command(argv) is None


def test_hook_help_still_answers(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HINDSIGHT_")} | {"PYTHONPATH": str(SRC)}
    out = subprocess.run([sys.executable, "-m", "hindsight_xp", "hook", "pre-tool", "--help"], capture_output=True,
                         text=True, env=env, timeout=60)  # fmt: skip
    assert out.returncode == 0 and "--timeout" in out.stdout and "PreToolUse" in out.stdout
    bad = subprocess.run([sys.executable, "-m", "hindsight_xp", "hook", "pre-tool", "--timeout", "99"], capture_output=True,
                         text=True, env=env, timeout=60, input="{}")  # fmt: skip
    assert bad.returncode == 2 and "--timeout" in bad.stderr


JSON_VALUES = [{}, [], "é\u2028\"\\\n\t", {"a": [1, 2.5, -0.0, 1e300, True, False, None, "x"], "b": {"c": {}}},
               {1: "x", 2.5: "y", True: 1, None: 2}, {"z": 1, "a": {"y": 2, "b": 3}}, 10**30, {"t": (1, 2)},
               [Path("/tmp/x")], float("nan"), float("-inf")]  # fmt: skip


@pytest.mark.parametrize("value", JSON_VALUES)
def test_the_hooks_json_writes_what_json_writes(value) -> None:
    from hindsight_xp import _hookjson

    assert _hookjson.dumps(value) == json.dumps(value, default=str)
    if not (isinstance(value, dict) and 1 in value):  # json cannot sort keys of mixed types
        assert _hookjson.dumps(value, sort_keys=True) == json.dumps(value, default=str, sort_keys=True)
    text = json.dumps(value, default=str)
    assert repr(_hookjson.loads(text)) == repr(json.loads(text))
    assert repr(_hookjson.loads(f" \n{text}\t".encode())) == repr(json.loads(text))


@pytest.mark.parametrize("text", ["", "{", "[1] x", '{"a" 1}', '{"a": 1,}', "nul"])
def test_the_hooks_json_refuses_what_json_refuses(text: str) -> None:
    from hindsight_xp import _hookjson

    with pytest.raises(ValueError):
        json.loads(text)
    with pytest.raises(ValueError):
        _hookjson.loads(text)
