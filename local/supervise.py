"""What the embedded server's child processes (``local.ingest``, ``local.review``) share: the command
that starts one, how often the server looks for one that has exited, how often at most it starts
one again, and how it stops one.
"""
from __future__ import annotations

import os
import socket
import struct
import subprocess
import sys
import time
from multiprocessing.connection import Connection, answer_challenge, deliver_challenge
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


def connect(address: str, authkey: bytes, timeout: float) -> Connection:
    """A connection to a child's listener, as ``multiprocessing.connection.Client`` makes it, where
    no step waits longer than ``timeout``: the connect, the key's handshake, and every later read
    or write (the socket's own timeouts). A child that stopped answering (stopped, or stuck) makes
    the step raise ``OSError`` instead of holding the caller's thread for good."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(timeout)  # the connect: a stopped child's backlog fills, then connects wait
        sock.connect(address)
        sock.setblocking(True)  # Connection reads the descriptor itself: blocking, with the kernel's timeouts
        whole = int(timeout)
        limit = struct.pack("ll", whole, int((timeout - whole) * 1_000_000))
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, limit)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, limit)
        conn = Connection(sock.detach())
    except BaseException:
        sock.close()
        raise
    try:
        answer_challenge(conn, authkey)
        deliver_challenge(conn, authkey)
    except BaseException:
        conn.close()
        raise
    return conn


def command(module: str, *args: str) -> list[str]:
    """The command that runs ``module`` (``local.ingest``, ``local.review``) as a child."""
    return [sys.executable, "-m", module, *args]


def environment(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """``env`` (the server's by default) with the packages' folder first on the child's import path,
    whatever its working directory."""
    out = dict(os.environ if env is None else env)
    out["PYTHONPATH"] = os.pathsep.join(p for p in (ROOT, out.get("PYTHONPATH")) if p)
    return out
