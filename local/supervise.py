"""What the embedded server's child processes (``local.ingest``, ``local.review``) share: the command
that starts one, how often the server looks for one that has exited, how often at most it starts
one again, and how it stops one.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Mapping, TypeGuard

# the folder that holds the ``local`` and ``chalicelib`` packages
ROOT = str(Path(__file__).resolve().parents[1])

# how often the server looks for a child that has exited, to start it again; and at most how often
# it starts one child (a child that cannot start, say its data directory unreadable, is not restarted
# in a loop)
WATCH_SECONDS = 0.5
RESTART_SECONDS = 5.0


def restart_due(proc: subprocess.Popen[Any] | None, started_at: float) -> TypeGuard[subprocess.Popen[Any]]:
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


def command(module: str, *args: str) -> list[str]:
    """The command that runs ``module`` (``local.ingest``, ``local.review``) as a child."""
    return [sys.executable, "-m", module, *args]


def environment(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """``env`` (the server's by default) with the packages' folder first on the child's import path,
    whatever its working directory."""
    out = dict(os.environ if env is None else env)
    out["PYTHONPATH"] = os.pathsep.join(p for p in (ROOT, out.get("PYTHONPATH")) if p)
    return out
