"""The embedded index keeps each row's BM25 terms beside its vector, so that loading a tenant reads
them instead of tokenizing every lesson again; what it answers after a load is what the plain
computation over the texts answers, whether the terms were stored, missing (a data directory from
before), made by another stemmer or by a tokenizer that changed without a new version."""
from __future__ import annotations

import hashlib
import random
import sqlite3

import numpy as np
import pytest

from chalicelib.adapters.embedded import index as numpy_index
from chalicelib.adapters.embedded.index import NumpyVectorIndex
from chalicelib.adapters.embedded.db import SqliteDatabase
from chalicelib.domain import lexical
from chalicelib.domain.lexical import Bm25Params, terms
from chalicelib.ports import IndexFilter
from tests.adapters.embedded.test_index_fast_path import DIM, WORDS, check, passes, random_entry

N = 240


def seeded(tmp_path, seed: int = 3) -> tuple[str, dict]:
    rng, nrng = random.Random(seed), np.random.default_rng(seed)
    path = str(tmp_path / "vectors.db")
    index = NumpyVectorIndex(SqliteDatabase(path), DIM)
    live = {f"x{i}": random_entry(rng, nrng, f"x{i}") for i in range(N)}
    index.upsert("t1", list(live.values())[: N // 2])
    index.upsert("t1", list(live.values())[N // 2 :])
    return path, {"t1": live}


def counting_terms(monkeypatch, tokenizer=terms) -> list[str]:
    calls: list[str] = []

    def counted(text: str, stemmer: str = "light") -> list[str]:
        calls.append(text)
        return tokenizer(text, stemmer)

    monkeypatch.setattr(numpy_index, "terms", counted)
    return calls


def stored_terms(path: str) -> dict[str, str | None]:
    with sqlite3.connect(path) as conn:
        return dict(conn.execute("SELECT experience_id, terms FROM vectors WHERE tenant_id='t1'"))


def test_a_load_reads_the_stored_terms_and_checks_a_few(tmp_path, monkeypatch):
    path, tenants = seeded(tmp_path)
    monkeypatch.setattr(numpy_index, "_CHECKED_ROWS", 8)
    calls = counting_terms(monkeypatch)
    reloaded = NumpyVectorIndex(SqliteDatabase(path), DIM)
    assert reloaded.count("t1") == N
    assert 8 <= len(calls) <= 16 + 1  # the first rows, then one every N // 8
    calls.clear()
    check(reloaded, tenants, random.Random(5), np.random.default_rng(5), queries=10)


def test_rows_stored_without_terms_are_tokenized_once_and_their_terms_kept(tmp_path, monkeypatch):
    path, tenants = seeded(tmp_path)
    with sqlite3.connect(path) as conn:  # a data directory written before terms were stored
        conn.execute("UPDATE vectors SET terms=NULL")
    calls = counting_terms(monkeypatch)
    first = NumpyVectorIndex(SqliteDatabase(path), DIM)
    assert first.count("t1") == N and len(calls) == N
    kept = stored_terms(path)
    assert all(kept[i] == f"light.{lexical.TERMS_VERSION}\t{' '.join(terms(e.text))}" for i, e in tenants["t1"].items())
    check(first, tenants, random.Random(6), np.random.default_rng(6), queries=10)
    calls.clear()
    second = NumpyVectorIndex(SqliteDatabase(path), DIM)
    assert second.count("t1") == N and len(calls) < N
    check(second, tenants, random.Random(6), np.random.default_rng(6), queries=10)


def test_terms_made_by_another_stemmer_are_made_again(tmp_path):
    path, tenants = seeded(tmp_path)
    plural = NumpyVectorIndex(SqliteDatabase(path), DIM, Bm25Params(stemmer="plural"))
    live = tenants["t1"]
    rng = random.Random(7)
    for _ in range(20):
        text = " ".join(rng.choices(WORDS + ["paints", "painted", "stopped"], k=rng.randint(1, 5)))
        counts = {i: terms(e.text, "plural") for i, e in live.items()}
        got = plural.lexical_search("t1", text, IndexFilter(), 1000)
        want = {i for i, c in counts.items() if set(c) & set(terms(text, "plural")) and passes(live[i], IndexFilter())}
        assert {i for i, _ in got} == want
    assert all(v.startswith(f"plural.{lexical.TERMS_VERSION}\t") for v in stored_terms(path).values())


def test_a_tokenizer_changed_without_a_new_version_is_noticed(tmp_path, monkeypatch):
    path, tenants = seeded(tmp_path)
    changed = lambda text, stemmer="light": terms(text, stemmer) + ["changed"]  # noqa: E731
    monkeypatch.setattr(numpy_index, "_CHECKED_ROWS", 4)
    counting_terms(monkeypatch, changed)
    reloaded = NumpyVectorIndex(SqliteDatabase(path), DIM)
    got = reloaded.lexical_search("t1", "changed", IndexFilter(), 1000)
    # every row the filter lets through holds the term the new tokenizer makes
    assert len(got) == sum(passes(e, IndexFilter()) for e in tenants["t1"].values())
    assert all(v.split()[-1] == "changed" for v in stored_terms(path).values())


def test_kept_terms_never_replace_those_a_writer_stored_meanwhile(tmp_path):
    path, tenants = seeded(tmp_path)
    index = NumpyVectorIndex(SqliteDatabase(path), DIM)
    before = stored_terms(path)["x1"]
    index._store_terms("t1", [("x1", None, "light.1\tstale"), ("x2", before and stored_terms(path)["x2"], "light.1\tnew")])
    after = stored_terms(path)
    assert after["x1"] == before and after["x2"] == "light.1\tnew"


CORPUS = (
    "The orders.lookup call timed out after 30 seconds: MissingParameter customer_id for #design and @omar, "
    "v2.4.1 policies; painted, painting, stopped, called, loved, needs things. HTTPError 404 on get_weather "
    "while I'm retrying the X-Ray SDK's putTraceSegments (see #59871, #<n>, #<channel>, @<handle>, a@b.com)."
)


def test_terms_version_changes_with_what_terms_returns():
    """A change to ``terms`` must come with a new ``TERMS_VERSION``, or indexes would keep terms it no
    longer makes: update both the version and the digest below."""
    digest = hashlib.sha256(repr([terms(CORPUS, s) for s in sorted(lexical.STEMMERS)]).encode()).hexdigest()[:16]
    assert {1: "16d3d6b4add52880"}[lexical.TERMS_VERSION] == digest


def test_a_tenant_loading_holds_up_no_other_tenant(tmp_path, monkeypatch):
    import threading

    path, tenants = seeded(tmp_path)
    index = NumpyVectorIndex(SqliteDatabase(path), DIM)
    index.upsert("t2", [random_entry(random.Random(1), np.random.default_rng(1), "y1")])  # t2 loaded
    started, release = threading.Event(), threading.Event()
    load = index._load

    def slow_load(tenant_id):
        started.set()
        assert release.wait(10)
        return load(tenant_id)

    monkeypatch.setattr(index, "_load", slow_load)
    counting = threading.Thread(target=index.count, args=("t1",))
    counting.start()
    try:
        assert started.wait(10)
        answered = []
        other = threading.Thread(target=lambda: answered.append(index.search("t2", np.ones(DIM, np.float32), IndexFilter(), 5)))
        other.start()
        other.join(5)
        assert len(answered) == 1, "a search of t2 waited for t1's load"
        second = threading.Thread(target=index.count, args=("t1",))  # t1's callers wait for its one load
        second.start()
    finally:
        release.set()
        counting.join(10)
    second.join(10)
    assert index.count("t1") == N and not index._loading
