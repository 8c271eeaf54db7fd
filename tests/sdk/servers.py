"""Real processes and real sockets for the SDK tests: the hindsight server, and a proxy that
injects faults between the SDK and it (refusals, failures, lost answers)."""
from __future__ import annotations

import json
import threading
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable

import httpx

from devtools.server_process import ServerProcess


class HindsightServer(ServerProcess):
    """The real server with a known admin key and the fast embedder, plus the SDK tests' calls."""

    def __init__(self, data_dir: Path, env: dict[str, str] | None = None) -> None:
        super().__init__(data_dir, {"HINDSIGHT_EMBEDDER": "hash", "HINDSIGHT_ADMIN_KEY": "hsadmin_sdk_tests"} | (env or {}))

    def new_tenant(self, name: str | None = None) -> str:
        # tenant names are unique per deployment, and the session's server serves every test
        resp = httpx.post(f"{self.url}/v1/tenants", json={"name": name or f"sdk-test-{uuid.uuid4().hex[:8]}"},
                          headers={"Authorization": f"Bearer {self.admin_key}"})  # fmt: skip
        assert resp.status_code == 201, resp.text
        return resp.json()["api_key"]

    def has_endpoint(self, method: str, path: str) -> bool:
        """Whether the service has a route (the tenant/maintenance endpoints are being added).

        The OpenAPI document says so; if it cannot be read, an unauthenticated call tells: a known
        route answers 401, an unknown one 404 "no route"."""
        try:
            paths = httpx.get(f"{self.url}/v1/openapi.json").json()["paths"]
            if path in paths:
                return method.lower() in paths[path]
        except (KeyError, ValueError, httpx.HTTPError):
            pass
        resp = httpx.request(method, f"{self.url}{path.replace('{tenant_id}', 't_probe')}", json={})
        return resp.status_code not in (404, 405)


@dataclass
class Seen:
    method: str
    path: str
    body: Any
    fault: str | None


@dataclass
class FaultProxy:
    """A reverse proxy to ``upstream``; each request whose path matches a rule takes that rule's
    next fault. Faults: "429" (refused, Retry-After: 0), "503" (failed, not forwarded),
    "drop" (connection closed, not forwarded), "lost" (forwarded and applied upstream, but the
    connection is closed before the answer)."""

    upstream: str
    rules: list[tuple[Callable[[str, str], bool], list[str]]] = field(default_factory=list)
    seen: list[Seen] = field(default_factory=list)

    def fail(self, faults: list[str], *, method: str | None = None, path_contains: str = "") -> None:
        self.rules.append((lambda m, p: (method is None or m == method) and path_contains in p, list(faults)))

    def requests(self, method: str, path_contains: str = "") -> list[Seen]:
        return [s for s in self.seen if s.method == method and path_contains in s.path]

    def __post_init__(self) -> None:
        proxy = self
        lock = threading.Lock()
        http = httpx.Client(base_url=self.upstream, timeout=30)

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _handle(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with lock:
                    fault = next((faults.pop(0) for match, faults in proxy.rules if faults and match(self.command, self.path)), None)
                    proxy.seen.append(Seen(self.command, self.path, json.loads(raw) if raw else None, fault))
                if fault in ("429", "503"):
                    body = json.dumps({"error": {"code": "injected", "message": f"injected {fault}"}}).encode()
                    self.send_response(int(fault))
                    if fault == "429":
                        self.send_header("Retry-After", "0")
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                    return
                if fault == "drop":
                    self.close_connection = True
                    return
                headers = {k: v for k, v in self.headers.items() if k.lower() in ("authorization", "content-type")}
                resp = http.request(self.command, self.path, content=raw or None, headers=headers)
                if fault == "lost":
                    self.close_connection = True
                    return
                self.send_response(resp.status_code)
                for k, v in resp.headers.items():
                    if k.lower() in ("content-type", "retry-after"):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(resp.content)))
                self.end_headers()
                self.wfile.write(resp.content)

            do_GET = do_POST = do_DELETE = _handle  # noqa: N815

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._http = http
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._http.close()
