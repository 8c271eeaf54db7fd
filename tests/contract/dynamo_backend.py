"""The ``dynamo`` contract backend: the DynamoDB adapters against the session's local moto server
(tests/support/dynamo.py), as the end-to-end tests run it. Every backend gets table names of its own
and drops its tables on close.
"""
from __future__ import annotations

from functools import cached_property
from pathlib import Path
from typing import Any

from tests.support.dynamo import dynamo_tables


class _Shared:
    """What a backend and its reopened copies share: the tables, and which of them exist."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp_path = tmp_path
        self.tables = dynamo_tables()
        self.created: set[str] = set()
        self.vector_dbs: list[Any] = []

    def ensure(self, group: str) -> Any:
        if group not in self.created:
            self.tables.create(group)
            self.created.add(group)
        return self.tables


class DynamoBackend:
    """The ``conftest.Backend`` shape (duck-typed: conftest imports this module)."""

    name, durable = "dynamo", True

    def __init__(self, tmp_path: Path, shared: _Shared | None = None) -> None:
        self._shared = shared or _Shared(tmp_path)
        self._owner = shared is None

    def tenants(self):
        from chalicelib.adapters.dynamo.stores import DynamoTenantStore

        return DynamoTenantStore(self._shared.ensure("tenants"))

    def trajectories(self):
        from chalicelib.adapters.dynamo.stores import DynamoTrajectoryStore

        return DynamoTrajectoryStore(self._shared.ensure("trajectories"))

    def experiences(self):
        from chalicelib.adapters.dynamo.stores import DynamoExperienceStore

        return DynamoExperienceStore(self._shared.ensure("experiences"))

    def queue(self):
        from chalicelib.adapters.dynamo.stores import DynamoReviewQueue

        return DynamoReviewQueue(self._shared.ensure("queue"))

    def recalls(self):
        from chalicelib.adapters.dynamo.stores import DynamoRecallLedger

        return DynamoRecallLedger(self._shared.ensure("recalls"))

    def checkpoints(self):
        from chalicelib.adapters.dynamo.stores import DynamoCheckpoints

        return DynamoCheckpoints(self._shared.ensure("checkpoints"))

    @cached_property
    def _vectors_db(self) -> Any:
        # no DynamoDB vector index: recall runs on the numpy index beside it, as in the embedded build
        from chalicelib.adapters.embedded.db import SqliteDatabase

        db = SqliteDatabase(str(self._shared.tmp_path / "vectors.db"))
        self._shared.vector_dbs.append(db)
        return db

    def index(self, dim: int = 8):
        from chalicelib.adapters.embedded.index import NumpyVectorIndex

        return NumpyVectorIndex(self._vectors_db, dim)

    def reopen(self) -> "DynamoBackend":
        return DynamoBackend(self._shared.tmp_path, self._shared)

    def close(self) -> None:
        if not self._owner:
            return
        for db in self._shared.vector_dbs:
            conn = getattr(db._local, "conn", None)
            if conn is not None:
                conn.close()
        if self._shared.created:
            self._shared.tables.delete(*self._shared.created)


class DynamoRateLimiters:
    """``DynamoRateLimiter`` instances over one table: they share every tenant's bucket, as
    concurrent Lambda instances do."""

    name, shared = "dynamo", True

    def __init__(self, tmp_path: Path) -> None:
        self.tables = dynamo_tables()
        self.tables.create("rate_limits")

    def limiter(self, policy: Any):
        from chalicelib.adapters.dynamo.rate_limiter import DynamoRateLimiter

        return DynamoRateLimiter(self.tables, policy)

    def close(self) -> None:
        self.tables.delete("rate_limits")
