"""The recall playground starts with the tenant's agent, not an empty one (a lesson learned from an
agent's runs is seen only by a recall that names that agent), and an empty answer says which agent
holds the lessons that match, with a button to recall as it."""
from __future__ import annotations

import pytest

from .test_console import QUERY, record_weather

pytestmark = [pytest.mark.browser, pytest.mark.e2e]


def submit(console) -> None:
    console.driver.execute_script("document.getElementById('recall-result').removeAttribute('data-done')")
    console.css("#recall-form button[type=submit]").click()
    console.wait(lambda d: console.css("#recall-result").get_attribute("data-done") == "yes", what="the recall")


def test_the_playground_offers_the_tenants_agents_and_explains_an_empty_answer(console):
    key = console.tenant("playground-agents")
    client = console.client(key)
    lesson_id = record_weather(client, "agents-run-1")["experience_ids"][0]
    assert client.get("/v1/agents").json()["agents"] == [{"agent_id": "weather-bot", "active_lessons": 1}]

    console.open()
    console.wait(lambda d: console.all("#signin-tenant"), what="the sign-in form")
    console.sign_in(key)
    console.wait_ready("overview")
    console.go("#/playground", "playground")
    agent = console.css('#recall-form input[name="agent_id"]')
    assert agent.get_attribute("value") == "weather-bot"  # not empty: the agent the tenant's lessons belong to
    assert [o.get_attribute("value") for o in console.all("#agent-list option")] == ["weather-bot"]

    # the query alone, as a newcomer types it: the agent already there finds the lesson
    console.css('#recall-form textarea[name="query"]').send_keys(QUERY["query"])
    submit(console)
    assert [h.get_attribute("data-id") for h in console.all("#recall-result li.hit")] == [lesson_id]
    console.screenshot("playground-agent-offered")

    # without the agent: nothing applies, and the answer says whose lessons it hid
    agent.clear()
    submit(console)
    assert console.all("#no-hits") and not console.all("#recall-result li.hit")
    note = console.css('#hidden-by-scope li[data-field="agent_id"][data-value="weather-bot"]')
    assert "1 lesson of agent weather-bot" in note.text
    assert "ask_user" not in console.text("#hidden-by-scope")  # counts, never the hidden lesson's words
    console.screenshot("playground-hidden-by-scope")
    console.driver.execute_script("document.getElementById('recall-result').removeAttribute('data-done')")
    note.find_element("css selector", "button").click()
    console.wait(lambda d: console.css("#recall-result").get_attribute("data-done") == "yes", what="the recall as weather-bot")
    assert [h.get_attribute("data-id") for h in console.all("#recall-result li.hit")] == [lesson_id]
    assert console.css('#recall-form input[name="agent_id"]').get_attribute("value") == "weather-bot"
    assert console.browser_errors() == []
