"""The embedded server's ingest processes (``local.ingest``), through the real server over HTTP:
recording a task in them is the same as in the server, a tenant's rate limit is one across them, a
child that dies costs nothing but its core, and none outlives the server."""
from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import httpx
import pytest

from bench._harness import child_pids
from tests.support.polling import wait_reviewed

pytestmark = pytest.mark.e2e

ADMIN = "hsadmin_ingest_processes_test"


def children(pid: int, script: str = "local.ingest") -> list[int]:
    """The server's child processes running ``script`` (its review process runs another)."""
    return [c for c in child_pids(pid) if script in _cmdline(c)]


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:  # gone meanwhile
        return ""


def tenant(server, name: str = "acme") -> tuple[str, httpx.Client]:
    body = httpx.post(f"{server.url}/v1/tenants", json={"name": name}, headers={"Authorization": f"Bearer {ADMIN}"}).json()
    return body["tenant_id"], httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {body['api_key']}"}, timeout=30)


def failing_calls(n: int, first: int = 0) -> list[dict]:
    return [{"event_id": f"e{first + i}", "type": "tool_call",
             "content": {"tool": "sql", "params": {"q": "update"}, "status": "error", "error": "PermissionError: read only"}}
            for i in range(n)]  # fmt: skip


def served_by_children(server) -> int:
    """Ingest requests the children answered, as the server's log says at exit (read after stop)."""
    return sum(int(line.rsplit(" ", 1)[1]) for line in server.log_path.read_text().splitlines() if "ingest answered by children:" in line)


@pytest.fixture()
def server(start_server):
    return start_server({"HINDSIGHT_ADMIN_KEY": ADMIN, "HINDSIGHT_EMBEDDER": "hash", "HINDSIGHT_INGEST_PROCESSES": "2"})


def wait_for_children(server, count: int, timeout: float = 30.0) -> list[int]:
    """The server's ingest processes, once they all listen."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if "ingest: child processes listening" in server.log_path.read_text():
            kids = children(server.proc.pid)
            assert len(kids) == count, kids
            return kids
        time.sleep(0.05)
    raise AssertionError(f"the ingest processes did not start:\n{server.log_tail()}")


def test_a_task_recorded_through_the_children_is_stored_reviewed_and_logged_with_its_tenant(server):
    assert len(wait_for_children(server, 2)) == 2
    tenant_id, client = tenant(server)
    with client:
        assert client.post("/v1/trajectories", json={"trajectory_id": "t1", "agent_id": "a", "goal": "update sales"}).status_code == 201
        assert client.post("/v1/trajectories", json={"trajectory_id": "t1", "agent_id": "a", "goal": "update sales"}).status_code == 200
        assert client.post("/v1/trajectories/t1/events", json={"events": failing_calls(3)}).json() == {"accepted": 3, "duplicates": 0}
        assert client.post("/v1/trajectories/t1/events", json={"events": failing_calls(4)}).json() == {"accepted": 1, "duplicates": 3}
        bad = client.post("/v1/trajectories/t1/events", json={"events": "none"})
        assert bad.status_code == 422 and bad.json()["error"]["code"] == "invalid_input"
        assert client.post("/v1/trajectories/nope/events", json={"events": failing_calls(1)}).status_code == 404
        assert client.post("/v1/trajectories/t1/finalize", json={"outcome": "failure"}).status_code == 202
        traj = wait_reviewed(client, "t1", timeout=10)  # the server's worker was woken by the child's answer
        assert traj["status"] == "reviewed" and traj["event_count"] == 4
        events = client.get("/v1/trajectories/t1/events").json()
        assert [e["event_id"] for e in events["events"]] == ["e0", "e1", "e2", "e3"]
    server.stop()
    log = server.log_path.read_text()
    assert "POST /v1/trajectories/t1/events 202" in log and f"tenant={tenant_id}" in log
    assert all(f"tenant={tenant_id}" in line for line in log.splitlines() if "POST /v1/trajectories" in line and " 20" in line)
    assert served_by_children(server) >= 6  # the requests ran in the children, not in the server


def test_a_tenants_rate_limit_is_one_bucket_across_the_server_and_its_children(start_server):
    server = start_server({"HINDSIGHT_ADMIN_KEY": ADMIN, "HINDSIGHT_EMBEDDER": "hash", "HINDSIGHT_INGEST_PROCESSES": "3",
                           "HINDSIGHT_RATE_LIMIT_PER_SECOND": "0.01", "HINDSIGHT_RATE_LIMIT_BURST": "12"})
    wait_for_children(server, 3)
    _, client = tenant(server)
    with client:
        answers = []
        for i in range(10):  # appends (a child) and reads and recalls (the server), one bucket of 12
            answers.append(client.post("/v1/trajectories", json={"trajectory_id": f"t{i}", "agent_id": "a", "goal": "g"}).status_code)
            answers.append(client.get(f"/v1/trajectories/t{i}").status_code)
        assert answers.count(201) + answers.count(200) == 12 and answers.count(429) == 8
    server.stop()
    assert served_by_children(server) >= 1


def test_a_killed_child_costs_no_request_is_started_again_and_none_outlives_the_server(server):
    kids = wait_for_children(server, 2)
    _, client = tenant(server)
    with client:
        assert client.post("/v1/trajectories", json={"trajectory_id": "t1", "agent_id": "a", "goal": "g"}).status_code == 201
        for pid in kids:
            os.kill(pid, signal.SIGKILL)
        for b in range(5):  # the children are gone: the server runs each request itself
            resp = client.post("/v1/trajectories/t1/events", json={"events": failing_calls(2, first=2 * b)})
            assert resp.status_code == 202, resp.text
        assert client.get("/v1/trajectories/t1").json()["event_count"] == 10
        deadline = time.monotonic() + 20  # and the children are started again
        while time.monotonic() < deadline and len(set(children(server.proc.pid)) - set(kids)) < 2:
            time.sleep(0.1)
        revived = set(children(server.proc.pid)) - set(kids)
        assert len(revived) == 2
    pid = server.proc.pid
    server.stop()
    assert not Path(f"/proc/{pid}").exists()
    for kid in [*kids, *revived]:
        assert not Path(f"/proc/{kid}").exists() or "zombie" in Path(f"/proc/{kid}/status").read_text()


def test_children_leave_with_the_server_even_when_it_is_killed(server):
    kids = wait_for_children(server, 2)
    reviews = children(server.proc.pid, "local.review")
    assert len(reviews) == 1  # the review process leaves too
    kids += reviews
    server.stop(signal.SIGKILL)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(Path(f"/proc/{k}").exists() and "zombie" not in Path(f"/proc/{k}/status").read_text()
                                              for k in kids):
        time.sleep(0.05)
    assert all(not Path(f"/proc/{k}").exists() or "zombie" in Path(f"/proc/{k}/status").read_text() for k in kids)
