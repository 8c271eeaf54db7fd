"""DynamoDB tables on this test process's moto server (devtools/moto_server.py).

Every caller gets table names of its own (a unique prefix) and drops its tables when done, so tests
never see each other's items and no reset is needed.
"""
from __future__ import annotations

import threading
import uuid
from typing import Any

import pytest

from devtools import moto_server
from devtools.moto_server import CREDENTIALS, REGION

__all__ = ["CREDENTIALS", "REGION", "dynamo_tables", "moto_endpoint"]

_lock = threading.Lock()
_connections: dict[tuple, Any] = {}


def moto_endpoint() -> str:
    pytest.importorskip("moto.server", reason="moto[server] is not installed")
    return moto_server.moto_endpoint()


def dynamo_tables(prefix: str | None = None, **config: Any):
    """``DynamoTables`` on the session's moto server under a fresh prefix (no table created yet).

    Tables of the same config share one connection: a botocore client costs ~0.1 s to build.
    """
    pytest.importorskip("pynamodb", reason="pynamodb is not installed")
    from chalicelib.adapters.dynamo.models import DynamoConfig, DynamoTables, connect

    prefix = prefix or f"t{uuid.uuid4().hex[:12]}-"
    cfg = DynamoConfig(prefix=prefix, region=REGION, host=moto_endpoint(), **CREDENTIALS, **config)
    shared_key = tuple(sorted((k, v) for k, v in vars(cfg).items() if k not in ("prefix", "shards")))
    with _lock:
        connection = _connections.setdefault(shared_key, connect(cfg))
    return DynamoTables(cfg, connection)
