"""Recall latency of one tenant when the OpenSearch index holds 1, 100 or 1,000 tenants.

Usage: .venv/bin/python -m bench.opensearch_tenants [--measured 10000] [--others-size 20]
       [--tenants 100,1000] [--queries 200] [--routed-shards 2] [--keep-index]

The node is ``OPENSEARCH_URL`` when that is set and reachable, else a private one that
``devtools.opensearch_node.node_url`` starts (devtools/opensearch/start.sh) and stops at exit.

Two indexes: the baseline holds the measured tenant alone (``--measured`` lessons); the shared one
holds the same tenant and grows, tenant by tenant of ``--others-size`` lessons, to each count of
``--tenants``. After each growth step the queries run interleaved (query i on both indexes before
query i+1, order alternating), so the 1-tenant figure of the same round is the baseline. The layout
is the adapter's (``opensearch_queries.index_body``: lucene HNSW m=16, ef_construction=128,
cosine, one shard, ``tenant_id`` keyword filter inside the knn clause). With ``--routed-shards S``
(S > 1) a third index grows alike with S shards and custom routing by tenant: documents are written
with ``routing=<tenant>`` and every search of the adapter carries the same routing (the adapter's
own, ``queries.routing``), so a recall asks one shard. The other two indexes are unrouted
(``IndexSpec.routing=False``), as the layout was before routing.

Documents are the adapter's own (``opensearch_queries.document`` / ``bulk_index_lines``) written by
its ``_bulk`` (two requests in flight, refresh off while seeding, one refresh after each step; no
force-merge: the segment count is printed). Vectors: 384-d, unit length, each a random perturbation of one of 300 topic
centres shared by every tenant (tenants work on similar tasks, so other tenants' lessons are close
neighbours the tenant filter has to exclude). Texts: 12 words drawn from a 2,000-word vocabulary
(the topic's words more often), agent/task/tool fields drawn so the filter passes ~20% of a tenant.

Timed: ``OpenSearchVectorIndex.hybrid_search`` (what ``services.recall`` calls: one ``_msearch`` of
k-NN + BM25, plus a similarity search when BM25 finds entries the k-NN missed), k = 50, with an
``IndexFilter`` of agent scope and task type. Quality: recall@10 of the k-NN part against an exact
numpy search of the measured tenant under the same filter (the filter is replicated in numpy).
Prints numbers only; compare ratios to the 1-tenant row, not absolute times.
"""
from __future__ import annotations

import argparse
import os
import random
import time

import numpy as np

from bench._harness import pct, settle

DIM = 384
TOPICS = 300
VOCAB = 2000
AGENTS = ("agent-a", "agent-b", "agent-c", None)
TASKS = ("deploy", "debug", "refactor", "migrate", None)
TOOLS = ("bash", "git", "http", "sql", "editor", "browser")
K = 50
MEASURED = "tenant-000000"


class World:
    """Deterministic topic centres, vocabulary and per-tenant lessons."""

    def __init__(self, seed: int) -> None:
        rng = np.random.default_rng(seed)
        self.centres = rng.standard_normal((TOPICS, DIM)).astype(np.float32)
        self.centres /= np.linalg.norm(self.centres, axis=1, keepdims=True)
        self.words = [f"w{i:04d}" for i in range(VOCAB)]
        self.topic_words = rng.integers(0, VOCAB, size=(TOPICS, 20))
        self.seed = seed

    def lessons(self, tenant: str, n: int, tenant_no: int):
        """(entries, unit vectors as an (n, DIM) array, their metadata) of one tenant."""
        from chalicelib.ports import IndexEntry

        rng = np.random.default_rng(self.seed * 1_000_003 + tenant_no)
        prng = random.Random(self.seed * 7 + tenant_no)
        topics = rng.integers(0, TOPICS, size=n)
        vecs = self.centres[topics] + rng.standard_normal((n, DIM)).astype(np.float32) * 0.06
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        entries, meta = [], []
        for i in range(n):
            t = int(topics[i])
            words = [self.words[w] for w in prng.choices(list(self.topic_words[t]), k=8)]
            words += prng.choices(self.words, k=4)
            agent, task = prng.choice(AGENTS), prng.choice(TASKS)
            tools = tuple(prng.sample(TOOLS, 2))
            entries.append(IndexEntry(
                experience_id=f"exp_{tenant_no:06d}_{i:06d}", vector=vecs[i], agent_id=agent,
                tools=tools, task_type=task, text=" ".join(words)))
            meta.append((agent, task))
        return entries, vecs, meta

    def queries(self, count: int, vecs: np.ndarray, meta, seed: int):
        rng = np.random.default_rng(seed)
        prng = random.Random(seed)
        out = []
        for _ in range(count):
            j = int(rng.integers(0, len(vecs)))
            v = vecs[j] + rng.standard_normal(DIM).astype(np.float32) * 0.03
            t = int(np.argmax(self.centres @ v))
            text = " ".join(self.words[w] for w in prng.choices(list(self.topic_words[t]), k=4))
            out.append((v / np.linalg.norm(v), text, prng.choice(AGENTS[:3]), prng.choice(TASKS[:4])))
        return out


def new_index(client, spec):
    from chalicelib.adapters.opensearch.index import OpenSearchVectorIndex

    if client.indices.exists(index=spec.name):
        client.indices.delete(index=spec.name)
    index = OpenSearchVectorIndex(client, spec, refresh=False)
    index.ensure_index()
    return index


def add_tenants(client, index, world: World, tenant_nos: range, sizes, routed: bool, threads: int) -> dict:
    """Bulk-write the adapter's documents of these tenants (refresh off meanwhile), then refresh."""
    from concurrent.futures import ThreadPoolExecutor

    from chalicelib.adapters.opensearch import queries as q

    name = index.spec.name
    client.indices.put_settings(index=name, body={"index": {"refresh_interval": "-1"}})

    def chunks():
        for no in tenant_nos:
            tenant = f"tenant-{no:06d}"
            entries = world.lessons(tenant, sizes(no), no)[0]
            for start in range(0, len(entries), 500):
                docs = [q.document(tenant, e, e.vector.tolist()) for e in entries[start : start + 500]]
                yield q.bulk_index_lines(name, tenant, docs, serverless=False, route=q.routing(index.spec, tenant))

    t0 = time.perf_counter()
    with ThreadPoolExecutor(threads) as pool:  # two requests in flight: the node indexes on both cores
        for _ in pool.map(lambda lines: index._bulk(lines, "seed", len(lines) // 2), chunks()):
            pass
    client.indices.put_settings(index=name, body={"index": {"refresh_interval": None}})
    client.indices.refresh(index=name)
    seconds = time.perf_counter() - t0
    count = client.count(index=name)["count"]
    segs = client.indices.segments(index=name)["indices"][name]["shards"]
    stats = client.indices.stats(index=name, metric="store")["indices"][name]["primaries"]
    return {"docs": count, "seconds": seconds, "segments": sum(len(c["segments"]) for sh in segs.values() for c in sh),
            "store_mb": stats["store"]["size_in_bytes"] / 2**20}


def exact_top(vecs: np.ndarray, meta, q: np.ndarray, agent: str, task: str, k: int, ids: list[str]) -> list[str]:
    ok = np.array([(a is None or a == agent) and (t is None or t == task) for a, t in meta])
    scores = vecs @ q
    scores[~ok] = -np.inf
    top = np.argsort(-scores)[:k]
    return [ids[i] for i in top if np.isfinite(scores[i])]


def timed_round(indexes, queries, warmup: int, vecs, meta, ids, pids) -> dict:
    """Each query on every index in turn (order alternating), so noise hits them alike."""
    from chalicelib.ports import IndexFilter

    out = {label: {"ms": [], "recall10": [], "leaks": 0} for label, _ in indexes}
    for n, (vec, text, agent, task) in enumerate(queries):
        flt = IndexFilter(agent_id=agent, task_type=task)
        truth = set(exact_top(vecs, meta, vec, agent, task, 10, ids))
        for label, index in indexes if n % 2 == 0 else indexes[::-1]:
            settle(pids)
            t0 = time.perf_counter()
            semantic, lexical = index.hybrid_search(MEASURED, vec, text, flt, K)
            ms = (time.perf_counter() - t0) * 1000
            if n < warmup:
                continue
            r = out[label]
            r["ms"].append(ms)
            top10 = sorted(semantic, key=semantic.get, reverse=True)[:10]
            r["recall10"].append(len(truth & set(top10)) / max(1, len(truth)))
            r["leaks"] += sum(1 for i in [*semantic, *lexical] if not i.startswith("exp_000000_"))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.opensearch_tenants", description=__doc__.split("\n")[0])
    ap.add_argument("--measured", type=int, default=10_000, help="lessons of the measured tenant")
    ap.add_argument("--others-size", type=int, default=20, help="lessons of every other tenant")
    ap.add_argument("--tenants", default="100,1000", help="tenant counts of the shared index (the baseline is 1)")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--routed-shards", type=int, default=0,
                    help="also grow an index of this many shards with custom routing by tenant (0: no)")
    ap.add_argument("--threads", type=int, default=2, help="bulk requests in flight while seeding")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--heap", default="1g")
    ap.add_argument("--keep-index", action="store_true")
    args = ap.parse_args()
    counts = sorted(int(x) for x in args.tenants.split(","))

    os.environ.setdefault("OPENSEARCH_HEAP", args.heap)
    from chalicelib.adapters.opensearch.index import OpenSearchVectorIndex, build_client
    from chalicelib.adapters.opensearch.queries import IndexSpec
    from devtools.opensearch_node import node_url

    url = node_url()
    client = build_client(url, service="none", timeout=300)
    version = client.info()["version"]["number"]
    try:
        pids = [next(iter(client.nodes.info(metric="process")["nodes"].values()))["process"]["id"]]
    except Exception:  # noqa: BLE001 -- settle() then watches this process only
        pids = []
    world = World(args.seed)
    sizes = lambda no: args.measured if no == 0 else args.others_size  # noqa: E731

    def spec(name: str, shards: int = 1, routing: bool = False) -> IndexSpec:
        return IndexSpec(name=f"bench-tenants-{name}", dim=DIM, shards=shards, replicas=0, routing=routing)

    base = new_index(client, spec("1"))
    st = add_tenants(client, base, world, range(1), sizes, False, args.threads)
    seeded = [("1 tenant", st)]
    growing = [("shared", new_index(client, spec("shared")), False)]
    if args.routed_shards > 1:
        growing.append((f"{args.routed_shards} shards, routed",
                        new_index(client, spec("routed", args.routed_shards, routing=True)), True))
    entries, vecs, meta = world.lessons(MEASURED, args.measured, 0)
    ids = [e.experience_id for e in entries]
    queries = world.queries(args.warmup + args.queries, vecs, meta, args.seed + 1)

    rows = []
    have = 0
    for count in counts:
        indexes = [("1 tenant", OpenSearchVectorIndex(client, base.spec))]
        for label, index, routed in growing:
            st = add_tenants(client, index, world, range(have, count), sizes, routed, args.threads)
            seeded.append((f"{count} tenants, {label}", st))
            indexes.append((f"{count} tenants, {label}", OpenSearchVectorIndex(client, index.spec)))
        have = count
        res = timed_round(indexes, queries, args.warmup, vecs, meta, ids, pids)
        rows.append((count, res, {label: st for label, st in seeded}))
        print(f"measured at {count} tenants", flush=True)

    print()
    print(f"OpenSearch {version} at {url}, heap {os.environ.get('OPENSEARCH_HEAP')}; layout: the adapter's "
          f"(lucene HNSW m=16 ef_construction=128, cosine, 1 shard, tenant_id filter inside the knn clause)")
    print(f"measured tenant: {args.measured:,} lessons; every other tenant: {args.others_size:,}; 384-d vectors; "
          f"{args.queries} queries (+{args.warmup} warm-up) per round, interleaved with the 1-tenant index")
    print("seeding (bulk, refresh off, 2 requests in flight, no force-merge):")
    for label, st in seeded:
        print(f"  {label:<34}{st['docs']:>9,} docs now; +{st['seconds']:6.1f} s; {st['segments']:>3} segments; "
              f"{st['store_mb']:6.0f} MB")
    print(f"\nhybrid_search (k={K}, filter: tenant + agent scope + task type), one tenant's recall:")
    print(f"{'index holds':<34}{'docs':>9}{'p50 ms':>9}{'p99 ms':>9}{'p50 x':>7}{'p99 x':>7}{'recall@10':>11}{'leaks':>7}")
    for count, res, stats in rows:
        b50, b99 = pct(res["1 tenant"]["ms"], 50), pct(res["1 tenant"]["ms"], 99)
        for label, r in res.items():
            docs = stats[label]["docs"]
            p50, p99 = pct(r["ms"], 50), pct(r["ms"], 99)
            print(f"{label:<34}{docs:>9,}{p50:>9.1f}{p99:>9.1f}{p50 / b50:>7.2f}{p99 / b99:>7.2f}"
                  f"{np.mean(r['recall10']):>11.3f}{r['leaks']:>7}")
    print("(x: ratio to the 1-tenant index in the same round; recall@10: k-NN top 10 against exact numpy under "
          "the same filter; leaks: another tenant's ids in an answer, must be 0)")

    if not args.keep_index:
        for name in [base.spec.name] + [index.spec.name for _, index, _ in growing]:
            client.indices.delete(index=name, ignore_unavailable=True)


if __name__ == "__main__":
    main()
