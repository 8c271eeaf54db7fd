"""The headers of every HTML page the API serves (the console has its own: chalicelib/console).

A page may not be framed (``frame-ancestors 'none'`` and ``X-Frame-Options: DENY``: no click-jacking
of a page where a key is typed), nor sniffed as another type. Its Content-Security-Policy allows
only what the page holds: each inline ``<script>`` and ``<style>`` block by its SHA-256 (computed
from the page served, so an edit of the page cannot fall out of step with its policy), requests to
its own origin (the page fetches the OpenAPI document beside it), and nothing else: no other
script, no plugin, no form target, no ``<base>``.
"""
from __future__ import annotations

import base64
import hashlib
import re
from functools import lru_cache

FRAMING_AND_SNIFFING = {"X-Content-Type-Options": "nosniff", "X-Frame-Options": "DENY", "Referrer-Policy": "no-referrer"}
_INLINE = re.compile(r"<(script|style)>(.*?)</\1>", re.DOTALL)  # a block with attributes is not allowed


@lru_cache(maxsize=8)
def content_security_policy(html: str) -> str:
    allowed: dict[str, list[str]] = {"script": [], "style": []}
    for tag, block in _INLINE.findall(html):
        digest = base64.b64encode(hashlib.sha256(block.encode("utf-8")).digest()).decode()
        allowed[tag].append(f"'sha256-{digest}'")
    scripts, styles = " ".join(allowed["script"]) or "'none'", " ".join(allowed["style"]) or "'none'"
    return "; ".join([
        "default-src 'none'",
        f"script-src {scripts}",
        f"style-src {styles}",
        "connect-src 'self'",
        "img-src 'self' data:",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'none'",
    ])


def page_headers(html: str) -> dict[str, str]:
    return {"Content-Security-Policy": content_security_policy(html), **FRAMING_AND_SNIFFING}
