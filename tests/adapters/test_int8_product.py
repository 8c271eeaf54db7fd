"""The 8-bit product the embedded index ranks large partitions with: onnxruntime runs the graph this
module encodes by hand, its sums are the exact integer products, and at the size it is used for it
picks the rows float32 would have picked."""
from __future__ import annotations

import numpy as np
import pytest

from chalicelib.adapters import int8_product, numpy_index
from chalicelib.adapters.int8_product import Int8Rows
from chalicelib.adapters.numpy_index import NumpyVectorIndex
from chalicelib.adapters.sqlite_db import SqliteDatabase
from chalicelib.ports import IndexEntry, IndexFilter


@pytest.mark.parametrize("n, d", [(1, 384), (37, 16), (5000, 384), (300, 1536)])
def test_the_product_is_the_integer_product(n, d):
    rng = np.random.default_rng(n + d)
    rows = rng.integers(0, 256, (n, d), dtype=np.uint8)
    column = rng.integers(-127, 128, (d, 1), dtype=np.int8)
    out = np.empty(n, dtype=np.int32)
    int8_product.product(rows, column, out)
    assert np.array_equal(out, (rows.astype(np.int64) @ column.astype(np.int64)).reshape(-1))
    # a block of rows, as the index's threads run it: a view of the matrix, no copy
    half = np.empty(n - n // 2, dtype=np.int32)
    int8_product.product(rows[n // 2 :], column, half)
    assert np.array_equal(half, out[n // 2 :])


def test_quantized_rows_keep_the_order_of_the_cosines_up_to_rounding():
    rng = np.random.default_rng(3)
    vecs = rng.standard_normal((2000, 64)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    rows = Int8Rows(vecs, len(vecs))
    q = vecs[7] + 0.1 * rng.standard_normal(64).astype(np.float32)
    q /= np.linalg.norm(q)
    out = np.empty(len(vecs), dtype=np.int32)
    int8_product.product(rows.codes, int8_product.quantized_query(q), out)
    exact = vecs @ q
    # the rows' sums, less the query's constant (128 times the sum of its codes), scaled back
    column = int8_product.quantized_query(q).astype(np.int64).reshape(-1)
    approx = (out - 128 * column.sum()) / (rows.scale * 127 / np.abs(q).max())
    assert np.max(np.abs(approx - exact)) < 0.02
    assert int(np.argmax(out)) == int(np.argmax(exact)) == 7


def test_rows_beyond_the_scale_do_not_fit_and_growing_keeps_the_rows():
    vecs = np.zeros((4, 8), dtype=np.float32)
    vecs[0, 0], vecs[1, 1] = 0.5, -0.4
    rows = Int8Rows(vecs, 2)
    assert rows.fits(np.full(8, 0.6, np.float32)) and not rows.fits(np.full(8, 0.7, np.float32))
    before = rows.codes[:2].copy()
    rows.grow(100)
    assert rows.codes.shape == (100, 8) and np.array_equal(rows.codes[:2], before)
    rows.set(50, np.full(8, -0.25, np.float32))
    assert rows.codes[50].tolist() == [128 - round(0.25 * rows.scale)] * 8


def test_a_large_partition_answers_the_float32_top_k(tmp_path):
    """20k lessons in clusters of look-alikes (near-ties, the hard case for a coarse first pass): the
    8-bit pass then float32 on 4 k rows returns the lists the float32 product returns, with its scores."""
    rng = np.random.default_rng(11)
    dim, n = 384, 20000
    bases = rng.standard_normal((200, dim)).astype(np.float32)
    vecs = bases[rng.integers(0, 200, n)] + 0.35 * rng.standard_normal((n, dim)).astype(np.float32)
    index = NumpyVectorIndex(SqliteDatabase(str(tmp_path / "vectors.db")), dim, threads=2)
    agents = [None, "a1", "a2"]
    entries = [IndexEntry(f"x{i}", vecs[i], agent_id=agents[i % 3], text="") for i in range(n)]
    for start in range(0, n, 5000):
        index.upsert("t1", entries[start : start + 5000])
    assert numpy_index._INT8_MIN_ROWS <= n
    unit = vecs / np.linalg.norm(vecs, axis=1, keepdims=True)
    checked = 0
    for j in range(40):
        q = bases[j] + 0.3 * rng.standard_normal(dim).astype(np.float32)
        qn = q / np.linalg.norm(q)
        flt = IndexFilter(agent_id="a1") if j % 2 else IndexFilter()
        keep = np.array([a is None or a == flt.agent_id for a in (agents[i % 3] for i in range(n))])
        exact = np.where(keep, unit @ qn, -np.inf)
        want = np.argsort(-exact, kind="stable")[:90]
        got = index.search("t1", q, flt, 90)
        assert [i for i, _ in got] == [f"x{i}" for i in want]
        assert [s for _, s in got] == pytest.approx(exact[want].tolist(), abs=1e-5)
        checked += 1
    assert checked == 40 and index._partition("t1").int8 is not None


def test_a_row_beyond_the_scale_makes_a_new_copy(tmp_path, monkeypatch):
    monkeypatch.setattr(numpy_index, "_INT8_MIN_ROWS", 1)
    monkeypatch.setattr(numpy_index, "_RERANK_MIN", 2)
    dim = 64  # random unit rows: the largest value about 0.4, the scale's limit about 0.5
    index = NumpyVectorIndex(SqliteDatabase(str(tmp_path / "vectors.db")), dim)
    rng = np.random.default_rng(5)
    index.upsert("t1", [IndexEntry(f"x{i}", rng.standard_normal(dim).astype(np.float32), text="") for i in range(50)])
    index.search("t1", np.ones(dim, np.float32), IndexFilter(), 1)
    part = index._partition("t1")
    first = part.int8
    assert first is not None
    spike = np.zeros(dim, np.float32)
    spike[3] = 1.0  # a unit row all in one dimension: beyond every random row's largest value
    index.upsert("t1", [IndexEntry("spike", spike, text="")])
    assert part.int8 is None
    assert index.search("t1", spike, IndexFilter(), 1)[0][0] == "spike"
    assert part.int8 is not None and part.int8 is not first and part.int8.fits(spike)


def test_a_failing_runtime_leaves_float32_answering(tmp_path, monkeypatch, caplog):
    """The 8-bit product raising (a runtime that refuses the graph, memory) never fails a search:
    that search and every later one in the process rank in float32 alone."""
    monkeypatch.setattr(numpy_index, "_INT8_MIN_ROWS", 1)
    monkeypatch.setattr(numpy_index, "_RERANK_MIN", 2)
    monkeypatch.setattr(int8_product, "_unavailable", False)  # restored after the test
    calls: list[int] = []

    def broken(rows, column, out):
        calls.append(len(rows))
        raise RuntimeError("onnxruntime: out of memory")

    monkeypatch.setattr(int8_product, "product", broken)
    dim = 32
    rng = np.random.default_rng(8)
    vecs = rng.standard_normal((300, dim)).astype(np.float32)
    index = NumpyVectorIndex(SqliteDatabase(str(tmp_path / "vectors.db")), dim)
    index.upsert("t1", [IndexEntry(f"x{i}", vecs[i], text="") for i in range(300)])
    unit = vecs / np.linalg.norm(vecs, axis=1, keepdims=True)
    for j in range(3):
        q = vecs[j * 50]
        got = index.search("t1", q, IndexFilter(), 5)
        want = np.argsort(-(unit @ (q / np.linalg.norm(q))))[:5]
        assert [i for i, _ in got] == [f"x{i}" for i in want]
    assert len(calls) == 1 and not int8_product.available()
    assert "8-bit product failed" in caplog.text
