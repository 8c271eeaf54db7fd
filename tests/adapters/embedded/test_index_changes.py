"""Two processes keep an embedded index on the same files (the server answers recalls, its review
process writes lessons): each answers what the files hold, whichever of them wrote it. Two
``NumpyVectorIndex`` on one file are two such processes: they share nothing but the file."""
from __future__ import annotations

import random
import sqlite3
from dataclasses import replace

import numpy as np
import pytest

from chalicelib.adapters.embedded import index as numpy_index
from chalicelib.adapters.embedded.index import NumpyVectorIndex
from chalicelib.adapters.embedded.db import SqliteDatabase
from chalicelib.ports import IndexFilter
from tests.adapters.embedded.test_index_fast_path import DIM, check, random_entry


def pair(tmp_path) -> tuple[NumpyVectorIndex, NumpyVectorIndex]:
    path = str(tmp_path / "vectors.db")
    return NumpyVectorIndex(SqliteDatabase(path), DIM), NumpyVectorIndex(SqliteDatabase(path), DIM)


def counting_rereads(monkeypatch) -> list[tuple[int, list[str]]]:
    calls: list[tuple[int, list[str]]] = []
    original = NumpyVectorIndex._reread

    def counted(self, conn, part, tenant_id, ids):
        calls.append((id(self), list(ids)))
        return original(self, conn, part, tenant_id, ids)

    monkeypatch.setattr(NumpyVectorIndex, "_reread", counted)
    return calls


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_each_answers_what_either_wrote(tmp_path, seed):
    rng, nrng = random.Random(seed), np.random.default_rng(seed)
    a, b = pair(tmp_path)
    live: dict[str, dict] = {"t1": {}, "t2": {}}
    for i in range(40):
        e = random_entry(rng, nrng, f"x{i}")
        live["t1"][e.experience_id] = e
    a.upsert("t1", list(live["t1"].values()))
    check(b, live, rng, nrng, queries=3)  # b loads t1 (and t2, empty) after a wrote
    check(a, live, rng, nrng, queries=3)
    for step in range(60):
        writer = rng.choice((a, b))
        tenant_id = rng.choice(("t1", "t2"))
        ids = list(live[tenant_id])
        op = rng.random()
        if op < 0.4 or not ids:  # new lessons
            new = [random_entry(rng, nrng, f"s{step}-{j}") for j in range(rng.randint(1, 3))]
            writer.upsert(tenant_id, new)
            live[tenant_id].update((e.experience_id, e) for e in new)
        elif op < 0.75:  # lessons written again: a new vector, new tools and text
            changed = [random_entry(rng, nrng, i) for i in rng.sample(ids, min(len(ids), rng.randint(1, 3)))]
            writer.upsert(tenant_id, changed)
            live[tenant_id].update((e.experience_id, e) for e in changed)
        else:  # forgotten
            gone = rng.sample(ids, min(len(ids), rng.randint(1, 2)))
            writer.delete(tenant_id, gone)
            for i in gone:
                del live[tenant_id][i]
        if step % 6 == 5:
            check(a, live, rng, nrng, queries=2)
            check(b, live, rng, nrng, queries=2)
    check(a, live, rng, nrng, queries=4)
    check(b, live, rng, nrng, queries=4)


def test_only_the_other_ones_writes_are_read_again(tmp_path, monkeypatch):
    rng, nrng = random.Random(5), np.random.default_rng(5)
    a, b = pair(tmp_path)
    first = [random_entry(rng, nrng, f"x{i}") for i in range(10)]
    a.upsert("t1", first)
    q, f = nrng.standard_normal(DIM).astype(np.float32), IndexFilter()
    b.search("t1", q, f, 3)  # b holds t1 now
    calls = counting_rereads(monkeypatch)
    a.upsert("t1", [random_entry(rng, nrng, "x1"), random_entry(rng, nrng, "x5"), random_entry(rng, nrng, "y0")])
    a.delete("t1", ["x2", "x3"])
    a.search("t1", q, f, 3)
    assert calls == []  # a holds what it wrote: nothing read again
    b.search("t1", q, f, 3)
    assert calls == [(id(b), ["x1", "x5", "y0", "x2", "x3"])]  # b reads the changed rows, once
    b.search("t1", q, f, 3)
    b.lexical_search("t1", "timeout", f, 3)
    assert len(calls) == 1
    assert b.count("t1") == a.count("t1") == 9


def test_a_tenant_not_loaded_reads_nothing_again(tmp_path, monkeypatch):
    rng, nrng = random.Random(6), np.random.default_rng(6)
    a, b = pair(tmp_path)
    a.upsert("t1", [random_entry(rng, nrng, "x0")])
    b.search("t1", np.ones(DIM, np.float32), IndexFilter(), 1)
    calls = counting_rereads(monkeypatch)
    a.upsert("t2", [random_entry(rng, nrng, "y0"), random_entry(rng, nrng, "y1")])
    b.search("t1", np.ones(DIM, np.float32), IndexFilter(), 1)
    assert calls == []  # t2 is loaded from the file when b first needs it
    assert b.count("t2") == 2 and calls == []


def test_one_that_fell_behind_the_kept_changes_loads_afresh(tmp_path, monkeypatch):
    monkeypatch.setattr(numpy_index, "_CHANGES_KEPT", 8)
    monkeypatch.setattr(numpy_index, "_PRUNE_EVERY", 4)
    rng, nrng = random.Random(7), np.random.default_rng(7)
    a, b = pair(tmp_path)
    live = {"t1": {}}
    for i in range(5):
        e = random_entry(rng, nrng, f"x{i}")
        live["t1"][e.experience_id] = e
    a.upsert("t1", list(live["t1"].values()))
    check(b, live, rng, nrng, queries=2)
    for i in range(30):  # far more changes than are kept, while b does not look
        e = random_entry(rng, nrng, f"x{i % 12}")
        a.upsert("t1", [e])
        live["t1"][e.experience_id] = e
    a.delete("t1", ["x3"])
    del live["t1"]["x3"]
    with sqlite3.connect(tmp_path / "vectors.db") as conn:
        (kept,) = conn.execute("SELECT COUNT(*) FROM index_changes").fetchone()
    assert kept <= 8 + 4  # pruned as it went
    calls = counting_rereads(monkeypatch)
    check(b, live, rng, nrng, queries=3)
    assert calls == []  # not read change by change: loaded again
    check(a, live, rng, nrng, queries=3)


def test_an_entry_written_by_the_other_keeps_its_terms_and_filters(tmp_path):
    a, b = pair(tmp_path)
    v = np.eye(DIM, dtype=np.float32)
    a.upsert("t1", [replace(random_entry(random.Random(1), np.random.default_rng(1), "x0"), vector=v[0],
                            agent_id="a1", tools=("sql.query",), text="refund parcel timeout", intent=None)])
    assert b.search("t1", v[0], IndexFilter(agent_id="a1"), 5)[0][0] == "x0"
    b.upsert("t1", [replace(random_entry(random.Random(2), np.random.default_rng(2), "x0"), vector=v[1],
                            agent_id="a2", tools=("email.send",), text="billing schema", intent=None)])
    # a reads b's row: the old agent, tools and words no longer find it
    assert a.search("t1", v[1], IndexFilter(agent_id="a1"), 5) == []
    assert [i for i, _ in a.search("t1", v[1], IndexFilter(agent_id="a2", tools=("email.send",)), 5)] == ["x0"]
    assert a.lexical_search("t1", "refund", IndexFilter(agent_id="a2"), 5) == []
    assert [i for i, _ in a.lexical_search("t1", "billing", IndexFilter(agent_id="a2"), 5)] == ["x0"]


def test_an_idle_partition_is_let_go_and_loaded_again_as_the_files_hold_it(tmp_path):
    now = [0.0]
    path = str(tmp_path / "vectors.db")
    server = NumpyVectorIndex(SqliteDatabase(path), DIM)
    reviews = NumpyVectorIndex(SqliteDatabase(path), DIM, idle_seconds=600, clock=lambda: now[0])
    rng, nrng = random.Random(8), np.random.default_rng(8)
    live = {"t1": {f"x{i}": random_entry(rng, nrng, f"x{i}") for i in range(6)},
            "t2": {f"y{i}": random_entry(rng, nrng, f"y{i}") for i in range(4)}}
    for tenant_id, entries in live.items():
        reviews.upsert(tenant_id, list(entries.values()))
    assert set(reviews._parts) == {"t1", "t2"}
    now[0] = 400.0
    reviews.count("t2")  # t2 used again; t1 not
    now[0] = 700.0
    reviews.count("t2")
    assert set(reviews._parts) == {"t2"}  # t1 idle 700 s: let go
    e = random_entry(rng, nrng, "x9")
    server.upsert("t1", [e])  # written while the review process holds no copy
    live["t1"]["x9"] = e
    check(reviews, live, rng, nrng, queries=3)  # t1 loaded again, with what the files hold
    check(server, live, rng, nrng, queries=3)
    assert set(reviews._parts) == {"t1", "t2"}


def test_a_partition_is_kept_for_the_process_life_by_default(tmp_path):
    now = [0.0]
    index = NumpyVectorIndex(SqliteDatabase(str(tmp_path / "vectors.db")), DIM, clock=lambda: now[0])
    index.upsert("t1", [random_entry(random.Random(1), np.random.default_rng(1), "x0")])
    now[0] = 1e9
    index.count("t2")
    assert set(index._parts) == {"t1", "t2"}
