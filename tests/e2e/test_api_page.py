"""The API page (/v1/docs) in a real browser against the real server: every operation rendered."""
from __future__ import annotations

import re
import shutil
import subprocess

import httpx
import pytest


pytestmark = pytest.mark.e2e
BROWSER = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(BROWSER is None, reason="no chromium on this machine (Debian: apt-get install chromium)")
def test_the_api_page_renders_every_operation_of_the_document_in_a_browser(tmp_path, start_server):
    server = start_server(env={"HINDSIGHT_EMBEDDER": "hash"})
    doc = httpx.get(f"{server.url}/v1/openapi.json").json()
    operations = sum(1 for ops in doc["paths"].values() for m in ops if m in ("get", "post", "put", "patch", "delete"))
    dom = subprocess.run(
        [BROWSER, "--headless=new", "--no-sandbox", "--disable-gpu", f"--user-data-dir={tmp_path / 'profile'}",
         "--virtual-time-budget=10000", "--dump-dom", f"{server.url}/v1/docs"],
        capture_output=True, text=True, timeout=120,
    ).stdout
    assert f'data-rendered="{operations}"' in dom, dom[:2000]
    assert len(re.findall(r'<details class="op"', dom)) == operations
    for path in doc["paths"]:
        assert f"<code>{path}</code>" in dom
    assert 'id="schema-EventIn"' in dom and '<p id="error"></p>' in dom  # nothing failed to load
