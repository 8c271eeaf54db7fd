"""A newcomer outside the repository's virtualenv: devtools/newcomer.py --steps outside makes a clean
virtualenv with docs/hooks.md's own setup block (pip install ./sdk/python[cli]), runs the hook
commands of its settings block as a coding agent runs them until the next session is given the
lesson, then follows a framework example's documented commands in the virtualenv they make."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# the wheels pip installs from, kept between runs (fetched from the index on the first)
WHEELHOUSE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "hindsight-newcomer" / "wheels"
pytestmark = pytest.mark.e2e


def test_a_clean_virtualenv_follows_the_hooks_docs_and_a_framework_example_to_a_recalled_lesson():
    # the server runs from the clone on this test run's virtualenv; every step after it runs in
    # virtualenvs of its own, with no virtualenv on PATH
    out = subprocess.run([sys.executable, str(ROOT / "devtools" / "newcomer.py"), "--venv", sys.prefix, "--steps", "outside",
                          "--wheelhouse", str(WHEELHOUSE), "--timeout", "300"], cwd=ROOT, capture_output=True, text=True, timeout=900)  # fmt: skip
    assert out.returncode == 0, out.stdout + out.stderr
    for step in ("docs/hooks.md: hindsight-xp installed in a clean virtualenv", "docs/hooks.md hooks: lesson recalled",
                 "framework example (langchain) in its own virtualenv: lesson recalled"):  # fmt: skip
        assert step in out.stdout
    assert "MCP example" not in out.stdout  # the steps inside the repository's virtualenv were not run
