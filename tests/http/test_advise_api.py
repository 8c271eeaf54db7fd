"""Advise, recall ids, the recall event, credit counters and restore through the real routes."""
from __future__ import annotations

from tests.http.test_api import learn_weather_lesson, start

ADMIN = "admin-test-key"


def test_advise_warns_before_a_call_that_lacks_the_argument_a_lesson_names(api):
    key = api.tenant()
    (exp_id,) = learn_weather_lesson(api, key)
    resp = api.call("POST", "/v1/advise", key, {"tool": "get_weather", "params": {"date": "today"}, "agent_id": "agent-1",
                                                 "goal": "Rain in the afternoon?"})
    assert resp.status_code == 200, resp.body
    body = resp.json_body
    assert body["recall_id"].startswith("rc_")
    (warning,) = body["warnings"]
    assert warning["experience_id"] == exp_id and "`city`" in warning["message"] and warning["fix"]
    assert [h["experience"]["experience_id"] for h in body["hits"]] == [exp_id]
    assert body["advice"].startswith("<hindsight>") and "WARNING:" in body["advice"]


def test_a_lesson_is_served_with_its_call_rule(api):
    key = api.tenant()
    (exp_id,) = learn_weather_lesson(api, key)
    learned = api.call("GET", f"/v1/experiences/{exp_id}", key).json_body
    assert learned["rule"] == {"kind": "call_first", "tool": "get_weather", "other_tool": "ask_user", "first_arguments": [],
                               "arguments": [{"kind": "missing_argument", "name": "city", "shape": None, "example": None,
                                              "avoided": None, "avoided_example": None, "keys": [], "words": None,
                                              "other": None}],
                               "alternatives": [], "error": '"MissingParameter: city is required"'}
    written = api.call("POST", "/v1/experiences", key, {"situation": "Payments", "tools": ["charge"],
                                                        "advice": "`charge` takes `amount` in integer cents."}).json_body
    assert written["rule"]["kind"] == "arguments" and written["rule"]["arguments"][0]["kind"] == "value_shape"
    vague = api.call("POST", "/v1/experiences", key, {"situation": "Anything", "advice": "Be kind to the user."}).json_body
    assert vague["rule"] is None
    listed = api.call("GET", "/v1/experiences", key).json_body["items"]
    assert {e["experience_id"]: e["rule"] is not None for e in listed} == {
        exp_id: True, written["experience_id"]: True, vague["experience_id"]: False}


def test_advise_answers_empty_lists_and_no_advice_when_nothing_applies(api):
    key = api.tenant()
    learn_weather_lesson(api, key)
    body = api.call("POST", "/v1/advise", key, {"tool": "get_weather", "params": {"date": "today", "city": "Oslo"},
                                                "agent_id": "agent-1"}).json_body
    assert (body["warnings"], body["hits"], body["advice"]) == ([], [], "") and body["recall_id"]


def test_advise_refuses_bad_input_with_4xx(api):
    key = api.tenant()
    assert api.call("POST", "/v1/advise", key, {"params": {}}).status_code == 422
    too_many = [{"type": "user_input", "content": {"text": "x"}}] * 21
    assert api.call("POST", "/v1/advise", key, {"tool": "t", "recent_events": too_many}).status_code == 422
    assert api.call("POST", "/v1/advise", key, {"tool": "t", "params": []}).status_code == 422
    assert api.call("POST", "/v1/advise", key, raw="{").status_code == 400
    assert api.call("POST", "/v1/advise", None, {"tool": "t"}).status_code == 401


def test_a_recall_event_credits_the_lessons_its_recall_served(api):
    key = api.tenant()
    (exp_id,) = learn_weather_lesson(api, key)
    recalled = api.call("POST", "/v1/recall", key, {"query": "Is it going to rain?", "agent_id": "agent-1",
                                                    "tools": ["get_weather"]}).json_body
    assert [h["experience"]["experience_id"] for h in recalled["hits"]] == [exp_id]
    assert start(api, key, "tr2").status_code == 201
    events = [
        {"event_id": "r1", "type": "recall", "content": {"recall_id": recalled["recall_id"]}},
        {"event_id": "c1", "type": "tool_call", "content": {"tool": "ask_user", "params": {"question": "Which city?"}, "result": "Oslo"}},
        {"event_id": "c2", "type": "tool_call", "content": {"tool": "get_weather", "params": {"date": "today", "city": "Oslo"}}},
    ]
    assert api.call("POST", "/v1/trajectories/tr2/events", key, {"events": events}).status_code == 202
    assert api.call("POST", "/v1/trajectories/tr2/finalize", key, {"outcome": "success"}).status_code == 202
    api.run_reviews()
    assert api.call("GET", "/v1/trajectories/tr2", key).json_body["review"]["credit"]["adopted"] == [exp_id]
    exp = api.call("GET", f"/v1/experiences/{exp_id}", key).json_body
    assert (exp["served"], exp["adopted"], exp["success_when_adopted"], exp["success_when_ignored"], exp["lift"]) == (
        1, 1, 1.0, None, None)
    listed = api.call("GET", "/v1/experiences", key).json_body["items"]
    assert [(e["experience_id"], e["served"]) for e in listed] == [(exp_id, 1)]


def test_a_recall_event_needs_a_recall_id(api):
    key = api.tenant()
    assert start(api, key).status_code == 201
    for content in ({}, {"recall_id": ""}, {"recall_id": 5}):
        resp = api.call("POST", "/v1/trajectories/tr1/events", key, {"events": [{"type": "recall", "content": content}]})
        assert resp.status_code == 422, content


def test_restore_brings_an_archived_lesson_back_and_a_forgotten_one_answers_409(api):
    key = api.tenant()
    (exp_id,) = learn_weather_lesson(api, key)
    for _ in range(8):
        api.call("POST", f"/v1/experiences/{exp_id}/feedback", key, {"signal": "failed"})
    assert api.call("GET", f"/v1/experiences/{exp_id}", key).json_body["status"] == "archived"
    resp = api.call("POST", f"/v1/experiences/{exp_id}/restore", key)
    assert resp.status_code == 200, resp.body
    assert resp.json_body["status"] == "active" and resp.json_body["history"][0]["event"] == "restored"
    hits = api.call("POST", "/v1/recall", key, {"query": "Will it rain?", "agent_id": "agent-1"}).json_body["hits"]
    assert [h["experience"]["experience_id"] for h in hits] == [exp_id]
    other = api.tenant("other")
    assert api.call("POST", f"/v1/experiences/{exp_id}/restore", other).status_code == 404
    assert api.call("POST", "/v1/experiences/nope/restore", key).status_code == 404
    assert api.call("DELETE", f"/v1/experiences/{exp_id}", key, {"reason": "wrong"}).status_code == 200
    gone = api.call("POST", f"/v1/experiences/{exp_id}/restore", key)
    assert gone.status_code == 409 and gone.json_body["error"]["code"] == "conflict"


def test_openapi_describes_advise_restore_and_the_counters(api):
    doc = api.call("GET", "/v1/openapi.json").json_body
    assert "post" in doc["paths"]["/v1/advise"] and "post" in doc["paths"]["/v1/experiences/{experience_id}/restore"]
    props = doc["components"]["schemas"]["ExperienceOut"]["properties"]
    assert {"served", "adopted", "success_when_adopted", "success_when_ignored", "lift"} <= set(props)
    assert "recall_id" in doc["components"]["schemas"]["RecallOut"]["properties"]
