"""The web console: static HTML, CSS and JavaScript modules served by the app itself at /console.

The page calls the JSON API from the browser with the key the person signs in with; nothing here
reads a store. The files are read from this package at first use (they ship with chalicelib to
Lambda), and only the files listed in ASSETS are served: a request names one, never a path.
"""
from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

from chalice import Blueprint, Response

HERE = Path(__file__).resolve().parent

# 'self' only: no inline script or style, no eval, nothing fetched from another origin. Styles set
# through the CSSOM (element.style.x = ...) are allowed; style attributes in markup are not.
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
}
TYPES = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8"}
ASSETS = tuple(sorted(p.name for p in HERE.iterdir() if p.suffix in (".js", ".css")))

console = Blueprint(__name__)


@lru_cache(maxsize=None)
def _read(name: str) -> str:
    return (HERE / name).read_text(encoding="utf-8")


def _file(name: str, cache: str) -> Response:
    return Response(body=_read(name), status_code=200,
                    headers={"Content-Type": TYPES[Path(name).suffix], "Cache-Control": cache, **SECURITY_HEADERS})


@console.route("/console", methods=["GET"])
def page() -> Response:
    # The router serves /console/ here too, where the page's relative asset paths (console/main.js)
    # would resolve under /console/console/: send the browser to /console. A relative Location
    # keeps an API Gateway stage prefix (/api/console/ -> /api/console).
    if str((console.current_request.context or {}).get("path") or "").endswith("/"):
        return Response(body="", status_code=301, headers={"Location": "../console", "Cache-Control": "no-store", **SECURITY_HEADERS})
    # no-store: the page is the entry point; a stale copy could load assets it no longer matches
    return _file("index.html", "no-store")


@console.route("/console/{asset}", methods=["GET"])
def asset(asset: str) -> Response:
    if asset not in ASSETS:
        body = json.dumps({"error": {"code": "not_found", "message": "no such console file"}})
        return Response(body=body, status_code=404, headers={"Content-Type": "application/json", **SECURITY_HEADERS})
    return _file(asset, "no-cache")
