"""Every HTML page (the API page at /v1/docs, the console) is served with a Content-Security-Policy
that allows no framing and no script but its own, with X-Frame-Options DENY and nosniff."""
from __future__ import annotations

import base64
import hashlib
import re

import pytest

import app as app_module

HTML_ROUTES = sorted(r.path for r in app_module.api.routes if r.media_type == "text/html")


def directives(csp: str) -> dict[str, str]:
    return dict((d.strip().split(" ", 1) + [""])[:2] for d in csp.split(";"))


def test_the_api_has_html_pages_to_check():
    assert "/v1/docs" in HTML_ROUTES


@pytest.mark.parametrize("path", [*HTML_ROUTES, "/console", "/console/"])
def test_an_html_page_cannot_be_framed_or_sniffed_and_allows_only_its_own_scripts(api, path):
    resp = api.client.http.get(path)
    assert resp.status_code in (200, 301)
    csp = resp.headers["Content-Security-Policy"]
    found = directives(csp)
    assert found["frame-ancestors"] == "'none'" and resp.headers["X-Frame-Options"] == "DENY"
    assert resp.headers["X-Content-Type-Options"] == "nosniff"
    assert found["object-src"] == "'none'" and found["base-uri"] == "'none'"
    assert "unsafe" not in csp and "*" not in csp and "http" not in csp
    assert found.get("default-src") in ("'none'", "'self'")


def test_the_api_page_allows_exactly_its_inline_script_and_style(api):
    resp = api.client.http.get("/v1/docs")
    html = resp.body.decode()
    found = directives(resp.headers["Content-Security-Policy"])
    for tag in ("script", "style"):
        blocks = re.findall(rf"<{tag}>(.*?)</{tag}>", html, re.DOTALL)
        assert len(blocks) == 1
        digest = base64.b64encode(hashlib.sha256(blocks[0].encode()).digest()).decode()
        assert found[f"{tag}-src"] == f"'sha256-{digest}'"
    assert found["connect-src"] == "'self'"  # it fetches openapi.json beside it, nothing else
    assert re.findall(r"<script[^>]*\ssrc=|<link\b|https?://", html) == []
