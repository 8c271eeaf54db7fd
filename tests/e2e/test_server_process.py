"""The real server process, started as `make run` starts it, driven over real HTTP."""
from __future__ import annotations

import signal

import httpx
import pytest

from tests.support.polling import wait_reviewed

pytestmark = pytest.mark.e2e


def test_a_lesson_is_learned_recalled_and_survives_a_restart(server):
    admin_key = (server.data_dir / "admin_key").read_text().strip()
    resp = httpx.post(f"{server.url}/v1/tenants", json={"name": "acme"}, headers={"Authorization": f"Bearer {admin_key}"})
    assert resp.status_code == 201
    key = resp.json()["api_key"]
    client = httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {key}"}, timeout=30)

    tid = "flight-1"
    assert client.post("/v1/trajectories", json={
        "trajectory_id": tid, "agent_id": "travel-bot", "goal": "Find a flight from Paris to Rome next Friday",
        "task_type": "query", "tools": ["search_flights", "lookup_airport"],
    }).status_code == 201
    events = [
        {"event_id": "1", "type": "user_input", "content": {"text": "Find me a flight from Paris to Rome next Friday"}},
        {"event_id": "2", "type": "tool_call", "content": {"tool": "search_flights", "params": {"from": "Paris", "to": "Rome"},
                                                           "status": "error", "error": "InvalidAirport: expected an IATA code"}},
        {"event_id": "3", "type": "tool_call", "content": {"tool": "lookup_airport", "params": {"city": "Paris"}, "result": "CDG"}},
        {"event_id": "4", "type": "tool_call", "content": {"tool": "search_flights", "params": {"from": "CDG", "to": "FCO"}, "result": ["AZ333"]}},
    ]
    assert client.post(f"/v1/trajectories/{tid}/events", json={"events": events}).json() == {"accepted": 4, "duplicates": 0}
    assert client.post(f"/v1/trajectories/{tid}/finalize", json={"outcome": "success"}).status_code == 202
    traj = wait_reviewed(client, tid)
    assert traj["status"] == "reviewed" and len(traj["experience_ids"]) == 1

    query = {"query": "Book a plane ticket from Berlin to Madrid", "agent_id": "travel-bot", "tools": ["search_flights", "lookup_airport"]}
    recall = client.post("/v1/recall", json=query).json()
    assert recall["hits"][0]["experience"]["experience_id"] == traj["experience_ids"][0]
    assert "lookup_airport" in recall["advice"] and "search_flights" in recall["advice"]
    client.close()

    server.stop()
    server.start()
    client = httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {key}"}, timeout=30)
    after = client.post("/v1/recall", json=query).json()
    assert after["hits"][0]["experience"]["experience_id"] == traj["experience_ids"][0]
    assert after["advice"] == recall["advice"]
    assert client.get(f"/v1/trajectories/{tid}").json()["event_count"] == 4
    client.close()


def test_a_finalized_trajectory_is_reviewed_after_a_crash(server):
    """SIGKILL right after finalize: the review job is in the outbox and runs after restart."""
    admin_key = (server.data_dir / "admin_key").read_text().strip()
    key = httpx.post(f"{server.url}/v1/tenants", json={"name": "acme"}, headers={"Authorization": f"Bearer {admin_key}"}).json()["api_key"]
    h = {"Authorization": f"Bearer {key}"}
    tids = [f"t{i}" for i in range(20)]
    for tid in tids:
        httpx.post(f"{server.url}/v1/trajectories", json={"trajectory_id": tid, "agent_id": "a", "goal": "query the sales database"}, headers=h)
        httpx.post(f"{server.url}/v1/trajectories/{tid}/events", headers=h, json={"events": [
            {"event_id": str(i), "type": "tool_call", "content": {"tool": "sql", "params": {"q": "select"}, "status": "error", "error": "PermissionError: read only"}}
            for i in range(3)
        ]})
    for tid in tids:
        assert httpx.post(f"{server.url}/v1/trajectories/{tid}/finalize", json={"outcome": "failure"}, headers=h).status_code == 202
    server.stop(signal.SIGKILL)
    server.start()
    client = httpx.Client(base_url=server.url, headers=h, timeout=30)
    reviewed = [wait_reviewed(client, tid) for tid in tids]
    assert all(t["status"] == "reviewed" for t in reviewed)
    # twenty trajectories with the same lesson merge into one experience supported by all of them
    ids = {i for t in reviewed for i in t["experience_ids"]}
    assert len(ids) == 1
    exp = client.get(f"/v1/experiences/{ids.pop()}").json()
    assert exp["support"] == 20 and sorted(exp["sources"]) == sorted(tids)
    client.close()


def test_unknown_routes_and_methods_get_json_errors(server):
    assert httpx.get(f"{server.url}/v1/nothing-here").json()["error"]["code"] == "not_found"
    resp = httpx.put(f"{server.url}/v1/health")
    assert resp.status_code == 405 and resp.json()["error"]["code"] == "method_not_allowed"
    resp = httpx.post(f"{server.url}/v1/recall", content=b"x" * 2_000_000, headers={"Authorization": "Bearer k"})
    assert resp.status_code == 413 and "error" in resp.json()
