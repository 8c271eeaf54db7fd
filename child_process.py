"""What the embedded server's child processes (``ingest_process``, ``review_process``) share: how
often the server looks for one that has exited, how often at most it starts one again, and how it
stops one.

It lives beside ``server.py``, outside ``chalicelib/``: only the embedded server runs children.
"""
from __future__ import annotations

import subprocess
import time
from typing import Callable

# how often the server looks for a child that has exited, to start it again; and at most how often
# it starts one child (a child that cannot start, say its data directory unreadable, is not restarted
# in a loop)
WATCH_SECONDS = 0.5
RESTART_SECONDS = 5.0


def restart_due(proc: subprocess.Popen | None, started_at: float) -> bool:
    """Whether ``proc`` has exited and was started (``started_at``, monotonic) ``RESTART_SECONDS``
    ago or more: a child that fails at start is started again at that pace, not in a loop."""
    return proc is not None and proc.poll() is not None and time.monotonic() - started_at >= RESTART_SECONDS


def stop(proc: subprocess.Popen, timeout: float, close_stdin: Callable[[], None]) -> None:
    """``close_stdin`` (the child's signal to leave: it finishes what is under way, then exits),
    then wait ``timeout`` for it to leave; kill it if it has not."""
    close_stdin()
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
