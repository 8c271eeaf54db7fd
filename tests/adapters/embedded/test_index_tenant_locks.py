"""One tenant's searches and writes of the embedded index never wait on another tenant's: each
partition has its own lock. With one lock for the index, a recall of a tenant of 100 lessons waited
behind every matrix product of a tenant of 100k (about 5 ms each, one after the other under load).

A thread holds tenant A's partition lock, as a long search or write of A would; the other tenant's
calls must finish meanwhile, and A's own must wait for it (so the lock is the one A's calls take)."""
from __future__ import annotations

import threading

import numpy as np
import pytest

from chalicelib.adapters.embedded.index import NumpyVectorIndex
from chalicelib.adapters.embedded.db import SqliteDatabase
from chalicelib.ports import IndexEntry, IndexFilter

DIM = 4
WAIT = 10.0  # seconds a call that should not block is given (it takes milliseconds)


def entry(i: int) -> IndexEntry:
    vec = np.zeros(DIM, np.float32)
    vec[i % DIM] = 1.0
    return IndexEntry(f"e{i}", vec, tools=("orders.lookup",), text=f"the orders lookup timed out {i}")


@pytest.fixture
def index(tmp_path) -> NumpyVectorIndex:
    index = NumpyVectorIndex(SqliteDatabase(str(tmp_path / "vectors.db")), DIM)
    for tenant in ("a", "b"):
        index.upsert(tenant, [entry(i) for i in range(8)])
    return index


CALLS = {
    "search": lambda ix, t: ix.search(t, np.ones(DIM, np.float32), IndexFilter(), 3),
    "hybrid_search": lambda ix, t: ix.hybrid_search(t, np.ones(DIM, np.float32), "orders timed out", IndexFilter(), 3),
    "lexical_search": lambda ix, t: ix.lexical_search(t, "orders timed out", IndexFilter(), 3),
    "similarities": lambda ix, t: ix.similarities(t, np.ones(DIM, np.float32), ["e1", "e2"]),
    "upsert": lambda ix, t: ix.upsert(t, [entry(20)]),
    "delete": lambda ix, t: ix.delete(t, ["e3"]),
}


def run(fn) -> tuple[threading.Thread, list]:
    out: list = []
    worker = threading.Thread(target=lambda: out.append(fn()), daemon=True)
    worker.start()
    return worker, out


@pytest.mark.parametrize("name", sorted(CALLS))
def test_a_tenants_calls_do_not_wait_on_another_tenants_partition(index, name):
    call = CALLS[name]
    held, release = threading.Event(), threading.Event()

    def hold_a() -> None:
        with index._partition("a").lock:
            held.set()
            release.wait(WAIT * 3)

    holder = threading.Thread(target=hold_a, daemon=True)
    holder.start()
    assert held.wait(WAIT)
    try:
        other, other_out = run(lambda: call(index, "b"))
        other.join(WAIT)
        assert not other.is_alive(), f"{name} of tenant b waited on tenant a's partition"
        own, own_out = run(lambda: call(index, "a"))
        own.join(0.3)
        assert own.is_alive(), f"{name} of tenant a did not take its partition's lock"
    finally:
        release.set()
    own.join(WAIT)
    holder.join(WAIT)
    assert not own.is_alive() and len(own_out) == 1 and len(other_out) == 1
    if name in ("search", "hybrid_search", "lexical_search", "similarities"):
        assert own_out[0] and other_out[0]  # both tenants found their rows
