"""Which requests the embedded server hands to its ingest processes, and to which one."""
from __future__ import annotations

import json
import threading
import time
from collections import Counter
from multiprocessing.connection import Listener

import pytest

from local.ingest import IngestProcesses, default_count, forwarded


@pytest.mark.parametrize("method, path, expected", [
    ("POST", "/v1/trajectories", True),
    ("POST", "/v1/trajectories/t-1/events", True),
    ("POST", "/v1/trajectories/t%2F1/finalize", True),
    ("GET", "/v1/trajectories/t-1", False),
    ("GET", "/v1/trajectories/t-1/events", False),
    ("POST", "/v1/trajectories/t-1", False),
    ("POST", "/v1/trajectories/t-1/events/x", False),
    ("POST", "/v1/trajectories//events", False),
    ("POST", "/v1/recall", False),
    ("POST", "/v1/experiences", False),
    ("POST", "/v1/trajectoriesx", False),
    ("POST", "/v1/otlp/v1/traces", True),  # OTLP records tasks too: in a child, beside the events route
    ("GET", "/v1/otlp/v1/traces", False),
    ("POST", "/v1/otlp/v1/traces/x", False),
])  # fmt: skip
def test_only_the_requests_that_record_a_task_are_forwarded(method, path, expected):
    assert forwarded(method, path) is expected


@pytest.mark.parametrize("cpus, count", [(None, 0), (1, 0), (2, 3), (4, 5), (64, 8)])
def test_one_more_child_than_cores_and_none_on_one_core(cpus, count):
    assert default_count(cpus) == count


def test_a_keys_requests_go_to_one_child_and_keys_spread_over_all(tmp_path):
    procs = IngestProcesses(3, on_queued=lambda: None, base_dir=str(tmp_path))
    keys = [f"Bearer hs_key_{i}" for i in range(300)]
    chosen = [procs.child_for({"authorization": k}) for k in keys]
    assert chosen == [procs.child_for({"authorization": k}) for k in keys]  # stable
    spread = Counter(id(c) for c in chosen)
    assert len(spread) == 3 and min(spread.values()) > 60  # about a third each
    assert procs.child_for({}) is procs.child_for({"authorization": ""})


def test_a_request_no_child_can_take_is_left_to_the_server(tmp_path):
    """Children never started: no answer, so the server runs the request itself; none is lost."""
    procs = IngestProcesses(2, on_queued=lambda: None, base_dir=str(tmp_path))
    assert procs.run("POST", "/v1/trajectories/t/events", {"authorization": "Bearer k"}, b"{}") is None
    assert procs.ran_here == 1 and procs.sent == 0


def test_a_hand_off_past_its_deadline_is_answered_503_and_the_child_is_rested(tmp_path):
    """A child that takes the request and answers nothing: the thread waits the deadline, not for
    good, and answers 503 to retry; the next request runs in the server."""
    procs = IngestProcesses(1, on_queued=lambda: None, base_dir=str(tmp_path), deadline=0.5)
    child = procs.children[0]
    listener = Listener(child.address, family="AF_UNIX", authkey=procs._authkey)
    taken = []

    def accept() -> None:
        conn = listener.accept()
        taken.append(conn.recv())  # and never answers
        time.sleep(5)

    threading.Thread(target=accept, daemon=True).start()
    began = time.monotonic()
    answered = procs.run("POST", "/v1/trajectories/t/events", {"authorization": "Bearer k"}, b"{}")
    took = time.monotonic() - began
    assert answered is not None
    (status, headers, body), tenant = answered
    assert status == 503 and headers["Retry-After"] == "1" and tenant is None
    assert json.loads(body)["error"]["code"] == "unavailable"
    assert 0.4 < took < 3 and taken and procs.timed_out == 1
    assert procs.run("POST", "/v1/trajectories/t/events", {"authorization": "Bearer k"}, b"{}") is None
    listener.close()
