#!/usr/bin/env python3
"""Smoke test for the local OpenSearch + k-NN node started by devtools/opensearch/start.sh.

Creates a k-NN index (HNSW, cosinesimil, dim 384, keyword tenant_id/agent_id/tools/status,
a text field), bulk-indexes random vectors for 2 tenants, runs k-NN queries with an
efficient filter inside the knn clause (tenant_id term + tools terms), and checks that
  * every hit matches the filter,
  * the top-1 hit for a stored vector is that document,
  * recall@k against an exact (numpy) filtered search.
Prints timings. Exit status 0 only if every requested engine passes.

    .venv/bin/python devtools/opensearch/smoke.py                 # lucene
    .venv/bin/python devtools/opensearch/smoke.py --engine all    # lucene + faiss

faiss needs the k-NN native libraries (libopensearchknn_faiss*.so), which the Maven Central
plugin zip does not contain: with this node a faiss index kills the node at its first refresh,
and again at every start until the data dir is wiped (devtools/opensearch/start.sh --fresh).
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time

import numpy as np
from opensearchpy import OpenSearch, helpers

TOOLS = ["search", "browser", "python", "shell", "sql", "email"]
TENANTS = ["tenant-a", "tenant-b"]

# engine -> space types to try, in order (faiss cosinesimil needs k-NN >= 2.19)
SPACES = {"lucene": ["cosinesimil"], "faiss": ["cosinesimil", "innerproduct"]}


def make_docs(n: int, dim: int, seed: int):
    rng = np.random.default_rng(seed)
    vecs = rng.standard_normal((n, dim), dtype=np.float32)
    r = random.Random(seed)
    docs = []
    for i in range(n):
        tenant = TENANTS[i % 2]
        docs.append(
            {
                "tenant_id": tenant,
                "agent_id": f"{tenant}-agent-{r.randrange(5)}",
                "tools": r.sample(TOOLS, r.randint(1, 3)),
                "status": r.choice(["ok", "error"]),
                "text": f"experience {i} of {tenant}",
            }
        )
    return vecs, docs


def knn_body(vec, k: int, tenant: str, tools: list[str]):
    return {
        "size": k,
        "_source": {"excludes": ["embedding"]},
        "query": {
            "knn": {
                "embedding": {
                    "vector": vec.tolist(),
                    "k": k,
                    "filter": {
                        "bool": {
                            "filter": [
                                {"term": {"tenant_id": tenant}},
                                {"terms": {"tools": tools}},
                            ]
                        }
                    },
                }
            }
        },
    }


def run_engine(client: OpenSearch, engine: str, space: str, vecs, docs, args) -> bool:
    index = f"smoke-knn-{engine}-{space}"
    dim = vecs.shape[1]
    if client.indices.exists(index=index):
        client.indices.delete(index=index)
    mapping = {
        "settings": {"index": {"knn": True, "number_of_shards": 1, "number_of_replicas": 0}},
        "mappings": {
            "properties": {
                "embedding": {
                    "type": "knn_vector",
                    "dimension": dim,
                    "method": {
                        "name": "hnsw",
                        "engine": engine,
                        "space_type": space,
                        "parameters": {"m": 16, "ef_construction": 128},
                    },
                },
                "tenant_id": {"type": "keyword"},
                "agent_id": {"type": "keyword"},
                "tools": {"type": "keyword"},
                "status": {"type": "keyword"},
                "text": {"type": "text"},
            }
        },
    }
    print(f"\n== engine={engine} space={space} index={index}")
    t = time.perf_counter()
    client.indices.create(index=index, body=mapping)
    t_create = time.perf_counter() - t

    actions = (
        {"_index": index, "_id": str(i), "_source": {**d, "embedding": vecs[i].tolist()}}
        for i, d in enumerate(docs)
    )
    t = time.perf_counter()
    ok, errors = helpers.bulk(client, actions, chunk_size=250, raise_on_error=False, request_timeout=120)
    t_bulk = time.perf_counter() - t
    if errors:
        print(f"   bulk: {len(errors)} errors, first: {str(errors[0])[:400]}")
        return False
    t = time.perf_counter()
    client.indices.refresh(index=index)
    t_refresh = time.perf_counter() - t
    count = client.count(index=index)["count"]
    print(f"   create {t_create*1000:.0f} ms, bulk {ok} docs {t_bulk:.2f} s "
          f"({ok/t_bulk:.0f} docs/s), refresh {t_refresh*1000:.0f} ms, count={count}")
    if count != len(docs):
        print("   FAIL: count mismatch")
        return False

    # exact filtered search for recall (cosine for cosinesimil; dot for innerproduct)
    norm = vecs / np.linalg.norm(vecs, axis=1, keepdims=True)
    ref = norm if space == "cosinesimil" else vecs

    r = random.Random(args.seed + 1)
    k = args.k
    lat, recalls, failures = [], [], 0
    for q in range(args.queries):
        i = r.randrange(len(docs))
        d = docs[i]
        tenant = d["tenant_id"]
        tools = [r.choice(d["tools"])] + r.sample(TOOLS, 1)  # always contains one of doc i's tools
        body = knn_body(vecs[i], k, tenant, tools)
        t = time.perf_counter()
        res = client.search(index=index, body=body)
        lat.append((time.perf_counter() - t) * 1000)
        hits = res["hits"]["hits"]
        bad = [h["_id"] for h in hits
               if h["_source"]["tenant_id"] != tenant or not set(h["_source"]["tools"]) & set(tools)]
        if bad:
            failures += 1
            print(f"   FAIL q{q}: hits {bad} violate filter tenant={tenant} tools={tools}")
        if not hits or hits[0]["_id"] != str(i):
            # ties are impossible with random float vectors; a stored vector must be its own top-1
            failures += 1
            print(f"   FAIL q{q}: top-1 is {hits[0]['_id'] if hits else None}, expected {i}")
        mask = np.array([dd["tenant_id"] == tenant and bool(set(dd["tools"]) & set(tools)) for dd in docs])
        cand = np.nonzero(mask)[0]
        qv = ref[i] if space == "cosinesimil" else vecs[i]
        scores = ref[cand] @ qv
        exact = {str(c) for c in cand[np.argsort(-scores)[:k]]}
        got = {h["_id"] for h in hits}
        recalls.append(len(exact & got) / len(exact))
    lat.sort()
    p50 = statistics.median(lat)
    p95 = lat[int(0.95 * (len(lat) - 1))]
    print(f"   {args.queries} filtered knn queries (k={k}): p50 {p50:.1f} ms, p95 {p95:.1f} ms, "
          f"max {lat[-1]:.1f} ms; recall@{k} vs exact filtered = {statistics.mean(recalls):.3f}; "
          f"failures={failures}")
    if not args.keep:
        client.indices.delete(index=index)
    return failures == 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--url", default=os.environ.get(
        "OPENSEARCH_URL", f"http://127.0.0.1:{os.environ.get('OPENSEARCH_PORT', '9200')}"))
    ap.add_argument("--engine", choices=["lucene", "faiss", "all"], default="lucene")
    ap.add_argument("--docs", type=int, default=1000)
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--queries", type=int, default=50)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--keep", action="store_true", help="keep the test indices")
    args = ap.parse_args()

    client = OpenSearch(hosts=[args.url], timeout=60)
    info = client.info()
    plugins = {p["component"]: p["version"] for p in client.cat.plugins(format="json")}
    print(f"OpenSearch {info['version']['number']} at {args.url}; plugins {plugins}")

    vecs, docs = make_docs(args.docs, args.dim, args.seed)
    engines = ["lucene", "faiss"] if args.engine == "all" else [args.engine]
    results = {}
    for engine in engines:
        for space in SPACES[engine]:
            try:
                results[(engine, space)] = run_engine(client, engine, space, vecs, docs, args)
            except Exception as e:  # report and go on to the next engine/space
                print(f"   ERROR: {type(e).__name__}: {str(e)[:600]}")
                results[(engine, space)] = False
                if engine == "faiss" and "onnection" in type(e).__name__:
                    print("   the node died: the Maven Central k-NN zip ships no native libraries, so the "
                          "first faiss segment build throws UnsatisfiedLinkError (fatal) -- see "
                          ".opensearch/logs/hindsight-local.log; the index stays in the data dir and kills every "
                          "later start, so restart with: devtools/opensearch/start.sh --fresh")
                    break
                idx = f"smoke-knn-{engine}-{space}"
                try:
                    if client.indices.exists(index=idx) and not args.keep:
                        client.indices.delete(index=idx)
                except Exception:
                    pass
    print()
    for (engine, space), ok in results.items():
        print(f"{'PASS' if ok else 'FAIL'}  {engine}/{space}")
    # an engine passes if any of its space types passes
    return 0 if all(any(ok for (e, _), ok in results.items() if e == eng) for eng in engines) else 1


if __name__ == "__main__":
    sys.exit(main())
