"""Calling the real Chalice routes in process (``chalice.test.Client``) as a tenant or the admin."""
from __future__ import annotations

import json

from chalice.test import Client

from chalicelib.services.review_jobs import process_review_jobs

ADMIN = "admin-test-key"


class Api:
    def __init__(self, client: Client, deps) -> None:
        self.client = client
        self.deps = deps

    def call(self, method: str, path: str, key: str | None = None, body=None, raw: bytes | str | None = None,
             headers: dict[str, str] | None = None):
        headers = {"Content-Type": "application/json"} | (headers or {})
        if key is not None:
            headers["Authorization"] = f"Bearer {key}"
        payload = raw if raw is not None else (json.dumps(body) if body is not None else None)
        return getattr(self.client.http, method.lower())(path, headers=headers, body=payload)

    def tenant(self, name: str | None = None) -> str:
        # tenant names are unique per deployment: tests that make several name them apart
        self._made = getattr(self, "_made", 0) + 1
        resp = self.call("POST", "/v1/tenants", ADMIN, {"name": name or f"acme-{self._made}"})
        assert resp.status_code == 201, resp.body
        return resp.json_body["api_key"]

    def run_reviews(self) -> int:
        total = 0
        while n := process_review_jobs(self.deps):
            total += n
        return total
