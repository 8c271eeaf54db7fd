"""Each framework example installs what it needs with the commands its docstring gives, in a
virtualenv of its own (pip prints no ERROR), and then learns its lesson against the real server.

The commands run as written, from a directory laid out as a clone (the SDK and the examples copied
in), with no access to the project's .venv."""
from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from devtools.server_process import ROOT, ServerProcess

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def documented_commands(example: Path) -> list[str]:
    """The shell lines of the example's docstring after `make run` (which the test stands in for)."""
    doc = ast.get_docstring(ast.parse(example.read_text())) or ""
    lines = [line.split("  #")[0].strip() for line in doc.splitlines() if line.startswith("    ")]
    assert lines and lines[0] == "make run", lines
    return lines[1:]


def clone_like(tmp: Path) -> Path:
    where = tmp / "clone"
    ignore = shutil.ignore_patterns("build", "*.egg-info", "__pycache__", "node_modules", "dist")
    shutil.copytree(ROOT / "sdk" / "python", where / "sdk" / "python", ignore=ignore)
    shutil.copytree(ROOT / "examples", where / "examples", ignore=ignore)
    return where


# langchain_weather.py's documented commands are run by tests/e2e/test_newcomer_outside.py
@pytest.mark.parametrize("example", ["openai_agents_weather.py"])
def test_a_framework_example_runs_from_its_documented_install(tmp_path: Path, example: str) -> None:
    commands = documented_commands(ROOT / "examples" / example)
    assert any("pip install" in c for c in commands) and commands[-1].endswith(f"examples/{example}")
    where = clone_like(tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HINDSIGHT_", "VIRTUAL_ENV", "PYTHON"))}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if "venv" not in p)
    with ServerProcess(tmp_path / "data", {"HINDSIGHT_EMBEDDER": "hash", "HINDSIGHT_ADMIN_KEY": "hsadmin_examples"}) as server:
        env |= {"HINDSIGHT_URL": server.url, "HINDSIGHT_ADMIN_KEY": server.admin_key}
        outputs = []
        for command in commands:
            out = subprocess.run(["bash", "-c", command], cwd=where, env=env, capture_output=True, text=True, timeout=900)
            outputs.append(out)
            assert out.returncode == 0, f"{command}\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}"
            assert "ERROR" not in out.stdout + out.stderr, f"{command}\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}"
    assert re.search(r"^run 1: .*lessons learned: \['exp_", outputs[-1].stdout, re.M), outputs[-1].stdout
    assert "Call `ask_user` before `get_weather`" in outputs[-1].stdout  # run 2 was given the lesson
