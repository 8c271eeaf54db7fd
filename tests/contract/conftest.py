"""Backends for the contract suites: every port implementation runs the same tests.

A backend is a small factory that builds each port over one shared storage. To put a new backend
(DynamoDB, OpenSearch, SQS...) through the contracts, write its factory and add it to
``BACKENDS``: every ``test_*_contract.py`` then runs against it too.

``reopen()`` builds fresh adapter instances over the same storage (a process restart); a backend
that keeps nothing across instances says so with ``durable = False`` and the persistence tests skip.
"""
from __future__ import annotations

from datetime import datetime, timezone
from functools import cached_property
from pathlib import Path
from typing import Callable

import pytest

from chalicelib.adapters.embedded.checkpoints import SqliteCheckpoints
from chalicelib.adapters.embedded.db import SqliteDatabase
from chalicelib.adapters.embedded.index import NumpyVectorIndex
from chalicelib.adapters.embedded.memory_rate_limiter import InProcessRateLimiter
from chalicelib.adapters.embedded.rate_limiter import SharedFileRateLimiter
from chalicelib.adapters.embedded.recalls import SqliteRecallLedger
from chalicelib.adapters.embedded.stores import (
    SqliteExperienceStore,
    SqliteReviewQueue,
    SqliteTenantStore,
    SqliteTrajectoryStore,
)
from chalicelib.domain.ratelimit import RatePolicy
from chalicelib.ports import (
    Checkpoints,
    ExperienceStore,
    RateLimiter,
    RecallLedger,
    ReviewQueue,
    TenantStore,
    TrajectoryStore,
    VectorIndex,
)
from tests.support.fakes import (
    InMemoryCheckpoints,
    InMemoryExperienceStore,
    InMemoryRecallLedger,
    InMemoryReviewQueue,
    InMemoryTenantStore,
    InMemoryTrajectoryStore,
    InMemoryVectorIndex,
)

DIM = 8  # vector dimension of every index under contract
T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)


class Backend:
    name: str
    durable: bool

    def tenants(self) -> TenantStore: ...
    def trajectories(self) -> TrajectoryStore: ...
    def experiences(self) -> ExperienceStore: ...
    def index(self, dim: int = DIM) -> VectorIndex: ...
    def queue(self) -> ReviewQueue: ...
    def recalls(self) -> RecallLedger: ...
    def checkpoints(self) -> Checkpoints: ...

    def reopen(self) -> "Backend":
        """New adapter instances over the same storage, as after a restart."""
        raise NotImplementedError

    def close(self) -> None:
        pass


class MemoryBackend(Backend):
    name, durable = "memory", False

    def __init__(self, tmp_path: Path) -> None:
        pass

    def tenants(self) -> TenantStore:
        return InMemoryTenantStore()

    def trajectories(self) -> TrajectoryStore:
        return InMemoryTrajectoryStore()

    def experiences(self) -> ExperienceStore:
        return InMemoryExperienceStore()

    def index(self, dim: int = DIM) -> VectorIndex:
        return InMemoryVectorIndex(dim)

    def queue(self) -> ReviewQueue:
        return InMemoryReviewQueue()

    def recalls(self) -> RecallLedger:
        return InMemoryRecallLedger()

    def checkpoints(self) -> Checkpoints:
        return InMemoryCheckpoints()


class SqliteBackend(Backend):
    name, durable = "sqlite", True

    def __init__(self, tmp_path: Path, opened: list[SqliteDatabase] | None = None) -> None:
        self.tmp_path = tmp_path
        self._opened = [] if opened is None else opened  # shared with reopened copies, closed together

    def _open(self, name: str) -> SqliteDatabase:
        db = SqliteDatabase(str(self.tmp_path / name))
        self._opened.append(db)
        return db

    # opened on first use: a test of one port pays for one database file
    @cached_property
    def db(self) -> SqliteDatabase:
        return self._open("hindsight.db")

    @cached_property
    def vectors_db(self) -> SqliteDatabase:
        return self._open("vectors.db")  # a file of its own, as the container builds it

    def tenants(self) -> TenantStore:
        return SqliteTenantStore(self.db)

    def trajectories(self) -> TrajectoryStore:
        return SqliteTrajectoryStore(self.db)

    def experiences(self) -> ExperienceStore:
        return SqliteExperienceStore(self.db)

    def index(self, dim: int = DIM) -> VectorIndex:
        return NumpyVectorIndex(self.vectors_db, dim)

    def queue(self) -> ReviewQueue:
        return SqliteReviewQueue(self.db)

    def recalls(self) -> RecallLedger:
        return SqliteRecallLedger(self.db)

    def checkpoints(self) -> Checkpoints:
        return SqliteCheckpoints(self.db)

    def reopen(self) -> "SqliteBackend":
        return SqliteBackend(self.tmp_path, self._opened)

    def close(self) -> None:
        for db in self._opened:
            conn = getattr(db._local, "conn", None)
            if conn is not None:
                conn.close()


BACKENDS: dict[str, Callable[[Path], Backend]] = {
    "memory": MemoryBackend,
    "sqlite": SqliteBackend,
}

# The DynamoDB stores and queue on a local moto server started on first use; see dynamo_backend.py.
from tests.contract.dynamo_backend import DynamoBackend  # noqa: E402

BACKENDS["dynamo"] = DynamoBackend

# Index-only backends on a real OpenSearch node (marker ``opensearch``); the hook below
# deselects the tests of theirs that use a store or the queue.
from tests.contract.opensearch_backend import INDEX_ONLY_BACKENDS, OTHER_PORT_FIXTURES  # noqa: E402

BACKENDS.update(INDEX_ONLY_BACKENDS)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the tests that run on an index-only backend ``opensearch``, and deselect those of
    theirs that exercise another port (stores, queue), which such a backend does not implement."""
    keep, dropped = [], []
    for item in items:
        callspec = getattr(item, "callspec", None)
        if callspec is None or callspec.params.get("backend") not in INDEX_ONLY_BACKENDS:
            keep.append(item)
            continue
        if OTHER_PORT_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            dropped.append(item)
            continue
        item.add_marker(pytest.mark.opensearch)
        keep.append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = keep


class InProcessLimiters:
    """Rate limiters of the embedded build: each instance keeps its own buckets."""

    name, shared = "in-process", False

    def __init__(self, tmp_path: Path) -> None:
        pass

    def limiter(self, policy: RatePolicy) -> RateLimiter:
        return InProcessRateLimiter(policy)

    def close(self) -> None:
        pass


class SharedFileLimiters:
    """Rate limiters of the embedded server's processes: every instance maps the same file."""

    name, shared = "shared-file", True

    def __init__(self, tmp_path: Path) -> None:
        self.path = str(tmp_path / "rate-limits")
        self.made: list[SharedFileRateLimiter] = []

    def limiter(self, policy: RatePolicy) -> RateLimiter:
        self.made.append(SharedFileRateLimiter(policy, self.path))
        return self.made[-1]

    def close(self) -> None:
        for limiter in self.made:
            limiter.close()


# ``ports.RateLimiter`` has backends of its own (the stores' backends do not limit anything):
# the in-process buckets, the file the embedded server's processes share, and the DynamoDB table
# that Lambda instances share.
from tests.contract.dynamo_backend import DynamoRateLimiters  # noqa: E402

RATE_LIMITER_BACKENDS: dict[str, Callable[[Path], "InProcessLimiters | SharedFileLimiters | DynamoRateLimiters"]] = {
    "in-process": InProcessLimiters,
    "shared-file": SharedFileLimiters,
    "dynamo": DynamoRateLimiters,
}


@pytest.fixture(params=list(RATE_LIMITER_BACKENDS))
def limiters(request: pytest.FixtureRequest, tmp_path: Path):
    b = RATE_LIMITER_BACKENDS[request.param](tmp_path)
    yield b
    b.close()


@pytest.fixture(params=list(BACKENDS))
def backend(request: pytest.FixtureRequest, tmp_path: Path):
    b = BACKENDS[request.param](tmp_path)
    yield b
    b.close()


@pytest.fixture
def durable_backend(backend: Backend) -> Backend:
    if not backend.durable:
        pytest.skip(f"the {backend.name} backend keeps nothing across instances")
    return backend


@pytest.fixture
def tenant_store(backend: Backend) -> TenantStore:
    return backend.tenants()


@pytest.fixture
def trajectory_store(backend: Backend) -> TrajectoryStore:
    return backend.trajectories()


@pytest.fixture
def experience_store(backend: Backend) -> ExperienceStore:
    return backend.experiences()


@pytest.fixture
def vector_index(backend: Backend) -> VectorIndex:
    return backend.index()


@pytest.fixture
def review_queue(backend: Backend) -> ReviewQueue:
    return backend.queue()


@pytest.fixture
def recall_ledger(backend: Backend) -> RecallLedger:
    return backend.recalls()


@pytest.fixture
def checkpoints(backend: Backend) -> Checkpoints:
    return backend.checkpoints()
