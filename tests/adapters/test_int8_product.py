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


def test_rows_beyond_the_scale_are_loose_and_growing_keeps_the_rows():
    vecs = np.zeros((4, 8), dtype=np.float32)
    vecs[0, 0], vecs[1, 1] = 0.5, -0.4
    rows = Int8Rows(vecs, 2)
    assert rows.basis is None and rows.loose == {} and rows.limit == pytest.approx(0.625)
    before = rows.codes[:2].copy()
    rows.grow(100)
    assert rows.codes.shape == (100, 8) and np.array_equal(rows.codes[:2], before)
    assert rows.put(50, np.full(8, -0.25, np.float32), 100)
    assert rows.codes[50].tolist() == [128 - round(0.25 * rows.scale)] * 8 and rows.loose == {}
    assert rows.put(51, np.full(8, 0.7, np.float32), 100)  # clipped: scored in float32 at every search
    assert rows.loose_rows().tolist() == [51]
    assert rows.put(51, np.full(8, 0.1, np.float32), 100) and rows.loose == {}  # written again, within the scale


def test_the_projection_keeps_the_directions_the_rows_are_in():
    """Rows in a 40-dimension subspace of 384: the copy keeps 256 directions, which hold all of it;
    a row outside the subspace is loose, and so many of them ask for a new copy."""
    rng = np.random.default_rng(4)
    span = np.linalg.qr(rng.standard_normal((384, 40)))[0].astype(np.float32)  # orthonormal columns
    vecs = (rng.standard_normal((3000, 40)).astype(np.float32) @ span.T)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    rows = Int8Rows(np.concatenate([vecs, np.zeros((1000, 384), np.float32)]), 3000, dims=256)
    assert rows.basis.shape == (384, 256) and rows.codes.shape == (4000, 256) and rows.loose == {}
    assert np.allclose(np.linalg.norm(vecs @ rows.basis, axis=1), 1, atol=1e-4)  # nothing of the rows lost
    outside = rng.standard_normal(384).astype(np.float32)
    outside -= span @ (span.T @ outside)  # in none of the rows' directions...
    outside /= np.linalg.norm(outside)
    assert np.linalg.norm(outside @ rows.basis) < 0.95  # ...so (mostly) in none the copy keeps
    assert rows.put(3000, outside, 3001) and rows.loose_rows().tolist() == [3000]
    kept = [rows.put(3001 + i, outside, 3002 + i) for i in range(64)]
    assert all(kept[:63]) and not kept[63]  # 65 loose rows of 3,065: past 64, a new copy


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
    assert index.int8_min_rows <= n
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


@pytest.mark.parametrize("dim", [64, 384])  # 384: projected on 256 directions
def test_loose_rows_are_found_and_many_make_a_new_copy(tmp_path, monkeypatch, dim):
    """A row the copy renders badly (beyond its scale, or outside its directions) is still ranked on its
    float32 score; past 1/64 of the rows (at least 64), the copy is made again from the rows as they are."""
    monkeypatch.setattr(numpy_index, "_INT8_MIN_ROWS", 1)
    monkeypatch.setattr(numpy_index, "_RERANK_MIN", 2)
    rng = np.random.default_rng(5)
    index = NumpyVectorIndex(SqliteDatabase(str(tmp_path / "vectors.db")), dim)
    base = rng.standard_normal((8, dim)).astype(np.float32)  # the rows are mixes of 8 directions
    index.upsert("t1", [IndexEntry(f"x{i}", rng.standard_normal(8).astype(np.float32) @ base, text="")
                        for i in range(2000)])
    index.search("t1", base[0], IndexFilter(), 1)
    part = index._partition("t1")
    first = part.int8
    assert first is not None and not first.loose and (first.basis is not None) == (dim == 384)

    def badly_rendered(j: int) -> np.ndarray:
        if first.basis is None:  # all in one dimension: beyond the scale
            assert first.limit < 1
            return np.eye(dim, dtype=np.float32)[j % dim]
        v = rng.standard_normal(dim).astype(np.float32)  # in none of the copy's directions
        v -= first.basis @ (first.basis.T @ v)
        return v / np.linalg.norm(v)

    odd = [badly_rendered(j) for j in range(65)]
    for j in range(3):
        index.upsert("t1", [IndexEntry(f"odd{j}", odd[j], text="")])
        assert index.search("t1", odd[j], IndexFilter(), 1)[0][0] == f"odd{j}"
    assert part.int8 is first and len(first.loose) == 3
    index.upsert("t1", [IndexEntry(f"odd{j}", odd[j], text="") for j in range(3, 64)])
    assert part.int8 is first and len(first.loose) == 64
    index.upsert("t1", [IndexEntry("odd64", odd[64], text="")])
    assert part.int8 is None  # 65 of 2,065 rows
    assert index.search("t1", odd[1], IndexFilter(), 1)[0][0] == "odd1"
    assert part.int8 is not None and part.int8 is not first


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
