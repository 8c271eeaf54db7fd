"""Fixtures shared by every test folder, and the tier markers each folder's tests carry.

Tiers (registered in pyproject.toml): ``unit`` (domain, no I/O) and ``service`` (services on the
in-memory fakes, routes through ``chalice.test.Client``) are the fast tier: ``pytest -m "unit or
service"``. ``integration`` (adapters and contract suites on SQLite files, a moto server, ONNX),
``e2e`` (real server processes), ``opensearch`` (a real node) and ``slow`` are the rest. A folder's
tier is applied here, so a new test cannot forget it; a fast-tier test that also carries a slow
marker is left out of the fast tier (``tests/bench``: the benchmarks' own logic is fast, the tests
that run a benchmark against a real server are marked ``e2e``).

Helpers that are not fixtures live in ``tests/support/`` and ``devtools/`` (shared with bench/).
"""
from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path
from typing import Callable, Iterator

import pytest

from devtools.openai_stub import OpenAIStub
from devtools.server_process import ServerProcess
from tests.support import container as test_container

TESTS = Path(__file__).resolve().parent
TIERS = {
    "unit": "unit", "service": "service", "http": "service", "local": "integration",
    "adapters": "integration", "contract": "integration",
    "e2e": "e2e", "sdk": "e2e", "browser": "e2e", "llm": "e2e", "infra": "slow", "bench": "unit",
}  # fmt: skip
FAST = {"unit", "service"}
SLOW = ("slow", "e2e", "opensearch")


@pytest.hookimpl(tryfirst=True)  # before `-m` selects by marker
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        folder = Path(item.path).resolve().relative_to(TESTS).parts[0]
        if folder not in TIERS:
            raise pytest.UsageError(f"tests/{folder} has no tier: add it to TIERS in tests/conftest.py")
        tier = TIERS[folder]
        if tier in FAST and any(item.get_closest_marker(m) for m in SLOW):
            continue
        item.add_marker(tier)


@pytest.fixture()
def use_deps() -> Iterator[Callable]:
    """``use_deps(deps, settings)`` installs them in the process-wide container for this test;
    whatever was installed before is put back at teardown, even when the test fails."""
    with ExitStack() as stack:
        yield lambda deps, settings: stack.enter_context(test_container.installed(deps, settings))


@pytest.fixture()
def openai_stub() -> Iterator[OpenAIStub]:
    """The local OpenAI-compatible server (devtools/openai_stub.py), one per test."""
    with OpenAIStub() as stub:
        yield stub


@pytest.fixture()
def start_server(tmp_path: Path) -> Iterator[Callable[..., ServerProcess]]:
    """``start_server(env=..., data_dir=...)``: a real server process, healthy when returned,
    stopped at teardown (each one started by this test)."""
    started: list[ServerProcess] = []

    def start(env: dict[str, str] | None = None, data_dir: Path | None = None, **kwargs) -> ServerProcess:
        srv = ServerProcess(data_dir or tmp_path / f"data{len(started)}", env, **kwargs)
        started.append(srv)
        return srv.start()

    yield start
    for srv in reversed(started):
        srv.stop()


@pytest.fixture(scope="session")
def opensearch_url() -> str:
    """This test process's OpenSearch node (started on first use; fails, never skips)."""
    from tests.support.opensearch import node_url

    return node_url()


@pytest.fixture(scope="session")
def moto_url() -> str:
    """This test process's moto server (DynamoDB on 127.0.0.1)."""
    from tests.support.dynamo import moto_endpoint

    return moto_endpoint()
