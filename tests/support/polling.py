"""Waiting for the real server's background work over HTTP, bounded in time."""
from __future__ import annotations

import time

import httpx


def wait_reviewed(client: httpx.Client, tid: str, timeout: float = 20) -> dict:
    """The trajectory once its review has run (reviewed or review_failed)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        traj = client.get(f"/v1/trajectories/{tid}").json()
        if traj["status"] in ("reviewed", "review_failed"):
            return traj
        time.sleep(0.05)
    raise TimeoutError(f"trajectory {tid} was not reviewed")
