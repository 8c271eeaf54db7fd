"""The ``dynamo`` contract backend: the DynamoDB adapters against a local moto server.

One moto server (``moto_endpoint()``) serves the whole test session on 127.0.0.1 and a free port,
as the end-to-end tests run it. Every backend gets table names of its own (a unique prefix) and
drops its tables on close, so tests never see each other's items and no reset is needed.

moto's server handles requests on several threads but does not make a conditional write or a
transaction atomic against a concurrent request, which DynamoDB does. ``_AtomicMotoServer`` runs
one request at a time so concurrency tests measure the adapters, not moto's races.
"""
from __future__ import annotations

import atexit
import threading
import uuid
from functools import cached_property
from pathlib import Path
from typing import Any

import pytest

REGION = "us-east-1"
CREDENTIALS = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing"}

_lock = threading.Lock()
_endpoint: str | None = None


def moto_endpoint() -> str:
    """The URL of this session's moto server, started on first use."""
    global _endpoint
    with _lock:
        if _endpoint is None:
            pytest.importorskip("moto.server", reason="moto[server] is not installed")
            server = _atomic_moto_server()
            server.start()
            atexit.register(server.stop)
            host, port = server.get_host_and_port()
            _endpoint = f"http://{host}:{port}"
        return _endpoint


def _atomic_moto_server() -> Any:
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
    from moto.server import ThreadedMotoServer
    from werkzeug.serving import make_server

    class _QuietHandler(MotoRequestHandler):
        def log_request(self, *args: Any, **kwargs: Any) -> None:  # a line per request drowns test output
            pass

    class _AtomicMotoServer(ThreadedMotoServer):
        def _server_entry(self) -> None:  # ThreadedMotoServer's, with the app behind one lock
            app = DomainDispatcherApplication(create_backend_app)
            one_at_a_time = threading.Lock()

            def atomic(environ: Any, start_response: Any) -> Any:
                with one_at_a_time:
                    return list(app(environ, start_response))

            self._server = make_server(self._ip_address, self._port, atomic, True, request_handler=_QuietHandler)
            self._server_ready_event.set()
            self._server.serve_forever()

    return _AtomicMotoServer(ip_address="127.0.0.1", port=0, verbose=False)


_connections: dict[tuple, Any] = {}


def dynamo_tables(prefix: str | None = None, **config: Any):
    """``DynamoTables`` on the session's moto server under a fresh prefix (no table created yet).

    Tables of the same config share one connection: a botocore client costs ~0.1 s to build.
    """
    pytest.importorskip("pynamodb", reason="pynamodb is not installed")
    from chalicelib.adapters.dynamo_models import DynamoConfig, DynamoTables, connect

    prefix = prefix or f"t{uuid.uuid4().hex[:12]}-"
    cfg = DynamoConfig(prefix=prefix, region=REGION, host=moto_endpoint(), **CREDENTIALS, **config)
    shared_key = tuple(sorted((k, v) for k, v in vars(cfg).items() if k not in ("prefix", "shards")))
    with _lock:
        connection = _connections.setdefault(shared_key, connect(cfg))
    return DynamoTables(cfg, connection)


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
        from chalicelib.adapters.dynamo_stores import DynamoTenantStore

        return DynamoTenantStore(self._shared.ensure("tenants"))

    def trajectories(self):
        from chalicelib.adapters.dynamo_stores import DynamoTrajectoryStore

        return DynamoTrajectoryStore(self._shared.ensure("trajectories"))

    def experiences(self):
        from chalicelib.adapters.dynamo_stores import DynamoExperienceStore

        return DynamoExperienceStore(self._shared.ensure("experiences"))

    def queue(self):
        from chalicelib.adapters.dynamo_stores import DynamoReviewQueue

        return DynamoReviewQueue(self._shared.ensure("queue"))

    @cached_property
    def _vectors_db(self) -> Any:
        # no DynamoDB vector index: recall runs on the numpy index beside it, as in the embedded build
        from chalicelib.adapters.sqlite_db import SqliteDatabase

        db = SqliteDatabase(str(self._shared.tmp_path / "vectors.db"))
        self._shared.vector_dbs.append(db)
        return db

    def index(self, dim: int = 8):
        from chalicelib.adapters.numpy_index import NumpyVectorIndex

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
        from chalicelib.adapters.dynamo_rate_limiter import DynamoRateLimiter

        return DynamoRateLimiter(self.tables, policy)

    def close(self) -> None:
        self.tables.delete("rate_limits")
