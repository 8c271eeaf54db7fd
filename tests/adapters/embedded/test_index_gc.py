"""A tenant's rows are no work for Python's cyclic garbage collector: a full collection of a server
holding 1e5 lessons walked every id and tool set of them (about 40 ms, a recall's tail)."""
from __future__ import annotations

import gc

import numpy as np

from chalicelib.adapters.embedded.index import NumpyVectorIndex
from chalicelib.adapters.embedded.db import SqliteDatabase
from chalicelib.ports import IndexEntry, IndexFilter

DIM = 8
TOOLS = ("sql.query", "http.get", "orders.lookup", "email.send")


def collector_work() -> int:
    """References a full collection follows now: those of every object it tracks."""
    gc.collect()
    return sum(len(gc.get_referents(o)) for o in gc.get_objects())


def test_rows_add_no_work_for_the_garbage_collector(tmp_path):
    rows = 20_000
    index = NumpyVectorIndex(SqliteDatabase(str(tmp_path / "vectors.db")), DIM)
    index.upsert("t", [IndexEntry("warm", np.ones(DIM, np.float32), tools=("sql.query",), text="x")])
    entries = [IndexEntry(f"e{i}", np.ones(DIM, np.float32), f"a{i % 3}", None, (TOOLS[i % 4], TOOLS[i % 3]),
                          text=f"the {TOOLS[i % 4]} call timed out, row {i % 50}") for i in range(rows)]
    before = collector_work()
    index.upsert("t", entries)
    index.delete("t", [f"e{i}" for i in range(0, rows, 7)])
    reloaded = NumpyVectorIndex(SqliteDatabase(str(tmp_path / "vectors.db")), DIM)
    assert reloaded.count("t") == index.count("t")  # a loaded tenant too
    grown = collector_work() - before
    assert grown < rows // 20, f"the collector follows {grown} more references for {rows} rows"
    hits = index.search("t", np.ones(DIM, np.float32), IndexFilter(agent_id="a1", tools=("http.get",)), 3)
    assert len(hits) == 3 and all(int(i[1:]) % 3 == 1 and int(i[1:]) % 7 for i, _ in hits)
