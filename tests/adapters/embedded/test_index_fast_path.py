"""The embedded index's data layout (postings in flat arrays with recent rows beside them, the
tenant loaded in bulk, the product split over threads) answers what the plain computation answers:
every entry of the tenant checked against the filter one by one, its cosine, and its BM25 score
summed term by term. Random data, with replaced and deleted entries and a second tenant holding the
same ids."""
from __future__ import annotations

import random
from collections import Counter

import numpy as np
import pytest

from chalicelib.adapters.embedded import index as numpy_index
from chalicelib.adapters.embedded.index import NumpyVectorIndex
from chalicelib.adapters.embedded.db import SqliteDatabase
from chalicelib.domain.lexical import B, K1, Bm25Params, idf, terms
from chalicelib.domain.models import match_key, match_keys
from chalicelib.ports import IndexEntry, IndexFilter, hybrid_by_parts

DIM = 16
WORDS = ("timeout retry orders.lookup sql_query MissingParameter refund parcel schema page backoff "
         "customer billing deploy #design @omar v2.4.1 rate limited stale cache empty result").split()
AGENTS = (None, None, "a1", "a2", "A1 ")
USERS = (None, None, None, "u1")
TASKS = (None, "query", "Operation", "analysis ")
INTENTS = (None, "fix", "explore")
TOOLS = ("sql.query", "HTTP.get", "orders.lookup", "email.send")


def random_entry(rng: random.Random, nrng: np.random.Generator, experience_id: str) -> IndexEntry:
    return IndexEntry(
        experience_id, nrng.standard_normal(DIM).astype(np.float32) * rng.uniform(0.1, 3), rng.choice(AGENTS),
        rng.choice(USERS), tuple(rng.sample(TOOLS, rng.randint(0, 2))), rng.choice(TASKS), (),
        " ".join(rng.choices(WORDS, k=rng.randint(0, 12))), rng.choice(INTENTS),
    )


def random_filter(rng: random.Random) -> IndexFilter:
    return IndexFilter(
        agent_id=rng.choice(("a1", "a2", None, "nobody")), user_id=rng.choice(("u1", None)),
        tools=tuple(rng.sample(TOOLS + ("unknown.tool", " "), rng.randint(0, 2))),
        task_type=rng.choice(TASKS), intent=rng.choice(INTENTS),
    )


def passes(e: IndexEntry, f: IndexFilter) -> bool:
    if e.agent_id is not None and e.agent_id != f.agent_id:
        return False
    if e.user_id is not None and e.user_id != f.user_id:
        return False
    if match_key(f.task_type) and match_key(e.task_type) and match_key(e.task_type) != match_key(f.task_type):
        return False
    if match_key(f.intent) and match_key(e.intent) and match_key(e.intent) != match_key(f.intent):
        return False
    if f.tools and match_keys(e.tools) and not match_keys(e.tools) & match_keys(f.tools):
        return False
    return True


def unit(v: np.ndarray) -> np.ndarray:
    v = np.asarray(v, dtype=np.float32)
    n = float(np.linalg.norm(v))
    return v / n if n > 0 else v


def plain_cosines(live: dict[str, IndexEntry], q: np.ndarray, f: IndexFilter) -> dict[str, float]:
    qn = unit(q)
    return {i: float(np.dot(unit(e.vector), qn)) for i, e in live.items() if passes(e, f)}


def plain_bm25(live: dict[str, IndexEntry], text: str, f: IndexFilter) -> dict[str, float]:
    """BM25 document by document, in float32 as the index computes it, terms summed in the same order."""
    counts = {i: Counter(terms(e.text)) for i, e in live.items()}
    lengths = {i: sum(c.values()) for i, c in counts.items()}
    avg = np.float32(sum(lengths.values())) / np.float32(len(live))
    out = {}
    for i, c in counts.items():
        score = np.float32(0)
        for term in dict.fromkeys(terms(text)):
            if term not in c:
                continue
            df = sum(1 for other in counts.values() if term in other)
            tf = np.float32(c[term])
            norm = tf + np.float32(K1 * (1 - B + B * np.float32(lengths[i]) / max(avg, 1e-9)))
            score = np.float32(score + np.float32(np.float32(np.float32(idf(df, len(live))) * tf) * np.float32(K1 + 1)) / norm)
        if score > 0 and passes(live[i], f):
            out[i] = float(score)
    return out


def assert_top(got: list[tuple[str, float]], want: dict[str, float], k: int, exact: bool) -> None:
    """``got`` is a best-first top ``k`` of ``want`` (ties in any order), with ``want``'s scores."""
    assert len(got) == min(k, len(want))
    for i, score in got:
        assert i in want
        assert score == want[i] if exact else score == pytest.approx(want[i], rel=1e-6, abs=1e-6)
    scores = [s for _, s in got]
    assert scores == sorted(scores, reverse=True)
    best = sorted(want.values(), reverse=True)[: len(got)]
    assert scores == (best if exact else pytest.approx(best, rel=1e-6, abs=1e-6))


def nearest_by_code(index: NumpyVectorIndex, tenant_id: str, live: dict[str, IndexEntry], q: np.ndarray,
                    cos: dict[str, float], k: int) -> dict[str, float]:
    """Of ``cos`` (the rows the filter leaves), those a search of ``k`` scores in float32: all of
    them, or when the partition ranks by sign codes first (``sign_codes``) and that pass leaves rows
    out, the rows as near the query by code as the ``keep``-th nearest, each code made here sign by
    sign from the entry's own vector about the partition's centre."""
    signs = index._partition(tenant_id).signs
    keep = max(k * numpy_index._RESCORE, len(cos) // numpy_index._RESCORE_SHARE)
    if signs is None or len(live) < numpy_index._SIGNS_MIN_ROWS or len(cos) <= 2 * keep:
        return cos
    side = unit(q) > signs.centre
    dist = {i: int(((unit(live[i].vector) > signs.centre) != side).sum()) for i in cos}
    cutoff = sorted(dist.values())[keep - 1]
    near = {i: c for i, c in cos.items() if dist[i] <= cutoff}
    return near if len(near) * 2 <= len(cos) else cos


def check(index: NumpyVectorIndex, tenants: dict[str, dict[str, IndexEntry]], rng: random.Random,
          nrng: np.random.Generator, queries: int = 25) -> None:
    for tenant_id, live in tenants.items():
        assert index.count(tenant_id) == len(live)
        for _ in range(queries):
            f = random_filter(rng)
            q = nrng.standard_normal(DIM).astype(np.float32)
            text = " ".join(rng.choices(WORDS, k=rng.randint(1, 6)))
            cos, lex = plain_cosines(live, q, f), plain_bm25(live, text, f)
            for k in (1, 5, 1000):
                got = index.search(tenant_id, q, f, k)
                assert_top(got, nearest_by_code(index, tenant_id, live, q, cos, k), k, exact=False)
                assert_top(index.lexical_search(tenant_id, text, f, k), lex, k, exact=True)
            semantic, lexical = index.hybrid_search(tenant_id, q, text, f, 5)
            assert lexical == dict(index.lexical_search(tenant_id, text, f, 5))
            assert set(semantic) <= set(cos) and set(lexical) <= set(semantic)
            # one mask for both searches answers what the three searches apart answer, bit for bit
            parts = hybrid_by_parts(index, tenant_id, q, text, f, 5)
            assert (list(semantic.items()), list(lexical.items())) == tuple(list(d.items()) for d in parts)


# each term's BM25 shares kept between writes: for every term, or for some (a budget of 40 postings);
# those of the terms many rows hold as a vector over every row (all of them: a share of 0)
# signs: every search ranks the rows its filter leaves by their sign codes first (``sign_codes``),
# then scores the nearest in float32, at least 2 k and a quarter of them: the first pass leaves rows
# out, and ``nearest_by_code`` makes the same choice from the entries' own vectors
@pytest.mark.parametrize("seed, term_cache, dense_share, signs", [
    (1, numpy_index._TERM_CACHE_POSTINGS, numpy_index._DENSE_SHARE, False), (2, 40, numpy_index._DENSE_SHARE, False),
    (3, numpy_index._TERM_CACHE_POSTINGS, 0.0, False),
    (4, numpy_index._TERM_CACHE_POSTINGS, numpy_index._DENSE_SHARE, True),
])
def test_index_answers_as_the_plain_computation_through_writes_and_a_reload(tmp_path, monkeypatch, seed, term_cache,
                                                                           dense_share, signs):
    passes_run = counted_sign_passes(monkeypatch)
    monkeypatch.setattr(numpy_index, "_RESCORE", 2)
    monkeypatch.setattr(numpy_index, "_RESCORE_SHARE", 4)
    monkeypatch.setattr(numpy_index, "_SIGNS_MIN_ROWS", 1 if signs else 10**9)
    monkeypatch.setattr(numpy_index, "_TERM_CACHE_POSTINGS", term_cache)
    monkeypatch.setattr(numpy_index, "_DENSE_SHARE", dense_share)
    monkeypatch.setattr(numpy_index._Postings, "REBUILD_MIN", 16)  # rebuilds, stale and recent rows all happen
    monkeypatch.setattr(numpy_index, "_ROWS_PER_THREAD", 8)  # the product split in blocks
    monkeypatch.setattr(numpy_index, "_GATHER_ROWS", 5)  # a filter's rows copied a few at a time
    rng, nrng = random.Random(seed), np.random.default_rng(seed)
    db = SqliteDatabase(str(tmp_path / "vectors.db"))
    index = NumpyVectorIndex(db, DIM, threads=3)
    tenants: dict[str, dict[str, IndexEntry]] = {"t1": {}, "t2": {}}
    for step in range(6):
        for tenant_id, live in tenants.items():  # the same ids in both tenants, other contents
            ids = [f"x{rng.randrange(150)}" for _ in range(rng.randint(20, 60))]
            batch = {i: random_entry(rng, nrng, i) for i in ids}  # new ids and replaced ones
            index.upsert(tenant_id, list(batch.values()))
            live.update(batch)
            gone = rng.sample(sorted(live), min(len(live) // 6, 12))
            index.delete(tenant_id, gone + ["never-stored"])
            for i in gone:
                del live[i]
        check(index, tenants, rng, nrng, queries=8)
    reloaded = NumpyVectorIndex(SqliteDatabase(str(tmp_path / "vectors.db")), DIM)  # the bulk load
    check(reloaded, tenants, rng, nrng)
    check(index, tenants, rng, nrng)
    assert index.count("t3") == 0 and index.search("t3", np.ones(DIM, np.float32), IndexFilter(), 5) == []
    # rows the sign pass kept, against the rows the filter left it
    assert (sum(kept < of for kept, of in passes_run) > 20) == signs


def counted_sign_passes(monkeypatch) -> list[tuple[int, int]]:
    """(rows kept, rows ranked) of each sign pass the index runs, as it runs them."""
    from chalicelib.adapters.embedded.sign_codes import SignCodes

    calls: list[tuple[int, int]] = []
    original = SignCodes.nearest

    def counted(self, q, n, rows, count):
        kept = original(self, q, n, rows, count)
        calls.append((kept.size, n if rows is None else rows.size))
        return kept

    monkeypatch.setattr(SignCodes, "nearest", counted)
    return calls


def test_bulk_load_refuses_a_partition_that_holds_rows():
    part = numpy_index._Partition(DIM, Bm25Params())
    part.put(IndexEntry("a", np.ones(DIM, np.float32), text="x"), np.ones(DIM, np.float32))
    with pytest.raises(ValueError):
        part.put_bulk([(IndexEntry("b", None, text="y"), None)])


def test_a_search_every_row_passes_answers_as_the_plain_computation(tmp_path, monkeypatch):
    """No row filtered out (a tenant without agents or users, nothing deleted): the product's scores
    are ranked as they are, without a list of the rows."""
    monkeypatch.setattr(numpy_index, "_ROWS_PER_THREAD", 8)
    rng, nrng = random.Random(4), np.random.default_rng(4)
    index = NumpyVectorIndex(SqliteDatabase(str(tmp_path / "vectors.db")), DIM, threads=2)
    live = {f"x{i}": IndexEntry(f"x{i}", nrng.standard_normal(DIM).astype(np.float32), text=" ".join(rng.choices(WORDS, k=4)))
            for i in range(60)}
    index.upsert("t1", list(live.values()))
    for f in (IndexFilter(), IndexFilter(tools=("sql.query",))):  # a tools filter passes rows that name none
        for _ in range(10):
            q = nrng.standard_normal(DIM).astype(np.float32)
            for k in (1, 5, 60, 1000):
                assert_top(index.search("t1", q, f, k), plain_cosines(live, q, f), k, exact=False)


_SCORES_SCRIPT = """
import json, random, sys
import numpy as np
from chalicelib.adapters.embedded.index import NumpyVectorIndex
from chalicelib.adapters.embedded.db import SqliteDatabase
from chalicelib.ports import IndexFilter
from tests.adapters.embedded.test_index_fast_path import DIM, WORDS, random_entry
rng, nrng = random.Random(9), np.random.default_rng(9)
index = NumpyVectorIndex(SqliteDatabase(sys.argv[1]), DIM)
index.upsert("t1", [random_entry(rng, nrng, f"x{i}") for i in range(300)])
queries = [" ".join(rng.sample(WORDS, 8)) for _ in range(40)]
print(json.dumps([index.lexical_search("t1", q, IndexFilter(agent_id="a1", user_id="u1"), 300) for q in queries]))
"""


def test_bm25_scores_are_the_same_in_every_process(tmp_path):
    """A query's terms are summed in the order it names them, not in the order of a set of strings,
    which depends on the process's hash seed: the same recall answers alike after a restart."""
    import os
    import subprocess
    import sys

    out = []
    for seed in ("1", "2", "3"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        run = subprocess.run([sys.executable, "-c", _SCORES_SCRIPT, str(tmp_path / f"v{seed}.db")], env=env,
                             capture_output=True, text=True, check=True, cwd=os.getcwd())
        out.append(run.stdout)
    assert out[0] == out[1] == out[2]
