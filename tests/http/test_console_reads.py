"""Reads the console needs: a trajectory's attributed events (timeline and decision graph), a lesson's
version chain and last renewal, and the decay policy with the stats."""
from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from chalicelib.domain.scoring import DecayPolicy
from chalicelib.services.tenants import hash_key
from tests.http.test_api import WEATHER_EVENTS, learn_weather_lesson, start


def test_events_come_in_order_with_their_graph_parent_label_and_the_contrast(api):
    key = api.tenant()
    assert start(api, key).status_code == 201
    assert api.call("POST", "/v1/trajectories/tr1/events", key, {"events": WEATHER_EVENTS}).status_code == 202
    resp = api.call("GET", "/v1/trajectories/tr1/events", key)
    assert resp.status_code == 200, resp.body
    body = resp.json_body
    assert body["trajectory_id"] == "tr1"
    events = body["events"]
    assert [e["event_id"] for e in events] == ["e1", "e2", "e3", "e4"]
    assert [e["seq"] for e in events] == sorted(e["seq"] for e in events)
    assert [e["parent"] for e in events] == [None, "e1", "e2", "e3"]  # no parent_id: the event before
    assert [e["label"] for e in events] == [None, "failed", "recovery", "effective"]
    assert events[1]["content"]["error"] == "MissingParameter: city is required"
    assert events[1]["contribution"] < 0 < events[3]["contribution"]
    assert body["contrasts"] == [{"failed": "e2", "worked": "e4", "kind": "order", "changed_params": ["city"], "prerequisite": "ask_user"}]


def test_an_explicit_parent_id_shapes_the_graph(api):
    key = api.tenant()
    assert start(api, key).status_code == 201
    events = [
        {"event_id": "root", "type": "llm_reasoning", "node_id": "n-root", "content": {"text": "Try both"}},
        {"event_id": "a", "type": "tool_call", "parent_id": "n-root", "content": {"tool": "search", "status": "error", "error": "Timeout"}},
        {"event_id": "b", "type": "tool_call", "parent_id": "n-root", "content": {"tool": "search_v2", "result": "ok"}},
    ]
    assert api.call("POST", "/v1/trajectories/tr1/events", key, {"events": events}).status_code == 202
    body = api.call("GET", "/v1/trajectories/tr1/events", key).json_body
    assert {e["event_id"]: e["parent"] for e in body["events"]} == {"root": None, "a": "root", "b": "root"}
    assert body["events"][0]["node_id"] == "n-root" and body["events"][1]["parent_id"] == "n-root"
    assert [(c["failed"], c["worked"], c["kind"]) for c in body["contrasts"]] == [("a", "b", "swap")]


def test_a_trajectory_without_events_has_an_empty_timeline(api):
    key = api.tenant()
    assert start(api, key).status_code == 201
    assert api.call("GET", "/v1/trajectories/tr1/events", key).json_body == {"trajectory_id": "tr1", "events": [], "contrasts": [],
                                                                                   "cursor": None, "events_expired": False}


def test_unknown_or_another_tenants_trajectory_answers_404_and_no_key_401(api):
    a, b = api.tenant("a"), api.tenant("b")
    assert start(api, a).status_code == 201
    for key in (a, b):
        path = "/v1/trajectories/nope/events" if key == a else "/v1/trajectories/tr1/events"
        resp = api.call("GET", path, key)
        assert resp.status_code == 404 and resp.json_body["error"]["code"] == "not_found"
    assert api.call("GET", "/v1/trajectories/tr1/events", "wrong").status_code == 401


def test_a_lesson_names_both_ends_of_its_version_chain_and_its_last_renewal(api):
    key = api.tenant()
    old_id = learn_weather_lesson(api, key)[0]
    tenant_id = api.deps.tenants.tenant_for_key(hash_key(key))
    old = api.deps.experiences.get(tenant_id, old_id)
    api.deps.experiences.put(replace(old, experience_id="exp_new", supersedes=old_id, version=2))
    api.deps.experiences.put(replace(old, superseded_by="exp_new"))
    new = api.call("GET", "/v1/experiences/exp_new", key).json_body
    assert new["supersedes"] == old_id and new["superseded_by"] is None and new["version"] == 2
    back = api.call("GET", f"/v1/experiences/{old_id}", key).json_body
    assert back["superseded_by"] == "exp_new" and back["supersedes"] is None
    assert datetime.fromisoformat(back["renewed_at"]) == old.renewed_at


def test_stats_carry_the_decay_policy_the_server_follows(api):
    key = api.tenant()
    assert api.call("GET", "/v1/stats", key).json_body["decay"] == {
        "half_life_days": api.deps.decay.half_life_days, "archive_below": api.deps.decay.archive_below,
        "min_age_days": api.deps.decay.min_age_days}
    api.deps.decay = DecayPolicy(half_life_days=7.0, archive_below=0.3, min_age_days=1.0)
    assert api.call("GET", "/v1/stats", key).json_body["decay"] == {"half_life_days": 7.0, "archive_below": 0.3, "min_age_days": 1.0}
