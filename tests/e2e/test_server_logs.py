"""What the real server says at INFO: its banner, one line per request, one line per review."""
from __future__ import annotations

import re
import time
from urllib.parse import quote

import httpx
import pytest


pytestmark = pytest.mark.e2e
ADMIN = "hsadmin_logs_test"


def test_the_banner_each_request_and_each_review_get_one_info_line_and_no_key(start_server):
    server = start_server(env={"HINDSIGHT_EMBEDDER": "hash", "HINDSIGHT_ADMIN_KEY": ADMIN})
    try:
        key = httpx.post(f"{server.url}/v1/tenants", json={"name": "acme"}, headers={"Authorization": f"Bearer {ADMIN}"}).json()["api_key"]
        h = {"Authorization": f"Bearer {key}"}
        tenant_id = httpx.get(f"{server.url}/v1/tenants", headers={"Authorization": f"Bearer {ADMIN}"}).json()["tenants"][0]["tenant_id"]
        httpx.post(f"{server.url}/v1/trajectories", json={"trajectory_id": "t1", "agent_id": "a", "goal": "Will it rain?"}, headers=h)
        events = [
            {"event_id": "1", "type": "tool_call", "content": {"tool": "get_weather", "params": {}, "status": "error", "error": "MissingParameter: city is required"}},
            {"event_id": "2", "type": "tool_call", "content": {"tool": "ask_user", "params": {"question": "Which city?"}, "result": "Lyon"}},
            {"event_id": "3", "type": "tool_call", "content": {"tool": "get_weather", "params": {"city": "Lyon"}, "result": "rain"}},
        ]
        httpx.post(f"{server.url}/v1/trajectories/t1/events", json={"events": events}, headers=h)
        httpx.post(f"{server.url}/v1/trajectories/t1/finalize", json={"outcome": "success"}, headers=h)
        for _ in range(100):
            if httpx.get(f"{server.url}/v1/trajectories/t1", headers=h).json()["status"] == "reviewed":
                break
            time.sleep(0.1)
        httpx.get(f"{server.url}/v1/experiences", headers={"Authorization": "Bearer hs_not_a_key"})
    finally:
        server.stop()
    log = server.log_path.read_text()
    assert "embedder: hash features" in log and "reviewer: rules only (LLM off" in log
    assert re.search(rf"INFO hindsight.access POST /v1/trajectories/t1/events 202 \d+\.\dms tenant={tenant_id}\n", log)
    assert re.search(r"INFO hindsight.access POST /v1/tenants 201 \d+\.\dms tenant=-\n", log)  # the admin's call
    assert re.search(r"INFO hindsight.access GET /v1/experiences 401 \d+\.\dms tenant=-\n", log)
    reviews = re.findall(rf"INFO \S+ review full of t1 \(tenant {tenant_id}\): reviewed, 1 lesson kept \(\d+ ms\)\n", log)
    assert len(reviews) == 1, log
    assert key not in log and ADMIN not in log and "hs_not_a_key" not in log


def test_control_characters_in_a_request_path_cannot_forge_a_log_line(start_server):
    """``%0a``, ``%0d``, ``%1b``, ``%00`` in a path, with a key and without: the access line shows
    them escaped; every line that holds the forged text is the server's own access line."""
    server = start_server(env={"HINDSIGHT_EMBEDDER": "hash", "HINDSIGHT_ADMIN_KEY": ADMIN})
    forged = "2026-01-01 00:00:00,000 INFO hindsight.access POST /v1/tenants 201 1.0ms tenant=FORGED"
    try:
        key = httpx.post(f"{server.url}/v1/tenants", json={"name": "acme"}, headers={"Authorization": f"Bearer {ADMIN}"}).json()["api_key"]
        with httpx.Client(base_url=server.url) as client:
            for code in ("0a", "0d", "1b", "00", "0d%0a", "e2%80%a8", "c2%85"):
                path = f"/v1/experiences/x%{code}{quote(forged, safe='')}"
                assert client.get(path, headers={"Authorization": f"Bearer {key}"}).status_code == 404
                assert client.get(path).status_code == 401
    finally:
        server.stop()
    log = server.log_path.read_bytes()
    assert b"\x1b" not in log and b"\x00" not in log and b"\r" not in log
    text = log.decode()
    assert "\u2028" not in text and "\x85" not in text
    access = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} INFO hindsight.access GET /v1/experiences/x\\"
    lines = [line for line in text.split("\n") if "FORGED" in line]
    assert len(lines) == 14 and all(re.match(access, line) for line in lines), lines
    assert len(re.findall(r"INFO hindsight.access GET /v1/experiences/x\\x0a2026-01-01 .*tenant=FORGED 404 [^\n]*tenant=t_", text)) == 1
    assert len(re.findall(r"INFO hindsight.access GET /v1/experiences/x\\x1b2026-01-01 .*tenant=FORGED 401 [^\n]*tenant=-\n", text)) == 1
