"""OpenSearch backends for the contract suites: the VectorIndex port only.

``opensearch``: the adapter as on a managed domain or a local node (document ids, writes
refreshed before they return). ``opensearch-serverless``: the same adapter with ``serverless=True`` -- no document
ids (replace and delete by lookup), no refresh -- against the same local node; the test harness
refreshes after each write to stand for the seconds Serverless takes to make a write searchable.
``opensearch-sharded``: the adapter on an index of three primary shards with tenant routing, so
every read of the suite finds what its writes placed only if they were routed alike.
All use the lucene engine, the only one the local node runs.

Each backend instance gets an index of its own, deleted on close, so tests never see each other's
data; ``reopen()`` builds a new client and adapter over the same index (a restart).

These backends implement no store or queue: the collection hook in ``tests/conftest.py``
deselects the tests that take those ports as fixtures and marks the rest ``opensearch``.
"""
from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from chalicelib.adapters.opensearch.index import OpenSearchVectorIndex, build_client
from chalicelib.adapters.opensearch.queries import IndexSpec
from tests.support.opensearch import node_url

OTHER_PORT_FIXTURES = frozenset({"tenant_store", "trajectory_store", "experience_store", "review_queue", "recall_ledger",
                                 "checkpoints", "tenant_data"})


class _RefreshingIndex(OpenSearchVectorIndex):
    """Serverless mode, with each write made searchable at once by the harness."""

    def _settle(self) -> None:
        self.ensure_index()
        self.client.indices.refresh(index=self.spec.name)

    def upsert(self, tenant_id, entries) -> None:
        super().upsert(tenant_id, entries)
        self._settle()

    def delete(self, tenant_id, experience_ids) -> None:
        super().delete(tenant_id, experience_ids)
        self._settle()


class OpenSearchBackend:
    name, durable = "opensearch", True
    serverless = False
    shards = 1

    def __init__(self, tmp_path: Path, index_name: str | None = None, clients: list | None = None) -> None:
        self.url = node_url()  # fails the test, with the node's log, when no node can run
        self.client = build_client(self.url, service="none", timeout=30)
        self.index_name = index_name or f"hindsight-contract-{uuid.uuid4().hex[:12]}"
        self._clients = [] if clients is None else clients  # shared with reopened copies, closed together
        self._clients.append(self.client)

    def index(self, dim: int | None = None) -> OpenSearchVectorIndex:
        from .conftest import DIM

        spec = IndexSpec(self.index_name, dim or DIM, engine="lucene", replicas=0, serverless=self.serverless,
                         shards=self.shards)
        if self.serverless:
            return _RefreshingIndex(self.client, spec)
        # refresh=True rather than the default wait_for: the same read-after-write, without
        # waiting up to a refresh interval (~1 s) per write (the suite: ~20 s instead of ~90 s)
        return OpenSearchVectorIndex(self.client, spec, refresh=True)

    def _absent(self, port: str):
        pytest.skip(f"the {self.name} backend implements only the VectorIndex port, not {port}")

    def tenants(self):
        self._absent("TenantStore")

    def trajectories(self):
        self._absent("TrajectoryStore")

    def experiences(self):
        self._absent("ExperienceStore")

    def queue(self):
        self._absent("ReviewQueue")

    def reopen(self) -> "OpenSearchBackend":
        return type(self)(Path(), self.index_name, self._clients)

    def close(self) -> None:
        self.client.indices.delete(index=self.index_name, ignore_unavailable=True)
        for client in self._clients:
            client.close()


class OpenSearchServerlessBackend(OpenSearchBackend):
    name = "opensearch-serverless"
    serverless = True


class OpenSearchShardedBackend(OpenSearchBackend):
    name = "opensearch-sharded"
    shards = 3


INDEX_ONLY_BACKENDS = {b.name: b for b in (OpenSearchBackend, OpenSearchServerlessBackend, OpenSearchShardedBackend)}
