"""HTTP tests: the real Chalice routes through chalice.test.Client (with the embedded server's
gateway, which answers a denied key as the deployed API does: devtools/gateway_client.py), on the
embedded backend in a temporary directory, with the small deterministic embedder. Reviews are run
by calling the worker step directly, so tests do not sleep."""
from __future__ import annotations

import pytest

import app as app_module
from chalicelib import container
from chalicelib.settings import Settings
from devtools.gateway_client import GatewayClient
from tests.support.http_api import ADMIN, Api


@pytest.fixture()
def api(tmp_path, use_deps):
    settings = Settings(data_dir=str(tmp_path), embedder="hash", admin_key=ADMIN, worker=False)
    deps = use_deps(container.build_embedded(settings), settings)
    with GatewayClient(app_module.app) as client:
        yield Api(client, deps)
