"""The console end to end in a real browser: what agents record over the API is reviewed, then a
person signs in, finds the lesson, opens its provenance, tries recall, forgets the lesson and sees
it gone; text from agents never runs as code; the page holds to its Content-Security-Policy."""
from __future__ import annotations

import re

import httpx
import pytest
from selenium.common.exceptions import NoAlertPresentException

from tests.support.polling import wait_reviewed
from tests.http.test_api import WEATHER_EVENTS

pytestmark = [pytest.mark.browser, pytest.mark.e2e]

QUERY = {"query": "Is it going to be sunny in my city this weekend?", "agent_id": "weather-bot", "tools": ["get_weather", "ask_user"]}


def record_weather(client: httpx.Client, tid: str) -> dict:
    assert client.post("/v1/trajectories", json={"trajectory_id": tid, "agent_id": "weather-bot", "goal": "Will it rain tomorrow?",
                                                "task_type": "query", "tools": ["get_weather", "ask_user"]}).status_code == 201
    assert client.post(f"/v1/trajectories/{tid}/events", json={"events": WEATHER_EVENTS}).status_code == 202
    assert client.post(f"/v1/trajectories/{tid}/finalize", json={"outcome": "success"}).status_code == 202
    return wait_reviewed(client, tid)


def test_learn_find_inspect_recall_forget(console):
    key = console.tenant("weather-team")
    client = console.client(key)
    first, second = record_weather(client, "run-1"), record_weather(client, "run-2")
    assert first["status"] == second["status"] == "reviewed"
    lesson_id = first["experience_ids"][0]
    lesson = client.get(f"/v1/experiences/{lesson_id}").json()
    assert lesson["sources"] == ["run-1", "run-2"]

    console.open()
    console.wait(lambda d: console.all("#signin-tenant"), what="the sign-in form")
    console.screenshot("01-sign-in")
    console.sign_in("wrong-key")
    console.wait(lambda d: "not accepted" in console.css("#signin-tenant").text, what="a refused key")
    assert any("401" in m for m in console.browser_errors())  # the refused key (reading the log empties it)
    console.css("#signin-tenant input").clear()
    console.sign_in(key)
    console.wait_ready("overview")
    assert key not in console.driver.current_url
    console.wait(lambda d: console.css("#learned-per-day").get_attribute("data-loaded") == "yes", what="lessons per day")
    assert console.css('[data-stat="active lessons"] .n').text == "1"
    assert console.css('[data-stat="trajectories reviewed"] .n').text == "2"
    assert lesson_id in [r.get_attribute("data-id") for r in console.all("#top-lessons tr[data-id]")]
    console.screenshot("02-overview")

    console.go("#/lessons", "lessons")
    console.wait(lambda d: console.css("#lesson-count").get_attribute("data-loaded") == "yes", what="the lesson list")
    search = console.css('#lesson-filters input[name="q"]')
    search.send_keys("no such words anywhere")
    assert console.all("#lessons-table tr[data-id]") == []
    search.clear()
    search.send_keys("ask_user")
    console.css('#lesson-filters input[name="tool"]').send_keys("get_weather")
    rows = console.all("#lessons-table tr[data-id]")
    assert [r.get_attribute("data-id") for r in rows] == [lesson_id]
    console.screenshot("03-lessons")

    rows[0].find_element("css selector", "a.lesson-link").click()
    console.wait_ready("lesson")
    assert console.css("#lesson-advice").text == lesson["advice"]
    assert not {"null", "undefined", "NaN"} & set(console.css("main").text.split())
    assert console.css('[data-field="situation"]').text == lesson["situation"]
    assert {a.get_attribute("data-trajectory") for a in console.all("article.source")} == {"run-1", "run-2"}
    source = console.all("article.source")[0]
    # the timeline: every event, the failed call and the fix marked as the steps the lesson came from
    items = source.find_elements("css selector", "ol.timeline-list li")
    assert [i.get_attribute("data-event") for i in items] == ["e1", "e2", "e3", "e4"]
    steps = {i.get_attribute("data-event"): i.find_element("css selector", ".badge.role").text
             for i in source.find_elements("css selector", "li.lesson-step")}
    assert steps == {"e2": "failed here", "e4": "fixed it"}
    console.screenshot("04-lesson")

    source.find_element("css selector", 'button[data-tab="graph"]').click()
    graph = source.find_element("css selector", "svg.graph")
    assert graph.is_displayed()
    nodes = {n.get_attribute("data-event"): n.get_attribute("class") for n in graph.find_elements("css selector", "g.node")}
    assert set(nodes) == {"e1", "e2", "e3", "e4"}
    assert "failed" in nodes["e2"] and "lesson-step" in nodes["e2"] and "recovery" in nodes["e3"] and "lesson-step" in nodes["e4"]
    graph.find_element("css selector", 'g.node[data-event="e2"]').click()
    assert "MissingParameter: city is required" in source.find_element("css selector", ".event-detail").text
    console.wait(lambda d: console.css("#freshness-plot").get_attribute("data-loaded") == "yes", what="the freshness plot")
    assert console.all("svg.timeline path.line.fresh") and console.all("svg.timeline line.threshold")
    console.driver.execute_script("arguments[0].scrollIntoView()", source)
    console.screenshot("05-provenance-graph")

    console.go("#/playground", "playground")
    run_recall(console)
    hits = [h.get_attribute("data-id") for h in console.all("#recall-result li.hit")]
    assert hits[0] == lesson_id
    api = client.post("/v1/recall", json=QUERY).json()
    assert console.css("#advice-block").text == api["advice"].strip()
    bars = console.all("#recall-result li.hit")[0].find_elements("css selector", "rect.bar")
    assert len(bars) == 6  # semantic, lexical, tag_match, freshness, utility, confidence
    console.screenshot("06-playground")

    console.go(f"#/lesson/{lesson_id}", "lesson")
    console.css('#forget-form input[name="reason"]').send_keys("the city rule is obsolete")
    console.css("#forget-form button[type=submit]").click()
    console.wait(lambda d: "Reason: the city rule is obsolete" in console.text("#status-reason"), what="the forgotten lesson")
    assert client.get(f"/v1/experiences/{lesson_id}").json()["status"] == "forgotten"

    console.go("#/playground", "playground")
    run_recall(console)
    assert lesson_id not in [h.get_attribute("data-id") for h in console.all("#recall-result li.hit")]
    assert lesson_id not in [h["experience"]["experience_id"] for h in client.post("/v1/recall", json=QUERY).json()["hits"]]

    console.go("#/admin", "admin")
    console.sign_in(console.admin_key, "admin")
    console.wait(lambda d: console.all("#tenants"), what="the tenants table")
    assert "weather-team" in console.css("#tenants").text
    console.css("#decay-form button[type=submit]").click()
    console.wait(lambda d: "Decay:" in console.text("#admin-status"), what="the decay run")
    console.screenshot("07-admin")
    assert console.browser_errors() == []
    assert console.driver.execute_script("return Object.keys(localStorage).length") == 0
    assert console.driver.execute_script("return sessionStorage.getItem('hindsight.tenant')") == key


def run_recall(console) -> None:
    form = console.css("#recall-form")
    query = form.find_element("css selector", 'textarea[name="query"]')
    query.clear()
    query.send_keys(QUERY["query"])
    for name, value in (("tools", ", ".join(QUERY["tools"])), ("agent_id", QUERY["agent_id"])):
        field = form.find_element("css selector", f'input[name="{name}"]')
        field.clear()
        field.send_keys(value)
    console.driver.execute_script("document.getElementById('recall-result').removeAttribute('data-done')")
    form.find_element("css selector", "button[type=submit]").click()
    console.wait(lambda d: console.css("#recall-result").get_attribute("data-done") == "yes", what="the recall")


XSS = '<img src=x onerror="window.__pwned=1;alert(1)"><script>window.__pwned=2;alert(2)</script>'
TOOL = "lookup"  # tool names are restricted to a safe character set at ingest
TAG = "<img src=x onerror=\"window.__pwned=4\">"


def test_text_from_agents_is_shown_as_text_and_never_runs(console):
    key = console.tenant("<script>window.__pwned=3</script>")
    client = console.client(key)
    tid = "xss-run"
    assert client.post("/v1/trajectories", json={"trajectory_id": tid, "agent_id": "bot", "goal": XSS, "tools": [TOOL]}).status_code == 201
    events = [
        {"event_id": "x1", "type": "user_input", "content": {"text": XSS}},
        {"event_id": "x2", "type": "tool_call", "content": {"tool": TOOL, "params": {"q": XSS}, "status": "error", "error": XSS}},
        {"event_id": "x3", "type": "tool_call", "content": {"tool": TOOL, "params": {"q": "ok"}, "result": XSS}},
        {"event_id": "x4", "type": "feedback", "content": {"text": XSS, "sentiment": "negative"}},
    ]
    assert client.post(f"/v1/trajectories/{tid}/events", json={"events": events}).status_code == 202
    assert client.post(f"/v1/trajectories/{tid}/finalize", json={"outcome": "failure", "feedback": XSS}).status_code == 202
    wait_reviewed(client, tid)
    written = client.post("/v1/experiences", json={"situation": XSS, "advice": "Before you act: " + XSS, "lesson": XSS, "action": XSS,
                                                   "result": XSS, "tools": [TOOL], "tags": [TAG], "sources": [tid], "agent_id": "bot"})
    assert written.status_code == 201, written.text
    exp_id = written.json()["experience_id"]

    console.open()
    console.driver.execute_script("window.__pwned = undefined")
    console.sign_in(key)
    console.wait_ready("overview")
    for hash_, page in (("#/lessons", "lessons"), (f"#/lesson/{exp_id}", "lesson")):
        console.go(hash_, page)
        if page == "lessons":
            console.wait(lambda d: console.css("#lesson-count").get_attribute("data-loaded") == "yes", what="the list")
        assert_inert(console)
    assert console.css("#lesson-advice").text == "Before you act: " + XSS  # shown, verbatim, as text
    assert XSS in console.css("article.source").text
    console.css('article.source button[data-tab="graph"]').click()
    assert_inert(console)
    console.screenshot("08-xss-lesson")
    console.go("#/playground", "playground")
    form = console.css("#recall-form")
    form.find_element("css selector", 'textarea[name="query"]').send_keys("Before you act " + XSS)
    form.find_element("css selector", 'input[name="agent_id"]').send_keys("bot")
    form.find_element("css selector", "button[type=submit]").click()
    console.wait(lambda d: console.css("#recall-result").get_attribute("data-done") == "yes", what="the recall")
    assert exp_id in [h.get_attribute("data-id") for h in console.all("#recall-result li.hit")]
    assert_inert(console)
    console.go("#/admin", "admin")
    console.sign_in(console.admin_key, "admin")
    console.wait(lambda d: console.all("#tenants"), what="the tenants table")
    assert "<script>window.__pwned=3</script>" in console.css("#tenants").text
    assert_inert(console)


def assert_inert(console) -> None:
    d = console.driver
    try:
        d.switch_to.alert
        raise AssertionError("an alert opened")
    except NoAlertPresentException:
        pass
    assert d.execute_script("return window.__pwned") is None
    assert d.execute_script("return document.images.length") == 0  # no <img> was parsed out of the data
    scripts = d.execute_script("return [...document.scripts].map(s => s.getAttribute('src'))")
    assert scripts == ["console/main.js"]


def test_the_console_is_served_with_a_strict_policy_and_fetches_nothing_from_elsewhere(console):
    url = console.server.url
    page = httpx.get(f"{url}/console")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    csp = page.headers["content-security-policy"]
    directives = dict(d.strip().split(" ", 1) for d in csp.split(";"))
    assert directives["default-src"] == "'self'" and directives["script-src"] == "'self'" and directives["style-src"] == "'self'"
    assert "unsafe" not in csp and directives["object-src"] == "'none'" and directives["frame-ancestors"] == "'none'"
    assert page.headers["x-content-type-options"] == "nosniff"
    assert page.headers["cache-control"] == "no-store"
    assets = re.findall(r'(?:src|href)="(console/[^"]+)"', page.text)
    assert set(assets) == {"console/main.js", "console/console.css"}
    js = set()
    todo = ["console/main.js", "console/console.css"]
    while todo:
        name = todo.pop()
        resp = httpx.get(f"{url}/{name}")
        assert resp.status_code == 200, name
        assert resp.headers["content-type"].split(";")[0] == ("text/css" if name.endswith(".css") else "text/javascript")
        assert resp.headers["x-content-type-options"] == "nosniff"
        text = resp.text
        # the SVG namespace is a name, not a place anything is fetched from
        assert re.findall(r"(?:https?:)?//[A-Za-z0-9.-]+\.[a-z]{2,}", text.replace("http://www.w3.org/2000/svg", "")) == [], name
        assert re.findall(r"\.(?:inner|outer)HTML\s*=|insertAdjacentHTML|document\.write|\beval\(|new Function|setAttribute\('style'", text) == [], name
        for imported in re.findall(r"from '\./([a-z]+\.js)'", text):
            if f"console/{imported}" not in js:
                js.add(f"console/{imported}")
                todo.append(f"console/{imported}")
    assert len(js) >= 6
    for bad in ("../app.py", "index.html", "__init__.py", "nope.js"):
        assert httpx.get(f"{url}/console/{bad}").status_code == 404
    assert re.findall(r"https?://", page.text) == []

    key = console.tenant("policy")
    console.open()
    console.sign_in(key)
    console.wait_ready("overview")
    origins = console.driver.execute_script("return performance.getEntriesByType('resource').map(e => new URL(e.name).origin)")
    assert origins and set(origins) == {url}
    assert console.browser_errors() == []


def test_feedback_and_an_edit_as_a_human_lesson(console):
    key = console.tenant("editors")
    client = console.client(key)
    original = client.post("/v1/experiences", json={
        "situation": "Exporting a report as PDF", "advice": "Call render_pdf with landscape=true for wide tables.",
        "tools": ["render_pdf"], "agent_id": "reporter", "source": "agent"}).json()
    console.open()
    console.sign_in(key)
    console.wait_ready("overview")
    console.go(f"#/lesson/{original['experience_id']}", "lesson")
    console.css('button[data-signal="succeeded"]').click()
    console.wait(lambda d: "Feedback \"succeeded\" recorded" in console.text("#action-status"), what="the feedback")
    after = client.get(f"/v1/experiences/{original['experience_id']}").json()
    assert after["utility"] > original["utility"] and after["confidence"] > original["confidence"]

    console.wait_ready("lesson")
    console.css("#edit").click()
    advice = console.css('#edit-form textarea[name="advice"]')
    advice.clear()
    advice.send_keys("Call render_pdf with landscape=true and fit_width=true for wide tables.")
    console.css("#edit-form button[type=submit]").click()
    console.wait(lambda d: "landscape=true and fit_width=true" in console.text("#lesson-advice"), what="the edited lesson")
    new_id = console.driver.current_url.rsplit("/", 1)[1]
    edited = client.get(f"/v1/experiences/{new_id}").json()
    assert edited["source"] == "human" and edited["agent_id"] == "reporter" and edited["tools"] == ["render_pdf"]
    old = client.get(f"/v1/experiences/{original['experience_id']}").json()
    assert old["status"] == "forgotten" and old["status_reason"] == f"edited: replaced by {new_id}"


def test_admin_sees_a_failed_review_and_redrives_it(tmp_path, openai_stub, start_server):
    from tests.browser.conftest import Console, make_driver

    env = {"HINDSIGHT_OPENAI_BASE_URL": openai_stub.base_url, "HINDSIGHT_OPENAI_API_KEY": "stub", "HINDSIGHT_EMBEDDER": "hash",
           "HINDSIGHT_REVIEW_MAX_ATTEMPTS": "1", "HINDSIGHT_LLM_MAX_RETRIES": "0"}
    srv = start_server(env=env)
    driver = make_driver(tmp_path / "profile")
    try:
        console = Console(driver, srv)
        key = console.tenant("flaky")
        client = console.client(key)
        openai_stub.faults(fail=100)
        assert record_weather(client, "flaky-1")["status"] == "review_failed"
        openai_stub.faults()

        console.open("#/admin")
        console.sign_in(console.admin_key, "admin")
        console.wait(lambda d: console.all("#failed-reviews tr"), what="the failed reviews")
        row = console.css("#failed-reviews tbody tr")
        assert "flaky-1" in row.text and "flaky" in row.text
        console.screenshot("10-admin-failed-review")
        row.find_element("css selector", "button").click()
        console.wait(lambda d: "1 review(s) sent round again" in console.text("#admin-status"), what="the redrive")
        assert wait_reviewed(client, "flaky-1")["status"] == "reviewed"
    finally:
        driver.quit()


def test_a_correction_written_with_supersedes_shows_its_version_chain(console):
    key = console.tenant("correctors")
    client = console.client(key)
    original = client.post("/v1/experiences", json={
        "situation": "Storing prices in the billing database", "advice": "Store prices as floating point numbers of dollars.",
        "agent_id": "billing"}).json()
    written = client.post("/v1/experiences", json={
        "situation": "Storing prices in the billing database", "agent_id": "billing",
        "advice": "Store prices as integer cents with a currency code; floats lost cents in rounding.",
        "supersedes": [original["experience_id"]]})
    assert written.status_code == 201, written.text
    new_id = written.json()["experience_id"]
    console.open()
    console.sign_in(key)
    console.wait_ready("overview")

    console.go(f"#/lesson/{new_id}", "lesson")
    console.wait(lambda d: console.all("#version-chain li"), what="the version chain")
    items = console.all("#version-chain li")
    assert len(items) == 2
    assert "v1" in items[0].text and "archived" in items[0].text and "floating point numbers of dollars" in items[0].text
    assert "v2 (this one)" in items[1].text and "active" in items[1].text and "integer cents" in items[1].text
    console.screenshot("correction-chain-new")

    items[0].find_element("css selector", "a").click()  # the old version, one click away
    console.wait(lambda d: d.current_url.endswith(original["experience_id"]), what="the old lesson's page")
    console.wait_ready("lesson")
    assert console.text("#status-reason") == f"Reason: superseded by {new_id}"
    old_items = console.all("#version-chain li")
    assert "v1 (this one)" in old_items[0].text and "archived" in old_items[0].text
    assert "v2" in old_items[1].text and old_items[1].find_element("css selector", "a").get_attribute("href").endswith(new_id)
    assert console.browser_errors() == []
