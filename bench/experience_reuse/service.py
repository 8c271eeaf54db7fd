"""Talk to hindsight over its public HTTP API only; start a fresh server process when asked.

Nothing here imports the service: the benchmark must keep working while the engine changes.
"""
from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from devtools.server_process import ServerProcess


class LocalServer(ServerProcess):
    """``python -m local.server`` on a free port with a temporary data directory, in its own session.

    The environment is inherited (so engine options such as a reviewer choice pass through), except
    the data dir, port and admin key; the embedder is a real model: MiniLM, or e5 when
    ``HINDSIGHT_EMBEDDER=e5`` (a developer's test-only hash embedder never reaches a benchmark)."""

    new_session = True

    def __init__(self, keep: bool = False) -> None:
        self.keep = keep
        self.tmp = Path(tempfile.mkdtemp(prefix="hindsight-xr-"))
        super().__init__(self.tmp / "data", log_path=self.tmp / "server.log")
        self.passed_env: dict[str, str] = {}

    def environment(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items()
               if k not in ("HINDSIGHT_DATA_DIR", "HINDSIGHT_PORT", "HINDSIGHT_ADMIN_KEY", "PORT")}
        env.setdefault("HINDSIGHT_WORKER_POLL_SECONDS", "0.05")
        # its worker reviews what the benchmark records, whatever the caller's environment says
        embedder = env.get("HINDSIGHT_EMBEDDER") if env.get("HINDSIGHT_EMBEDDER") in ("minilm", "e5", "minilm+e5") else "minilm"
        env |= {"PORT": str(self.port), "HINDSIGHT_DATA_DIR": str(self.data_dir), "HINDSIGHT_EMBEDDER": embedder,
                "HINDSIGHT_WORKER": "true"}
        self.passed_env = {k: v for k, v in env.items() if k.startswith("HINDSIGHT_") and "KEY" not in k and "SECRET" not in k}
        return env

    def start(self, timeout: float = 120.0) -> "LocalServer":
        super().start(timeout)
        return self

    def stop(self) -> None:
        if self.keep:
            return
        super().stop()
        shutil.rmtree(self.tmp, ignore_errors=True)


class ApiError(RuntimeError):
    pass


class Api:
    def __init__(self, url: str, key: str, timeout: float = 120.0) -> None:
        self.http = httpx.Client(base_url=url.rstrip("/"), headers={"Authorization": f"Bearer {key}"}, timeout=timeout)

    def close(self) -> None:
        self.http.close()

    def call(self, method: str, path: str, json: Any = None, params: dict | None = None, ok=(200, 201, 202)) -> Any:
        for attempt in range(6):
            resp = self.http.request(method, path, json=json, params=params)
            if resp.status_code == 429 and attempt < 5:
                time.sleep(0.5 * 2**attempt)
                continue
            if resp.status_code not in ok:
                raise ApiError(f"{method} {path} -> {resp.status_code}: {resp.text[:500]}")
            return resp.json()
        raise ApiError(f"{method} {path}: rate limited")

    # --- the calls an agent makes ---------------------------------------------------------------

    def record(self, trajectory: dict[str, Any], events: list[dict[str, Any]], outcome: str) -> None:
        tid = trajectory["trajectory_id"]
        self.call("POST", "/v1/trajectories", trajectory)
        for i in range(0, len(events), 100):
            self.call("POST", f"/v1/trajectories/{tid}/events", {"events": events[i : i + 100]})
        self.call("POST", f"/v1/trajectories/{tid}/finalize", {"outcome": outcome})

    def wait_reviewed(self, tids: list[str], timeout: float) -> dict[str, dict[str, Any]]:
        """Poll until every trajectory is reviewed (or review_failed); returns them by id."""
        done: dict[str, dict[str, Any]] = {}
        pending = list(tids)
        deadline = time.monotonic() + timeout
        while pending:
            still = []
            for tid in pending:
                t = self.call("GET", f"/v1/trajectories/{tid}")
                if t.get("status") in ("reviewed", "review_failed"):
                    done[tid] = t
                else:
                    still.append(tid)
            pending = still
            if pending:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{len(pending)} trajectories not reviewed after {timeout:.0f}s, e.g. {pending[0]}")
                time.sleep(0.1)
        return done

    def experiences(self, agent_id: str, status: str = "active") -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        cursor = None
        while True:
            params = {"agent_id": agent_id, "status": status, "limit": 200}
            if cursor:
                params["cursor"] = cursor
            page = self.call("GET", "/v1/experiences", params=params)
            out += page.get("items", [])
            cursor = page.get("cursor")
            if not cursor:
                return out

    def recall(self, **body: Any) -> dict[str, Any]:
        return self.call("POST", "/v1/recall", {k: v for k, v in body.items() if v not in (None, [], ())})

    def feedback(self, experience_id: str, signal: str) -> None:
        self.call("POST", f"/v1/experiences/{experience_id}/feedback", {"signal": signal})


def create_tenant(url: str, admin_key: str, name: str) -> str:
    resp = httpx.post(f"{url.rstrip('/')}/v1/tenants", json={"name": name},
                      headers={"Authorization": f"Bearer {admin_key}"}, timeout=30)
    if resp.status_code != 201:
        raise ApiError(f"POST /v1/tenants -> {resp.status_code}: {resp.text[:300]}")
    return resp.json()["api_key"]
