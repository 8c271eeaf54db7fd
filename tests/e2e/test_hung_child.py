"""An ingest process that stops answering (SIGSTOP: alive, its sockets open, nothing read) does not
stop the server: health and requests that need no child answer at once, other tenants' appends are
made, the stopped child is killed and another started, and its in-flight requests are answered."""
from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import httpx
import pytest

from tests.e2e.test_ingest_processes import ADMIN, children, wait_for_children

pytestmark = pytest.mark.e2e


def tenant_client(server, name: str, timeout: float = 30.0) -> httpx.Client:
    body = httpx.post(f"{server.url}/v1/tenants", json={"name": name}, headers={"Authorization": f"Bearer {ADMIN}"}).json()
    return httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {body['api_key']}"}, timeout=timeout)


def _state(pid: int) -> str:
    try:
        return next(line.split()[1] for line in Path(f"/proc/{pid}/status").read_text().splitlines() if line.startswith("State:"))
    except (OSError, StopIteration):
        return "gone"


def test_a_stopped_child_is_replaced_while_health_and_other_tenants_keep_answering(start_server):
    server = start_server({"HINDSIGHT_ADMIN_KEY": ADMIN, "HINDSIGHT_EMBEDDER": "hash", "HINDSIGHT_INGEST_PROCESSES": "2",
                           "HINDSIGHT_THREADS": "8"})
    kids = wait_for_children(server, 2)
    clients = [tenant_client(server, f"tenant-{i}") for i in range(24)]  # keys spread over both children: more than the threads on each
    for i, c in enumerate(clients):
        assert c.post("/v1/trajectories", json={"trajectory_id": "t", "agent_id": "a", "goal": "g"}).status_code == 201
    stopped = kids[0]
    os.kill(stopped, signal.SIGSTOP)
    try:
        answers: dict[int, list[int]] = {i: [] for i in range(len(clients))}

        def append(i: int) -> None:  # each tenant appends, whichever child its key goes to
            for b in range(4):
                resp = clients[i].post("/v1/trajectories/t/events", json={"events": [
                    {"event_id": f"e{b}", "type": "tool_call", "content": {"tool": "sql", "status": "ok"}}]})
                answers[i].append(resp.status_code)

        threads = [threading.Thread(target=append, args=(i,), daemon=True) for i in range(len(clients))]
        for t in threads:
            t.start()
        # meanwhile the server answers what needs no child, at once, more than once
        health = []
        for _ in range(5):
            began = time.monotonic()
            resp = httpx.get(f"{server.url}/v1/health", timeout=2.0)  # raises past 2 s
            health.append((resp.status_code, time.monotonic() - began))
            time.sleep(0.3)
        assert all(code == 200 and took < 2.0 for code, took in health), health
        with httpx.Client(base_url=server.url, headers=dict(clients[0].headers), timeout=2.0) as reader:
            assert reader.get("/v1/trajectories/t").status_code == 200
        for t in threads:
            t.join(30)
        assert not any(t.is_alive() for t in threads), "appends hung"
        # every append was made: by a child, by the server, or after the stopped child was replaced
        assert all(codes == [202] * 4 for codes in answers.values()), answers
        for c in clients:
            assert c.get("/v1/trajectories/t").json()["event_count"] == 4
        deadline = time.monotonic() + 20  # the stopped child is killed and another started
        while time.monotonic() < deadline and (_state(stopped) not in ("gone", "Z") or len(children(server.proc.pid)) < 2):
            time.sleep(0.1)
        assert _state(stopped) in ("gone", "Z"), _state(stopped)
        now = children(server.proc.pid)
        assert stopped not in now and len(now) == 2
        assert "did not answer a ping" in server.log_path.read_text()
    finally:
        if _state(stopped) == "T":
            os.kill(stopped, signal.SIGCONT)
        for c in clients:
            c.close()
