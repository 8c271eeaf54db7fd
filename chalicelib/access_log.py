"""The embedded server's access log: one INFO line per request, and the tenant that made it.

The route that resolves a key notes its tenant here (``note_tenant``); the WSGI layer, which
times the request, writes the line once the answer is ready. Both run in the request's thread
(waitress hands a request to one thread, and Chalice's local gateway calls the view in it), so a
thread-local carries the tenant between them. A key never reaches the line: only the tenant id.
The path is the client's, decoded: its control characters are escaped (``%0a`` is written
``\\x0a``), so a request cannot add a line of its own to the log.
"""
from __future__ import annotations

import logging
import threading

from .redaction import escape_controls

log = logging.getLogger("hindsight.access")
_request = threading.local()


def begin() -> None:
    _request.tenant_id = None


def note_tenant(tenant_id: str) -> None:
    _request.tenant_id = tenant_id


def tenant() -> str | None:
    """The tenant noted for this thread's request (None: admin, anonymous, or refused before)."""
    return getattr(_request, "tenant_id", None)


def line(method: str, path: str, status: int, ms: float) -> str:
    """``POST /v1/recall 200 18.4ms tenant=t_...``; ``tenant=-`` for admin and anonymous calls."""
    return f"{escape_controls(method)} {escape_controls(path)} {status} {ms:.1f}ms tenant={tenant() or '-'}"


def write(method: str, path: str, status: int, ms: float) -> None:
    log.info(line(method, path, status, ms))
