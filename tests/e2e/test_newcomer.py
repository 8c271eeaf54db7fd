"""A new user's first hour, played by devtools/newcomer.py from a fresh clone of this repository:
`make run`, the README recipe, the SDK quick start, the CLI examples and the MCP example, each
taken from the documentation as it stands."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.e2e


def test_a_fresh_clone_followed_literally_recalls_the_lesson_everywhere():
    # The clone reuses this test run's virtualenv (`make test` built it): the install is measured
    # by running the script without --venv, not on every test run.
    out = subprocess.run([sys.executable, str(ROOT / "devtools" / "newcomer.py"), "--venv", sys.prefix, "--steps", "inside", "--timeout", "300"],
                         cwd=ROOT, capture_output=True, text=True, timeout=900)  # fmt: skip
    assert out.returncode == 0, out.stdout + out.stderr
    for step in ("README recipe run 2: lesson recalled", "SDK quick start: run 2 used the lesson",
                 "CLI examples run 2: lesson recalled", "MCP example: lesson recalled"):  # fmt: skip
        assert step in out.stdout
