"""Local sockets for tests and benchmarks: a free port, and waiting for an HTTP endpoint."""
from __future__ import annotations

import socket
import subprocess
import time
from pathlib import Path

HOST = "127.0.0.1"  # tests and benchmarks never talk to anything else


def free_port(host: str = HOST) -> int:
    """A port nobody listens on right now (the OS picks it; another process may take it later)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def wait_http(url: str, proc: subprocess.Popen | None = None, timeout: float = 60.0, log: Path | None = None) -> None:
    """Return once ``url`` answers 200; raise if ``proc`` exits first or ``timeout`` passes."""
    import httpx  # not needed by callers that only want a port

    deadline = time.monotonic() + timeout
    with httpx.Client(trust_env=False, timeout=1.0) as client:
        while time.monotonic() < deadline:
            if proc is not None and proc.poll() is not None:
                tail = log.read_text(errors="replace")[-4000:] if log is not None and log.exists() else ""
                raise RuntimeError(f"process exited with {proc.returncode} before {url} answered:\n{tail}")
            try:
                if client.get(url).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.05)
    raise TimeoutError(f"{url} did not answer 200 within {timeout:.0f} s")
