"""Recall explains an empty answer: when the scope rules hide lessons that would have matched, the
answer counts them by the agent or user they belong to (``hidden_by_scope``), and says nothing
else about them; another tenant's lessons are never counted."""
from __future__ import annotations

import json

from .test_api import learn_weather_lesson

QUERY = {"query": "Will it rain tomorrow in my city?", "tools": ["get_weather", "ask_user"]}


def recall(api, key, **extra):
    resp = api.call("POST", "/v1/recall", key, QUERY | extra)
    assert resp.status_code == 200, resp.body
    return resp.json_body


def lesson(api, key, text, **scope):
    body = {"situation": "get_weather fails with MissingParameter: city is required",
            "advice": text, "tools": ["get_weather"]} | scope
    resp = api.call("POST", "/v1/experiences", key, body)
    assert resp.status_code == 201, resp.body
    return resp.json_body["experience"]["experience_id"] if "experience" in resp.json_body else resp.json_body["experience_id"]


def test_a_recall_without_the_agent_says_which_agent_holds_the_lessons_and_how_many(api):
    key = api.tenant()
    learned = learn_weather_lesson(api, key, agent="weather-bot")
    assert learned
    lesson(api, key, "Call `ask_user` for the city before `get_weather` (written by hand).", agent_id="weather-bot")
    lesson(api, key, "Ask Bob which city he means before `get_weather`.", user_id="bob")

    blind = recall(api, key)
    assert blind["hits"] == [] and blind["advice"] == ""
    hidden = blind["hidden_by_scope"]
    assert set(hidden) == {"agent_id", "user_id"}
    assert set(hidden["agent_id"]) == {"weather-bot"} and hidden["agent_id"]["weather-bot"] >= 2
    assert hidden["user_id"] == {"bob": 1}
    # counts only: nothing of the hidden lessons' content is in the answer
    text = json.dumps(blind)
    assert "ask_user" not in text and "Bob" not in text and "MissingParameter" not in text

    # with the agent it names, the lessons are there and nothing is said to be hidden
    seen = recall(api, key, agent_id="weather-bot")
    assert len(seen["hits"]) >= 2 and seen["hidden_by_scope"] == {}
    # the agent's own lessons seen, Bob's still hidden: an answer with hits counts nothing
    assert all(h["experience"]["user_id"] is None for h in seen["hits"])
    bob = recall(api, key, agent_id="weather-bot", user_id="bob")
    assert any(h["experience"]["user_id"] == "bob" for h in bob["hits"]) and bob["hidden_by_scope"] == {}


def test_a_lesson_of_another_agent_and_another_user_counts_under_both(api):
    key = api.tenant()
    lesson(api, key, "Ask Bob which city before `get_weather`.", agent_id="weather-bot", user_id="bob")
    assert recall(api, key)["hidden_by_scope"] == {"agent_id": {"weather-bot": 1}, "user_id": {"bob": 1}}
    assert recall(api, key, agent_id="weather-bot")["hidden_by_scope"] == {"user_id": {"bob": 1}}
    assert recall(api, key, user_id="bob")["hidden_by_scope"] == {"agent_id": {"weather-bot": 1}}


def test_another_tenants_lessons_are_never_counted(api):
    mine, theirs = api.tenant(), api.tenant()
    learn_weather_lesson(api, theirs, agent="their-bot")
    lesson(api, theirs, "Call `ask_user` before `get_weather`.", agent_id="their-bot")
    assert recall(api, mine)["hidden_by_scope"] == {}
    assert recall(api, mine, agent_id="my-bot")["hidden_by_scope"] == {}
    assert set(recall(api, theirs)["hidden_by_scope"]["agent_id"]) == {"their-bot"}


def test_lessons_that_would_not_match_are_not_counted(api):
    key = api.tenant()
    lesson(api, key, "Call `ask_user` before `get_weather`.", agent_id="weather-bot")
    # another tool than the lesson's: the tool filter leaves it out, scope or not
    resp = api.call("POST", "/v1/recall", key, {"query": "Will it rain tomorrow?", "tools": ["git"]})
    assert resp.json_body["hits"] == [] and resp.json_body["hidden_by_scope"] == {}
    # a threshold nothing reaches: nothing would have matched
    resp = api.call("POST", "/v1/recall", key, QUERY | {"min_score": 0.99})
    assert resp.json_body["hits"] == [] and resp.json_body["hidden_by_scope"] == {}


def test_the_agents_of_a_tenant_are_listed_with_their_lesson_counts(api):
    key, other = api.tenant(), api.tenant()
    assert api.call("GET", "/v1/agents", key).json_body == {"agents": [], "shared_lessons": 0}
    lesson(api, key, "Call `ask_user` before `get_weather`.", agent_id="weather-bot")
    lesson(api, key, "Pass `city` to `get_weather`.", agent_id="weather-bot")
    lesson(api, key, "Ask which city before `get_weather`.", agent_id="coder", user_id="bob")
    lesson(api, key, "Shared: name the city.")
    lesson(api, other, "Their lesson.", agent_id="their-bot")
    forgotten = lesson(api, key, "Forgotten lesson.", agent_id="gone-bot")
    assert api.call("DELETE", f"/v1/experiences/{forgotten}", key, {"reason": "wrong"}).status_code == 200
    listed = api.call("GET", "/v1/agents", key).json_body
    assert listed == {"agents": [{"agent_id": "weather-bot", "active_lessons": 2}, {"agent_id": "coder", "active_lessons": 1}],
                      "shared_lessons": 1}  # fmt: skip
