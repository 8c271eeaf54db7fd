"""GET /v1/trajectories/{id}/events reads one page of events at a time: a read costs what it
returns, whatever the trajectory's length; the cursor walks every event once, in order."""
from __future__ import annotations

import base64

import pytest


def started(api, n: int) -> str:
    key = api.tenant()
    assert api.call("POST", "/v1/trajectories", key, {"trajectory_id": "t", "agent_id": "a", "goal": "g"}).status_code == 201
    for first in range(0, n, 100):
        events = [{"event_id": f"e{i}", "type": "tool_call", "content": {"tool": "sql", "status": "ok" if i % 3 else "error"}}
                  for i in range(first, min(n, first + 100))]
        assert api.call("POST", "/v1/trajectories/t/events", key, {"events": events}).status_code == 202
    return key


def test_the_cursor_walks_every_event_once_in_order_a_page_at_a_time(api, monkeypatch):
    key = started(api, 1234)
    read = []  # the page sizes the store was asked for
    page = api.deps.trajectories.events_page
    monkeypatch.setattr(api.deps.trajectories, "events_page", lambda *a: read.append(a[3]) or page(*a))
    monkeypatch.setattr(api.deps.trajectories, "events", lambda *a: pytest.fail("the whole trajectory was read"))
    first = api.call("GET", "/v1/trajectories/t/events", key).json_body
    assert len(first["events"]) == 500 and first["cursor"]  # the default page
    seen, cursor = [], None
    while True:
        body = api.call("GET", "/v1/trajectories/t/events?limit=300" + (f"&cursor={cursor}" if cursor else ""), key).json_body
        assert len(body["events"]) <= 300
        seen += [e["event_id"] for e in body["events"]]
        cursor = body["cursor"]
        if cursor is None:
            break
    assert seen == [f"e{i}" for i in range(1234)]
    assert read == [501, 301, 301, 301, 301, 301]  # a page and one more: never the whole trajectory


def test_a_short_trajectory_is_one_page_with_its_graph(api):
    key = started(api, 30)
    body = api.call("GET", "/v1/trajectories/t/events", key).json_body
    assert [e["event_id"] for e in body["events"]] == [f"e{i}" for i in range(30)] and body["cursor"] is None
    assert {e["label"] for e in body["events"]} - {None}  # attributed, as before


def _b64(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode("utf-8", "surrogatepass")).decode().rstrip("=")


@pytest.mark.parametrize("cursor", [
    "x", "%00", _b64("seq:-1"), _b64("seq:" + "9" * 40), _b64("seq:01"), _b64("seq:\ud800"), _b64("[1]"),
    _b64('{"seq": 1}'), "AAAA" * 200,
])  # fmt: skip
def test_a_cursor_the_server_did_not_issue_answers_422(api, cursor):
    key = started(api, 3)
    resp = api.call("GET", f"/v1/trajectories/t/events?cursor={cursor}", key)
    assert resp.status_code == 422, resp.body


def test_a_page_past_the_last_event_is_empty_and_other_tenants_see_nothing(api):
    key = started(api, 3)
    assert api.call("GET", f"/v1/trajectories/t/events?cursor={_b64('seq:3')}", key).json_body["events"] == []
    other = api.tenant()
    assert api.call("GET", "/v1/trajectories/t/events", other).status_code == 404
    assert api.call("GET", "/v1/trajectories/t/events?limit=0", key).status_code == 422
    assert api.call("GET", "/v1/trajectories/t/events?limit=1001", key).status_code == 422
