"""Coding agents' lessons: a shell tool's call is named by its command (``Bash(curl)``, ``Bash(git
push)``), not by the tool ``Bash``; a warning is not given again for a call that already has the
argument it asks for."""
from __future__ import annotations

import pytest

from chalicelib.domain.command import call_name, command_key

WEATHER = "mcp__weather__get_weather"
GOAL = "Will it rain tomorrow where I am?"


def weather_events(prefix: str) -> list[dict]:
    return [
        {"event_id": f"{prefix}p", "type": "user_input", "content": {"text": GOAL}},
        {"event_id": f"{prefix}1", "type": "tool_call", "content": {"tool": WEATHER, "params": {"date": "tomorrow"},
                                                                 "error": "MissingParameter: city is required"}},
        {"event_id": f"{prefix}2", "type": "tool_call", "content": {
            "tool": "Bash", "params": {"command": "curl -s ipinfo.io/city", "description": "Find the city"},
            "result": {"stdout": "Lyon", "stderr": "", "interrupted": False}}},
        {"event_id": f"{prefix}3", "type": "tool_call", "content": {"tool": WEATHER, "params": {"date": "tomorrow", "city": "Lyon"},
                                                                 "result": {"forecast": "rain"}}},
    ]  # fmt: skip


def run(api, key, tid: str, events: list[dict], goal: str = GOAL) -> list[dict]:
    assert api.call("POST", "/v1/trajectories", key, {"trajectory_id": tid, "agent_id": "claude-code", "goal": goal}).status_code == 201
    assert api.call("POST", f"/v1/trajectories/{tid}/events", key, {"events": events}).status_code == 202
    assert api.call("POST", f"/v1/trajectories/{tid}/finalize", key, {"outcome": "success"}).status_code == 202
    api.run_reviews()
    ids = api.call("GET", f"/v1/trajectories/{tid}", key).json_body["experience_ids"]
    return [api.call("GET", f"/v1/experiences/{x}", key).json_body for x in ids]


def advise(api, key, tool: str, params: dict, **extra) -> dict:
    body = {"tool": tool, "params": params, "agent_id": "claude-code", "goal": GOAL} | extra
    resp = api.call("POST", "/v1/advise", key, body)
    assert resp.status_code == 200, resp.body
    return resp.json_body


def test_the_lesson_of_a_command_that_found_the_missing_value_names_the_command(api):
    key = api.tenant()
    [lesson] = run(api, key, "cc-1", weather_events("a"))
    assert lesson["advice"].startswith(f"Call `Bash(curl)` before `{WEATHER}` and pass what it returns as `city`")
    assert "`Bash` before" not in lesson["advice"] and "`Bash` is called" not in lesson["lesson"]
    assert set(lesson["tools"]) == {WEATHER, "Bash(curl)"}
    assert lesson["rule"]["other_tool"] == "Bash(curl)"


def test_a_warning_is_not_given_again_for_a_call_that_already_has_the_argument_it_asks_for(api):
    key = api.tenant()
    run(api, key, "cc-1", weather_events("a"))
    assert api.call("POST", "/v1/trajectories", key, {"trajectory_id": "cc-2", "agent_id": "claude-code", "goal": GOAL}).status_code == 201
    # before anything ran in this turn: the call without `city` is warned, the call with it is not
    assert advise(api, key, WEATHER, {"date": "tomorrow"}, trajectory_id="cc-2")["warnings"]
    with_city = advise(api, key, WEATHER, {"date": "tomorrow", "city": "Lyon"}, trajectory_id="cc-2")
    assert with_city["warnings"] == [] and with_city["advice"] == ""
    # after the warned call failed, still nothing for the call that follows the warning
    failed = weather_events("b")[:2]
    assert api.call("POST", "/v1/trajectories/cc-2/events", key, {"events": failed}).status_code == 202
    assert advise(api, key, WEATHER, {"date": "tomorrow", "city": "Lyon"}, trajectory_id="cc-2")["warnings"] == []
    assert advise(api, key, WEATHER, {"date": "tomorrow", "city": ""}, trajectory_id="cc-2")["warnings"]


def test_a_shell_commands_failure_is_advised_before_that_command_only(api):
    key = api.tenant()
    [lesson] = run(api, key, "cc-3", [
        {"event_id": "g1", "type": "tool_call", "content": {"tool": "Bash", "params": {"command": "git push origin release"},
                                                            "error": "! [rejected] release -> release (non-fast-forward)"}},
        {"event_id": "g2", "type": "tool_call", "content": {"tool": "Bash", "params": {"command": "git push --force-with-lease origin release"},
                                                            "result": {"stdout": "ok"}}},
    ], goal="Publish the release branch")  # fmt: skip
    assert lesson["tools"] == ["Bash(git push)"]
    assert lesson["advice"].startswith("When you call `Bash(git push)`, in `command`, add `--force-with-lease`")
    pushed = advise(api, key, "Bash", {"command": "cd repo && git push origin release"}, goal="Publish the release branch")
    assert [h["experience"]["experience_id"] for h in pushed["hits"]] == [lesson["experience_id"]]
    for other in ("npm test", "git status", "ls -la"):
        assert advise(api, key, "Bash", {"command": other}, goal="Publish the release branch")["hits"] == [], other


@pytest.mark.parametrize("command, key", [
    ("curl -s ipinfo.io/city", "curl"),
    ("git push --force-with-lease origin main", "git push"),
    ("cd app && git push origin main", "git push"),
    ("FOO=1 sudo -E npm install left-pad", "npm install"),
    ("/usr/bin/python3 -m pytest -q tests", "python3 -m pytest"),
    ("export X=1; make test", "make test"),
    ("cat notes.txt | grep city", "cat"),
    ("kubectl -n prod get pods", "kubectl"),
    ("ls 'unclosed", "ls"),
    ("cd /tmp", None),
    ("", None),
])  # fmt: skip
def test_a_command_is_keyed_by_its_program_and_subcommand(command, key):
    assert command_key(command) == key


def test_only_a_shell_tools_call_is_named_by_its_command():
    assert call_name("Bash", {"command": "git push origin main", "description": "push"}) == "Bash(git push)"
    assert call_name("shell", {"command": ["bash", "-lc", "curl -s ipinfo.io/city"]}) == "shell(curl)"
    assert call_name("shell", {"command": ["git", "status"]}) == "shell(git status)"
    assert call_name("Bash", {"command": "cd /tmp"}) == "Bash"
    assert call_name("Bash", {}) == "Bash"
    assert call_name("get_weather", {"command": "curl x"}) == "get_weather"
    assert call_name(None, {"command": "curl x"}) is None
