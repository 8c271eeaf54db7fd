"""Fixtures of the SDK tests: one real hindsight server for the session, a new tenant per test."""
from __future__ import annotations

import os
from typing import Iterator

import pytest

from hindsight_xp import Hindsight, RetryPolicy

from .servers import FaultProxy, HindsightServer

# Retries in tests wait milliseconds, not seconds.
FAST_RETRY = RetryPolicy(max_attempts=4, base_delay=0.01, max_delay=0.05)


@pytest.fixture(autouse=True)
def _no_hindsight_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """A developer's HINDSIGHT_* variables must not leak into what the tests run."""
    for name in list(os.environ):
        if name.startswith("HINDSIGHT_"):
            monkeypatch.delenv(name)


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HindsightServer]:
    srv = HindsightServer(tmp_path_factory.mktemp("hindsight") / "data").start()
    yield srv
    srv.stop()


@pytest.fixture()
def api_key(server: HindsightServer) -> str:
    return server.new_tenant()


@pytest.fixture()
def client(server: HindsightServer, api_key: str) -> Iterator[Hindsight]:
    with Hindsight(server.url, api_key, admin_key=server.admin_key, retry=FAST_RETRY) as c:
        yield c


@pytest.fixture()
def proxy(server: HindsightServer) -> Iterator[FaultProxy]:
    p = FaultProxy(server.url)
    yield p
    p.close()


@pytest.fixture()
def proxied(proxy: FaultProxy, api_key: str, server: HindsightServer) -> Iterator[Hindsight]:
    """A client that talks to the server through the fault-injecting proxy."""
    with Hindsight(proxy.url, api_key, admin_key=server.admin_key, retry=FAST_RETRY) as c:
        yield c


@pytest.fixture()
def anyio_backend() -> str:
    return "asyncio"
