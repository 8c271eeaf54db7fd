"""No API key, admin key or OpenAI key in anything the real server writes, even at DEBUG.

The server runs as ``make run`` runs it, with the LLM reviewer pointed at the local OpenAI stub, and
goes through what is most likely to log a key: tenants created, good, unknown, malformed and
revoked keys, rotations, bodies that are refused, a review by the LLM. Then every byte it wrote to
stdout and stderr is searched for every secret it saw.
"""
from __future__ import annotations

import json
import secrets

import httpx
import pytest

from devtools.openai_stub import OpenAIStub
from devtools.server_process import ServerProcess
from tests.support.polling import wait_reviewed

pytestmark = pytest.mark.e2e

EVENTS = [
    {"event_id": "1", "type": "user_input", "content": {"text": "Find me a flight from Paris to Rome next Friday"}},
    {"event_id": "2", "type": "tool_call", "content": {"tool": "search_flights", "params": {"from": "Paris", "to": "Rome"},
                                                       "status": "error", "error": "InvalidAirport: expected an IATA code"}},
    {"event_id": "3", "type": "tool_call", "content": {"tool": "lookup_airport", "params": {"city": "Paris"}, "result": "CDG"}},
    {"event_id": "4", "type": "tool_call", "content": {"tool": "search_flights", "params": {"from": "CDG", "to": "FCO"}, "result": ["AZ333"]}},
]


def test_no_key_reaches_the_servers_output_or_the_llm_requests(tmp_path):
    admin_key = "hsadmin_" + secrets.token_urlsafe(32)
    openai_key = "sk-test-" + secrets.token_urlsafe(24)
    log_path = tmp_path / "server.log"
    with OpenAIStub() as stub:
        server = ServerProcess(tmp_path / "data", {
            "HINDSIGHT_EMBEDDER": "hash", "HINDSIGHT_LOG_LEVEL": "DEBUG", "HINDSIGHT_ADMIN_KEY": admin_key,
            "HINDSIGHT_OPENAI_BASE_URL": stub.base_url, "HINDSIGHT_OPENAI_API_KEY": openai_key,
            "HINDSIGHT_LLM_MAX_RETRIES": "0",
        }, log_path=log_path)  # fmt: skip
        try:
            seen = _exercise(server.start().url, admin_key)
        finally:
            server.stop()
        stub_bodies = json.dumps(stub.state.requests)
        stub_headers = list(stub.state.headers)

    output = log_path.read_text(errors="replace")
    keys = {"admin": admin_key, "openai": openai_key, **seen}
    assert " DEBUG " in output and "hindsight is serving" in output  # the level took, the log is this server's
    assert stub_bodies != "[]"  # the LLM reviewer ran
    for name, key in keys.items():
        assert key not in output, f"the {name} key is in the server's output"
        assert key not in stub_bodies, f"the {name} key was sent to the LLM"
    for headers in stub_headers:
        lowered = {k.lower(): v for k, v in headers.items()}
        assert lowered.get("authorization") == f"Bearer {openai_key}"  # the one place the OpenAI key belongs
        others = json.dumps({k: v for k, v in lowered.items() if k != "authorization"})
        assert not [name for name, key in keys.items() if key in others]


def _exercise(url: str, admin_key: str) -> dict[str, str]:
    """Everything likely to log a key; returns the keys used (tenant keys, unknown ones)."""
    admin = {"Authorization": f"Bearer {admin_key}"}
    keys: dict[str, str] = {"unknown": "hs_" + secrets.token_urlsafe(32), "wrong admin": "hsadmin_" + secrets.token_urlsafe(32)}
    with httpx.Client(base_url=url, timeout=30) as http:
        assert http.post("/v1/tenants", json={"name": "x"}, headers={"Authorization": f"Bearer {keys['wrong admin']}"}).status_code == 401
        created = http.post("/v1/tenants", json={"name": "acme"}, headers=admin).json()
        keys["first"] = created["api_key"]
        keys["other tenant"] = http.post("/v1/tenants", json={"name": "globex"}, headers=admin).json()["api_key"]
        first = {"Authorization": f"Bearer {keys['first']}"}
        assert http.get("/v1/stats", headers=first).status_code == 200
        assert http.get("/v1/stats", headers={"Authorization": f"Bearer {keys['unknown']}"}).status_code == 401
        assert http.get("/v1/stats", headers={"Authorization": f"Token {keys['unknown']}"}).status_code == 401
        assert http.post("/v1/recall", json={"query": "x"}, headers=admin).status_code == 401  # admin key on tenant data
        # refused bodies, some carrying the key itself
        assert http.post("/v1/recall", content=f"{{not json {keys['first']}", headers=first).status_code == 400
        assert http.post("/v1/recall", json={"query": 5, "api_key": keys["first"]}, headers=first).status_code == 422
        assert http.post("/v1/tenants", json={"name": keys["first"] * 10_000}, headers=admin).status_code in (413, 422)
        assert http.post("/v1/trajectories", json={"goal": keys["first"]}, headers=first).status_code == 422
        # a rotation that revokes, then one that keeps; the revoked key is refused at once
        keys["second"] = http.post(f"/v1/tenants/{created['tenant_id']}/keys", json={}, headers=admin).json()["api_key"]
        assert http.get("/v1/stats", headers=first).status_code == 401
        keys["third"] = http.post(f"/v1/tenants/{created['tenant_id']}/keys", json={"revoke_old": False}, headers=admin).json()["api_key"]
        tenant = {"Authorization": f"Bearer {keys['second']}"}
        assert http.get("/v1/stats", headers={"Authorization": f"Bearer {keys['third']}"}).status_code == 200
        # a trajectory reviewed by the LLM
        assert http.post("/v1/trajectories", headers=tenant, json={
            "trajectory_id": "flight-1", "agent_id": "travel-bot", "goal": "Find a flight from Paris to Rome",
            "tools": ["search_flights", "lookup_airport"]}).status_code == 201
        assert http.post("/v1/trajectories/flight-1/events", headers=tenant, json={"events": EVENTS}).status_code == 202
        assert http.post("/v1/trajectories/flight-1/finalize", headers=tenant, json={"outcome": "success"}).status_code == 202
        http.headers.update(tenant)
        traj = wait_reviewed(http, "flight-1")
        assert traj["status"] == "reviewed" and traj["review"]["reviewer"].startswith("llm:")
        assert http.post("/v1/recall", json={"query": "a flight from Berlin to Madrid"}).status_code == 200
    return keys
