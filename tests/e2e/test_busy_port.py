"""A second server on a port already taken (a second `make run`) says so in one line that names the
port and HINDSIGHT_PORT, and exits: no "serving" line, no traceback."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

import pytest

from devtools.server_process import ROOT

pytestmark = pytest.mark.e2e


def test_a_busy_port_is_one_line_naming_it_and_hindsight_port(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        env = {k: v for k, v in os.environ.items() if not k.startswith("HINDSIGHT_")}
        env |= {"HINDSIGHT_PORT": str(port), "PORT": str(port), "HINDSIGHT_DATA_DIR": str(tmp_path / "data"),
                "HINDSIGHT_EMBEDDER": "hash"}  # fmt: skip
        started = time.monotonic()
        out = subprocess.run([sys.executable, "-m", "local.server"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
        elapsed = time.monotonic() - started
    lines = [line for line in (out.stdout + out.stderr).splitlines() if line.strip()]
    assert out.returncode != 0
    assert len(lines) == 1, lines
    assert str(port) in lines[0] and "HINDSIGHT_PORT" in lines[0] and "in use" in lines[0]
    assert "Traceback" not in out.stderr and "serving" not in out.stdout
    assert elapsed < 60  # before the model and the children, not after
