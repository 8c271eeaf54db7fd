"""The embedded server's review worker in a process of its own (``local.review``), through the
real server over HTTP: it reviews what the server queues, the server recalls what it learned at
once, a killed one is replaced without losing a review, and the setting keeps it in the server."""
from __future__ import annotations

import os
import signal
import time

import httpx
import pytest

from tests.e2e.test_ingest_processes import children, failing_calls
from tests.support.polling import wait_reviewed

pytestmark = pytest.mark.e2e

ADMIN = "hsadmin_review_process_test"
ENV = {"HINDSIGHT_ADMIN_KEY": ADMIN, "HINDSIGHT_EMBEDDER": "hash", "HINDSIGHT_INGEST_PROCESSES": "1"}


def tenant(server, name: str) -> httpx.Client:
    body = httpx.post(f"{server.url}/v1/tenants", json={"name": name}, headers={"Authorization": f"Bearer {ADMIN}"}).json()
    return httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {body['api_key']}"}, timeout=30)


def review_child(server, timeout: float = 20.0, other_than: int | None = None) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = [c for c in children(server.proc.pid, "local.review") if c != other_than]
        if found:
            return found[0]
        time.sleep(0.05)
    raise AssertionError(f"no review process:\n{server.log_tail()}")


def record(client: httpx.Client, tid: str, goal: str) -> None:
    assert client.post("/v1/trajectories", json={"trajectory_id": tid, "agent_id": "a", "goal": goal}).status_code == 201
    assert client.post(f"/v1/trajectories/{tid}/events", json={"events": failing_calls(3)}).status_code == 202
    assert client.post(f"/v1/trajectories/{tid}/finalize", json={"outcome": "failure"}).status_code == 202


def recalled(client: httpx.Client, query: str) -> list[str]:
    answer = client.post("/v1/recall", json={"query": query, "agent_id": "a", "tools": ["sql"]})
    assert answer.status_code == 200, answer.text
    return [h["experience"]["experience_id"] for h in answer.json()["hits"]]


def test_the_child_reviews_and_the_server_recalls_what_it_learned(start_server):
    server = start_server(ENV)
    child = review_child(server)
    with tenant(server, "acme") as client:
        assert recalled(client, "update the sales table") == []  # the server's index holds the tenant, empty
        os.kill(child, signal.SIGSTOP)  # reviews wait for the child: the server does not run them
        try:
            record(client, "t1", "update the sales table")
            time.sleep(2.0)
            assert client.get("/v1/trajectories/t1").json()["status"] == "finalized"
        finally:
            os.kill(child, signal.SIGCONT)
        traj = wait_reviewed(client, "t1", timeout=15)
        assert traj["status"] == "reviewed" and traj["experience_ids"]
        # the lesson the child wrote is in the server's index, without a restart
        assert set(traj["experience_ids"]) & set(recalled(client, "update the sales table"))
    server.stop()
    assert "reviews: a child process" in server.log_path.read_text()


def test_a_killed_child_is_replaced_and_no_review_is_lost(start_server):
    server = start_server(ENV)
    child = review_child(server)
    with tenant(server, "acme") as client:
        os.kill(child, signal.SIGSTOP)
        record(client, "t1", "update the sales table")  # queued while the child cannot run it
        os.kill(child, signal.SIGKILL)
        replacement = review_child(server, other_than=child)
        assert replacement != child
        traj = wait_reviewed(client, "t1", timeout=20)
        assert traj["status"] == "reviewed" and traj["experience_ids"]
        record(client, "t2", "update the sales table again")
        assert wait_reviewed(client, "t2", timeout=15)["status"] == "reviewed"
        assert set(traj["experience_ids"]) & set(recalled(client, "update the sales table"))
    server.stop()
    assert "review process" in server.log_path.read_text() and "exited" in server.log_path.read_text()


def test_the_setting_keeps_reviews_in_the_server(start_server):
    server = start_server({**ENV, "HINDSIGHT_REVIEW_PROCESS": "false"})
    with tenant(server, "acme") as client:
        record(client, "t1", "update the sales table")
        traj = wait_reviewed(client, "t1", timeout=15)
        assert traj["status"] == "reviewed"
        assert set(traj["experience_ids"]) & set(recalled(client, "update the sales table"))
        assert children(server.proc.pid, "local.review") == []
