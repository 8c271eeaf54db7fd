"""HTTP tests: the real Chalice routes through chalice.test.Client, on the embedded backend in a
temporary directory, with the small deterministic embedder. Reviews are run by calling the worker
step directly, so tests do not sleep."""
from __future__ import annotations

import json

import pytest
from chalice.test import Client

import app as app_module
from chalicelib import container
from chalicelib.services.review import process_review_jobs
from chalicelib.settings import Settings

ADMIN = "admin-test-key"


class Api:
    def __init__(self, client: Client, deps) -> None:
        self.client = client
        self.deps = deps

    def call(self, method: str, path: str, key: str | None = None, body=None, raw: bytes | str | None = None):
        headers = {"Content-Type": "application/json"}
        if key is not None:
            headers["Authorization"] = f"Bearer {key}"
        payload = raw if raw is not None else (json.dumps(body) if body is not None else None)
        return getattr(self.client.http, method.lower())(path, headers=headers, body=payload)

    def tenant(self, name: str = "acme") -> str:
        resp = self.call("POST", "/v1/tenants", ADMIN, {"name": name})
        assert resp.status_code == 201, resp.body
        return resp.json_body["api_key"]

    def run_reviews(self) -> int:
        total = 0
        while n := process_review_jobs(self.deps):
            total += n
        return total


@pytest.fixture()
def api(tmp_path):
    settings = Settings(data_dir=str(tmp_path), embedder="hash", admin_key=ADMIN, worker=False)
    deps = container.build_embedded(settings)
    container.set_deps(deps, settings)
    with Client(app_module.app) as client:
        yield Api(client, deps)
    container.set_deps(None, Settings())
