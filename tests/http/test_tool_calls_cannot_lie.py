"""A tool call says one thing: an `error` makes it a failed call (its status is "error" unless given),
`status: "ok"` beside an `error` is refused naming both fields, and a field the service would not read
is refused naming it. A failure recorded as a success would be labelled effective and teach nothing."""
from __future__ import annotations

import pytest

from .test_api import start

FAILED_WITHOUT_STATUS = [
    {"event_id": "e1", "type": "user_input", "content": {"text": "Will it rain tomorrow?"}},
    {"event_id": "e2", "type": "tool_call",
     "content": {"tool": "get_weather", "params": {"date": "tomorrow"}, "error": "MissingParameter: city is required"}},
    {"event_id": "e3", "type": "tool_call", "content": {"tool": "ask_user", "params": {"question": "Which city?"}, "result": "Lyon"}},
    {"event_id": "e4", "type": "tool_call",
     "content": {"tool": "get_weather", "params": {"date": "tomorrow", "city": "Lyon"}, "result": "rain"}},
]  # fmt: skip


def append(api, key, content, tid="tr1"):
    return api.call("POST", f"/v1/trajectories/{tid}/events", key, {"events": [{"event_id": "c1", "type": "tool_call", "content": content}]})


def stored(api, key, tid="tr1"):
    return api.call("GET", f"/v1/trajectories/{tid}/events", key).json_body["events"]


def test_an_error_without_a_status_is_a_failed_call_and_teaches_the_lesson(api):
    key = api.tenant()
    assert start(api, key).status_code == 201
    assert api.call("POST", "/v1/trajectories/tr1/events", key, {"events": FAILED_WITHOUT_STATUS}).status_code == 202
    assert api.call("POST", "/v1/trajectories/tr1/finalize", key, {"outcome": "success"}).status_code == 202
    api.run_reviews()
    events = {e["event_id"]: e for e in stored(api, key)}
    assert events["e2"]["content"]["status"] == "error" and events["e2"]["label"] == "failed"
    assert events["e4"]["content"]["status"] == "ok" and events["e4"]["label"] != "failed"
    traj = api.call("GET", "/v1/trajectories/tr1", key).json_body
    assert traj["status"] == "reviewed" and traj["experience_ids"]
    lessons = [api.call("GET", f"/v1/experiences/{x}", key).json_body for x in traj["experience_ids"]]
    assert any("city" in (lesson.get("lesson") or "") for lesson in lessons), lessons


def test_status_ok_beside_an_error_is_refused_naming_both_fields(api):
    key = api.tenant()
    assert start(api, key).status_code == 201
    resp = append(api, key, {"tool": "get_weather", "params": {}, "status": "ok", "error": "city is required"})
    assert resp.status_code == 422, resp.body
    message = resp.json_body["error"]["message"]
    assert "`status`" in message and "`error`" in message and "events.0.content" in message
    assert stored(api, key) == []


@pytest.mark.parametrize("field", ["arguments", "Status", "errors"])
def test_an_unknown_field_in_a_tool_call_is_refused_naming_it(api, field):
    key = api.tenant()
    assert start(api, key).status_code == 201
    resp = append(api, key, {"tool": "get_weather", "params": {"city": "Lyon"}, field: {"city": "Paris"}})
    assert resp.status_code == 422, resp.body
    problems = resp.json_body["error"]["details"]
    assert [p["field"] for p in problems] == [f"events.0.content.{field}"]
    assert "unknown field" in problems[0]["problem"] and "params" in problems[0]["problem"]
    assert stored(api, key) == []


@pytest.mark.parametrize("content, status", [
    ({"tool": "t", "error": "boom"}, "error"),
    ({"tool": "t", "status": "error", "error": "boom"}, "error"),
    ({"tool": "t", "status": "error"}, "error"),
    ({"tool": "t", "result": "fine"}, "ok"),
    ({"tool": "t", "status": "ok", "error": None, "result": "fine"}, "ok"),
    ({"tool": "t", "status": "ok", "error": "", "result": "fine"}, "ok"),
    ({"tool": "t", "error": {}, "result": "fine", "duration_ms": 12.5}, "ok"),
])  # fmt: skip
def test_the_stored_status_follows_the_error(api, content, status):
    key = api.tenant()
    assert start(api, key).status_code == 201
    assert append(api, key, content).status_code == 202
    [event] = stored(api, key)
    assert event["content"]["status"] == status
    assert ("error" in event["content"]) == (status == "error" and "error" in content)


def test_advise_refuses_the_same_contradiction_in_recent_events(api):
    key = api.tenant()
    recent = [{"type": "tool_call", "content": {"tool": "get_weather", "params": {"date": "tomorrow"}, "error": "city is required"}}]
    assert api.call("POST", "/v1/advise", key, {"tool": "get_weather", "recent_events": recent}).status_code == 200
    recent[0]["content"]["status"] = "ok"
    resp = api.call("POST", "/v1/advise", key, {"tool": "get_weather", "recent_events": recent})
    assert resp.status_code == 422 and "recent_events.0.content" in resp.json_body["error"]["message"]
