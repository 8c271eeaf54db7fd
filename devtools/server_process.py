"""The real server, ``python -m local.server`` as ``make run`` starts it, on a free port.

Tests and benchmarks drive it over HTTP only. The child gets the caller's environment without its
``HINDSIGHT_*`` variables (a developer's settings must not leak into a run), then ``env``.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from devtools.net import HOST, free_port, wait_http
from devtools.process import terminate

ROOT = Path(__file__).resolve().parents[1]


def server_command(root: Path = ROOT) -> list[str]:
    """What starts the embedded server of the checkout at ``root`` (a benchmark's git ref exported
    elsewhere may be from before the server became the ``local`` package)."""
    return [sys.executable, "-m", "local.server"] if (root / "local" / "server.py").exists() else [sys.executable, "server.py"]


class ServerProcess:
    """``root``: the checkout whose server runs (default: this one; a benchmark may run a git ref's
    code exported beside it). A subclass may change ``environment()`` and ``new_session`` (the child
    in its own session: a Ctrl-C of the caller's terminal does not reach it)."""

    new_session = False

    def __init__(self, data_dir: str | Path, env: dict[str, str] | None = None, *, port: int | None = None,
                 log_path: str | Path | None = None, inherit_hindsight_env: bool = False,
                 root: str | Path | None = None) -> None:  # fmt: skip
        self.root = Path(root) if root else ROOT
        self.data_dir = Path(data_dir)
        self.port = port or free_port()
        self.url = f"http://{HOST}:{self.port}"
        self.extra_env = dict(env or {})
        self.log_path = Path(log_path) if log_path else self.data_dir.parent / f"server-{self.port}.log"
        self.inherit_hindsight_env = inherit_hindsight_env
        self.proc: subprocess.Popen | None = None
        self._log: Any = None

    def environment(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if self.inherit_hindsight_env or not k.startswith("HINDSIGHT_")}
        env |= {"PORT": str(self.port), "HINDSIGHT_DATA_DIR": str(self.data_dir), "HINDSIGHT_WORKER_POLL_SECONDS": "0.05"}
        return env | self.extra_env

    def start(self, timeout: float = 60.0) -> "ServerProcess":
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self._log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(server_command(self.root), cwd=self.root, env=self.environment(),
                                     stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     start_new_session=self.new_session)  # fmt: skip
        try:
            wait_http(f"{self.url}/v1/health", self.proc, timeout, self.log_path)
        except BaseException:
            self.stop()
            raise
        return self

    @property
    def admin_key(self) -> str:
        """The admin key given in ``env``, else the one the server wrote into its data directory."""
        return self.extra_env.get("HINDSIGHT_ADMIN_KEY") or (self.data_dir / "admin_key").read_text().strip()

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 10.0) -> None:
        """Send ``sig`` (SIGKILL to simulate a crash) and wait; SIGKILL if it does not stop in time."""
        proc, self.proc = self.proc, None
        terminate(proc, timeout, sig)
        if self._log is not None:
            self._log.close()
            self._log = None

    def __enter__(self) -> "ServerProcess":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
