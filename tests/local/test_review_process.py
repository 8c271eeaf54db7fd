"""The server's handle on its review process (``local.review.ReviewProcess``), with real child
processes standing in for the worker: a wake-up never blocks a request, a child that exits is
started again, and one that keeps failing at start leaves the reviews to the server."""
from __future__ import annotations

import sys
import threading
import time

import pytest

from local import review as review_process
from local import supervise as child_process
from local.review import ReviewProcess


class Woken:
    def __init__(self) -> None:
        self.count = 0

    def notify(self) -> None:
        self.count += 1


def wait_until(condition, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return False


@pytest.fixture()
def quick(monkeypatch):
    monkeypatch.setattr(child_process, "WATCH_SECONDS", 0.02)
    monkeypatch.setattr(child_process, "RESTART_SECONDS", 0.05)


def test_a_wake_up_never_blocks_when_the_child_does_not_read(quick):
    proc = ReviewProcess(lambda: Woken(), argv=[sys.executable, "-c", "import time; time.sleep(30)"]).start()
    try:
        started = time.perf_counter()
        for _ in range(200_000):  # far more than a pipe holds
            proc.notify()
        assert time.perf_counter() - started < 5.0
    finally:
        proc.close(timeout=0.5)  # the sleeper does not read its stdin: killed
    assert proc.proc is None


def test_the_child_reads_each_wake_up_and_is_told_to_leave_before_its_stdin_closes(quick, tmp_path):
    out = tmp_path / "woken"
    script = ("import os, sys\nn = b''\nwhile True:\n    b = os.read(0, 4096)\n    if not b: break\n    n += b\n"
              f"open({str(out)!r}, 'wb').write(n)\n")
    proc = ReviewProcess(lambda: Woken(), argv=[sys.executable, "-c", script]).start()
    for _ in range(5):
        proc.notify()
    child = proc.proc
    proc.close(timeout=5)
    assert child.returncode == 0 and out.read_bytes() == b"!" * 5 + review_process.LEAVE


def test_a_child_that_exits_is_started_again(quick, tmp_path, monkeypatch):
    runs = tmp_path / "runs"
    script = f"import time; open({str(runs)!r}, 'a').write('x'); time.sleep(0.5)"
    monkeypatch.setattr(review_process, "EARLY_EXIT_SECONDS", 0.1)  # these exits are not early ones
    fallback_called = threading.Event()
    proc = ReviewProcess(lambda: fallback_called.set() or Woken(), argv=[sys.executable, "-c", script]).start()
    try:
        assert wait_until(lambda: runs.exists() and len(runs.read_text()) >= 3)
        assert not fallback_called.is_set() and not proc.given_up
    finally:
        proc.close(timeout=2)


def test_one_that_keeps_failing_at_start_leaves_reviews_to_the_server(quick):
    server_worker = Woken()
    calls = []
    proc = ReviewProcess(lambda: calls.append(1) or server_worker, argv=[sys.executable, "-c", "raise SystemExit(3)"]).start()
    try:
        assert wait_until(lambda: proc.given_up)
        time.sleep(0.2)
        assert calls == [1]  # once
        proc.notify()
        assert server_worker.count == 1  # wake-ups now go to the server's own worker
    finally:
        proc.close(timeout=2)
