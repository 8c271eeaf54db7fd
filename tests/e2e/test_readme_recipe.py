"""The README's curl recipe, run as it stands (the bash block, verbatim) against the real server."""
from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import httpx
import pytest


ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.e2e


def readme_block(heading: str) -> str:
    """The first ```bash block under ``heading`` in README.md."""
    text = (ROOT / "README.md").read_text()
    section = text[text.index(heading):]
    return re.search(r"```bash\n(.*?)```", section, re.S).group(1)


def printed_documents(stdout: str) -> list:
    """The JSON answers curl printed, back to back (curl adds no newline after a body)."""
    decoder, docs, i = json.JSONDecoder(), [], 0
    while i < len(stdout):
        if stdout[i].isspace():
            i += 1
            continue
        doc, i = decoder.raw_decode(stdout, i)
        docs.append(doc)
    return docs


def test_the_readme_recipe_recalls_its_lesson_and_can_be_run_twice(tmp_path, start_server):
    recipe = readme_block("## From zero to a recalled lesson")
    data = tmp_path / ".hindsight"  # where `make run` keeps it, relative to where the reader is
    data.mkdir()
    # the real embedder and the default worker settings, as `make run` has them
    server = start_server(env={"HINDSIGHT_EMBEDDER": "minilm", "HINDSIGHT_WORKER_POLL_SECONDS": "0.25"}, data_dir=data)
    env = {k: v for k, v in os.environ.items() if not k.startswith("HINDSIGHT_")} | {"HINDSIGHT_URL": server.url}
    for run in (1, 2):
        out = subprocess.run(["bash", "-c", recipe], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        printed = printed_documents(out.stdout)
        assert [d for d in printed if "error" in d] == [], f"run {run} printed an error: {out.stdout}"
        assert out.stderr == "", out.stderr
        recalled = printed[-1]  # the recall is the last thing printed
        assert recalled["hits"], f"run {run} recalled nothing: {out.stdout}"
        assert "Call `ask_user` before `get_weather`" in recalled["advice"], recalled["advice"]
    admin = (data / "admin_key").read_text().strip()
    tenants = httpx.get(f"{server.url}/v1/tenants", headers={"Authorization": f"Bearer {admin}"}).json()["tenants"]
    assert [t["name"] for t in tenants] == ["acme"]  # the second run used the first run's tenant
    assert oct((data / "acme_key").stat().st_mode & 0o777) == "0o600"
