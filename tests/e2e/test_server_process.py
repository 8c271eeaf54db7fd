"""The real server process, started as `make run` starts it, driven over real HTTP."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.e2e


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, data_dir: Path, port: int, env: dict[str, str] | None = None) -> None:
        self.data_dir, self.port = data_dir, port
        self.extra_env = env or {}  # more HINDSIGHT_* settings for this server
        self.url = f"http://127.0.0.1:{port}"
        self.proc: subprocess.Popen | None = None

    def start(self) -> "Server":
        env = {k: v for k, v in os.environ.items() if not k.startswith("HINDSIGHT_")}
        env |= {"PORT": str(self.port), "HINDSIGHT_DATA_DIR": str(self.data_dir), "HINDSIGHT_WORKER_POLL_SECONDS": "0.05"} | self.extra_env
        self.log = open(self.data_dir.parent / f"server-{self.port}.log", "ab")
        self.proc = subprocess.Popen([sys.executable, "server.py"], cwd=ROOT, env=env, stdout=self.log, stderr=self.log)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, (self.data_dir.parent / f"server-{self.port}.log").read_text()
            try:
                if httpx.get(f"{self.url}/v1/health", timeout=1).status_code == 200:
                    return self
            except httpx.TransportError:
                time.sleep(0.1)
        raise TimeoutError("server did not become healthy")

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait(10)
        self.log.close()


@pytest.fixture()
def server(tmp_path):
    srv = Server(tmp_path / "data", free_port())
    srv.data_dir.mkdir()
    yield srv.start()
    srv.stop()


def wait_reviewed(client: httpx.Client, tid: str, timeout: float = 20) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        traj = client.get(f"/v1/trajectories/{tid}").json()
        if traj["status"] in ("reviewed", "review_failed"):
            return traj
        time.sleep(0.05)
    raise TimeoutError(f"trajectory {tid} was not reviewed")


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
