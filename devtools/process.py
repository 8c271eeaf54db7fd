"""Stopping the child processes that tests and benchmarks start (servers, the local model)."""
from __future__ import annotations

import signal
import subprocess


def terminate(proc: subprocess.Popen | None, timeout: float = 10.0, sig: int = signal.SIGTERM) -> None:
    """Send ``sig`` to a child that still runs and wait; SIGKILL it when it does not stop in time."""
    if proc is not None and proc.poll() is None:
        proc.send_signal(sig)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout)
