"""The sign codes the embedded index ranks large partitions with first: their distances are the
numbers of signs two vectors differ in about the centre, ``nearest`` keeps every row as near as the
count-th, and at the size they are used for the index answers the float32 product's top k."""
from __future__ import annotations

import numpy as np
import pytest

from chalicelib.adapters.embedded import index as numpy_index
from chalicelib.adapters.embedded.index import NumpyVectorIndex
from chalicelib.adapters.embedded.sign_codes import SignCodes
from chalicelib.adapters.embedded.db import SqliteDatabase
from chalicelib.ports import IndexEntry, IndexFilter


def plain_distances(vecs: np.ndarray, q: np.ndarray, centre: np.ndarray) -> np.ndarray:
    """Dimension by dimension: in how many a row and ``q`` lie on different sides of the centre."""
    return ((vecs > centre) != (q > centre)).sum(axis=1)


@pytest.mark.parametrize("n, dim", [(1, 384), (37, 16), (500, 100), (3000, 384), (300, 1536)])
def test_distances_count_the_signs_that_differ(n, dim):
    rng = np.random.default_rng(n + dim)
    vecs = rng.standard_normal((n + 5, dim)).astype(np.float32)  # rows past n: capacity, not rows
    codes = SignCodes(vecs, n)
    assert codes.centre == pytest.approx(vecs[:n].mean(axis=0), abs=1e-5)  # under 4,096 rows: all of them
    q = rng.standard_normal(dim).astype(np.float32)
    want = plain_distances(vecs[:n], q, codes.centre)
    assert np.array_equal(codes.distances(q, n), want)
    rows = np.array(sorted(rng.choice(n, min(n, 7), replace=False)))
    assert np.array_equal(codes.distances(q, n, rows), want[rows])


def test_nearest_keeps_every_row_as_near_as_the_count_th():
    rng = np.random.default_rng(4)
    vecs = rng.standard_normal((2000, 24)).astype(np.float32)
    codes = SignCodes(vecs, 2000)
    for j in range(20):
        q = rng.standard_normal(24).astype(np.float32)
        dist = plain_distances(vecs, q, codes.centre)
        count = [1, 10, 150, 700][j % 4]
        cutoff = np.sort(dist)[count - 1]
        assert codes.nearest(q, 2000, None, count).tolist() == np.flatnonzero(dist <= cutoff).tolist()
        rows = np.flatnonzero(rng.random(2000) < 0.5)  # 1,000 rows or so
        got = codes.nearest(q, 2000, rows, count)
        cutoff = np.sort(dist[rows])[count - 1]
        assert got.tolist() == rows[dist[rows] <= cutoff].tolist()
    assert codes.nearest(q, 2000, None, 2000).tolist() == list(range(2000))
    assert codes.nearest(q, 2000, rows, rows.size + 3).tolist() == rows.tolist()


def test_set_and_grow_keep_each_rows_code():
    rng = np.random.default_rng(6)
    vecs = rng.standard_normal((10, 70)).astype(np.float32)
    codes = SignCodes(vecs, 6)
    before = codes.bits[:, :6].copy()
    codes.grow(40)
    assert codes.bits.shape == (2, 40) and np.array_equal(codes.bits[:, :6], before)
    row = rng.standard_normal(70).astype(np.float32)
    codes.set(33, row)
    q = rng.standard_normal(70).astype(np.float32)
    assert codes.distances(q, 40)[33] == plain_distances(row[None], q, codes.centre)[0]
    assert np.array_equal(codes.bits[:, 33], codes.pack(row[None])[:, 0])


def counted_float32_scores(monkeypatch) -> list[int | None]:
    """What each float32 scoring of the index scores, as it runs: the number of rows listed, or
    None for every row of the partition."""
    scored: list[int | None] = []
    cosines = NumpyVectorIndex._cosines

    def counted(self, part, q, rows=None):
        scored.append(None if rows is None else len(rows))
        return cosines(self, part, q, rows)

    monkeypatch.setattr(NumpyVectorIndex, "_cosines", counted)
    return scored


def test_a_large_partition_finds_the_float32_top_k(tmp_path, monkeypatch):
    """20k lessons in clusters of look-alikes (near-ties), a third shared and a third for each of
    two agents, queried by one agent or the other (two thirds of the rows): after the sign pass and float32 on the nearest rows, the ten best are the
    float32 product's ten, in its order, and its top 90 is found but for rows of its unrelated tail
    (the rows past a query's cluster, whose cosines are noise about 0.15); every score is the
    float32 one, best first; and most rows are never scored in float32."""
    rng = np.random.default_rng(11)
    dim, n = 384, 20000
    bases = rng.standard_normal((200, dim)).astype(np.float32)
    vecs = bases[rng.integers(0, 200, n)] + 0.35 * rng.standard_normal((n, dim)).astype(np.float32)
    index = NumpyVectorIndex(SqliteDatabase(str(tmp_path / "vectors.db")), dim, threads=2)
    agents = [None, "a1", "a2"]
    entries = [IndexEntry(f"x{i}", vecs[i], agent_id=agents[i % 3], text="") for i in range(n)]
    for start in range(0, n, 5000):
        index.upsert("t1", entries[start : start + 5000])
    assert numpy_index._SIGNS_MIN_ROWS <= n
    scored = counted_float32_scores(monkeypatch)
    unit = vecs / np.linalg.norm(vecs, axis=1, keepdims=True)
    found = 0
    for j in range(40):
        q = bases[j] + 0.3 * rng.standard_normal(dim).astype(np.float32)
        qn = q / np.linalg.norm(q)
        flt = IndexFilter(agent_id="a2" if j % 2 else "a1")
        keep = np.array([a is None or a == flt.agent_id for a in (agents[i % 3] for i in range(n))])
        exact = np.where(keep, unit @ qn, -np.inf)
        want = [f"x{i}" for i in np.argsort(-exact, kind="stable")[:90]]
        got = index.search("t1", q, flt, 90)
        assert [i for i, _ in got[:10]] == want[:10]
        assert [s for _, s in got] == pytest.approx([float(exact[int(i[1:])]) for i, _ in got], abs=1e-5)
        assert [s for _, s in got] == sorted((s for _, s in got), reverse=True) and len(got) == 90
        missed = set(want) - {i for i, _ in got}
        assert all(exact[int(i[1:])] < 0.2 for i in missed)  # the tail's noise, never the cluster's rows
        found += 90 - len(missed)
    assert found / (40 * 90) >= 0.98
    assert len(scored) == 40 and None not in scored and max(scored) * 2 <= keep.sum()
    assert index._partition("t1").signs is not None


def test_codes_too_alike_leave_the_float32_product_to_answer(tmp_path, monkeypatch):
    """Most rows one vector (a lesson kept in many scopes), the rest another: the code nearest a
    query by the first ties more than half the rows, so the search scores every row (once) rather
    than most of them after a pass that told them nothing."""
    monkeypatch.setattr(numpy_index, "_SIGNS_MIN_ROWS", 1)
    dim, n = 32, 2000
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((2, dim)).astype(np.float32)
    vecs = np.where((np.arange(n) % 10 < 7)[:, None], a, b)
    index = NumpyVectorIndex(SqliteDatabase(str(tmp_path / "vectors.db")), dim)
    index.upsert("t1", [IndexEntry(f"x{i}", vecs[i], text="") for i in range(n)])
    scored = counted_float32_scores(monkeypatch)
    q = a + 0.1 * rng.standard_normal(dim).astype(np.float32)
    exact = (vecs / np.linalg.norm(vecs, axis=1, keepdims=True)) @ (q / np.linalg.norm(q))
    got = index.search("t1", q, IndexFilter(), 5)  # ties: the best five scores, each its row's
    assert [s for _, s in got] == pytest.approx(sorted(exact, reverse=True)[:5], abs=1e-6)
    assert [s for _, s in got] == pytest.approx([exact[int(i[1:])] for i, _ in got], abs=1e-6)
    part = index._partition("t1")
    assert part.signs is not None and part.signs.nearest(q, n, None, 200).size == 1400
    assert scored == [None]
