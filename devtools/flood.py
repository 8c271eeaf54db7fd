"""The flood of issue 12, over HTTP: tenant A records one trajectory of thousands of tool calls,
most failing with varied errors, and finalizes it; tenant B finalizes a 3-event trajectory right
after. ``tenant_b_delay`` measures how long B waits for its review. Used by the fairness test and
by ``bench/tenant_fairness.py``."""
from __future__ import annotations

import time
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any, Callable, ContextManager

import httpx

ERRORS = ("VendorMissing", "RateLimited", "InvalidAirport", "Timeout", "PermissionDenied", "NotFound", "BadRequest")


def flood_events(start: int, n: int) -> list[dict]:
    """Tool calls over 12 tools, 4 in 5 failing, with varied errors and literal values."""
    out = []
    for i in range(start, start + n):
        content: dict = {"tool": f"tool_{i % 12}", "params": {"vendor": f"v{i % 211}", "order": f"ord-{i * 7919 % 100003}"}}
        if i % 5 == 4:
            content["result"] = f"paid {i}"
        else:
            content |= {"status": "error", "error": f"{ERRORS[i % len(ERRORS)]}: vendor v{i % 211} refused order ord-{i * 7919 % 100003}"}
        out.append({"event_id": f"e{i}", "type": "tool_call", "content": content})
    return out


@dataclass
class FloodResult:
    events: int
    flood_seconds: float  # A's appends and finalize
    b_delay_seconds: float | None  # B's finalize -> B reviewed; None: not within the wait
    a_reviewed_after_seconds: float | None  # A's finalize -> A reviewed (None: not within the wait)
    b_reviewed_first: bool | None = None  # by the server's clock; None: B was not reviewed


def tenant(url: str, admin_key: str, name: str) -> httpx.Client:
    key = httpx.post(f"{url}/v1/tenants", json={"name": name}, headers={"Authorization": f"Bearer {admin_key}"}).json()["api_key"]
    return httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=120)


def tenant_b_delay(url: str, admin_key: str, events: int = 6000, batch: int = 100, wait: float = 120.0) -> FloodResult:
    """The flood on a server over HTTP, its review worker running all along."""
    a, b = tenant(url, admin_key, "flooder"), tenant(url, admin_key, "bystander")
    try:
        return flood(a, b, events, batch, wait)
    finally:
        a.close()
        b.close()


def _reviewed(traj: dict) -> bool:
    # an error answer (the store busy, 503) is not a status: asked again at the next poll
    return traj.get("status") in ("reviewed", "review_failed")


def _post(client, path: str, body: dict):
    """A post within the permitted rate: a 429 is waited out for its Retry-After and sent again,
    as a well-behaved agent does (the flood runs at the tenant's limit, so any of its calls,
    the finalize too, may draw one on a fast machine)."""
    while (resp := client.post(path, json=body)).status_code == 429:
        time.sleep(float(resp.headers.get("Retry-After", "1")))
    return resp.raise_for_status()


def flood(a, b, events: int = 6000, batch: int = 100, wait: float = 120.0,
          reviewing: Callable[[], ContextManager[Any]] = nullcontext) -> FloodResult:
    """Tenant ``a`` floods, tenant ``b`` finalizes right after; ``a`` and ``b`` are httpx.Client-like
    (``post(path, json=)``, ``get(path)``). ``reviewing``: entered right after B's finalize and
    left once the measure is done, for a stack whose reviews run only inside it (the aws stack's
    stream delivery); the embedded server reviews all along."""
    _post(a, "/v1/trajectories", {"trajectory_id": "flood", "agent_id": "payer", "goal": "Pay this week's vendors"})
    _post(b, "/v1/trajectories", {"trajectory_id": "small", "agent_id": "bot", "goal": "Will it rain tomorrow?"})
    _post(b, "/v1/trajectories/small/events", {"events": [
        {"event_id": "1", "type": "tool_call", "content": {"tool": "get_weather", "params": {"date": "tomorrow"},
                                                           "status": "error", "error": "MissingParameter: city is required"}},
        {"event_id": "2", "type": "tool_call", "content": {"tool": "ask_user", "params": {"question": "Which city?"}, "result": "Lyon"}},
        {"event_id": "3", "type": "tool_call", "content": {"tool": "get_weather", "params": {"date": "tomorrow", "city": "Lyon"}, "result": "rain"}},
    ]})
    started = time.monotonic()
    for first in range(0, events, batch):
        _post(a, "/v1/trajectories/flood/events", {"events": flood_events(first, min(batch, events - first))})
    if events:
        _post(a, "/v1/trajectories/flood/finalize", {"outcome": "failure"})
    a_final = time.monotonic()
    _post(b, "/v1/trajectories/small/finalize", {"outcome": "success"})
    b_final = time.monotonic()
    b_delay = a_delay = None
    b_traj = a_traj = None
    with reviewing():
        deadline = b_final + wait
        # a status counts from when its answer arrived: a poll sent earlier may wait behind the
        # review itself (the aws stack's test client takes one call at a time, the stream's too)
        while time.monotonic() < deadline and (b_delay is None or (events and a_delay is None)):
            if b_delay is None and _reviewed(traj := b.get("/v1/trajectories/small").json()):
                b_delay, b_traj = time.monotonic() - b_final, traj
            if events and a_delay is None and _reviewed(traj := a.get("/v1/trajectories/flood").json()):
                a_delay, a_traj = time.monotonic() - a_final, traj
            time.sleep(0.05)
    first = None
    if b_traj is not None:
        first = a_traj is None or b_traj["updated_at"] < a_traj["updated_at"]
    return FloodResult(events, a_final - started, b_delay, a_delay, first)
