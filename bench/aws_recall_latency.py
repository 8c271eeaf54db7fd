"""Recall latency of the aws backend's index (OpenSearch, lucene HNSW) beside the embedded one (numpy).

Usage: .venv/bin/python -m bench.aws_recall_latency [--sizes 10000,100000] [--queries 200]
       [--ef 100,400] [--other-frac 0.1] [--no-service] [--before main] [--profile 30]
       [--seed-budget 600] [--max-seconds 600]

The OpenSearch node is ``OPENSEARCH_URL`` when that is set and reachable, else a private node that
``devtools.opensearch_node.node_url`` starts (devtools/opensearch/start.sh, a free 127.0.0.1 port,
heap ``--heap``) and stops when this script exits. The index is lucene (the local node cannot run
faiss) and is deleted at the end (``--keep-index`` keeps it).

One index holds two tenants: tenant A grows to each N of ``--sizes``; tenant B holds
``--other-frac`` x N entries drawn from the same clusters, so the tenant filter has to exclude
close neighbours. Vectors: real MiniLM embeddings of ~300 lesson texts, perturbed (as in
bench/recall_latency.py); texts: the experiences' ``search_text()``, as the review service indexes
them, so BM25 has realistic documents. Seeding goes through the adapters: ``NumpyVectorIndex.upsert``
and ``OpenSearchVectorIndex.upsert`` built with ``refresh=False`` and large bulk chunks, with the
index's refresh_interval off while seeding and one explicit refresh at the end (restored after).

Timed, interleaved query by query (the same 384-d query vector and the same ``IndexFilter``:
tenant, agent/user scope, tools, task type), k = the service's candidate count (50):

  floor       numpy: one float32 (N x 384) @ (384,) product + argpartition top-k (no filter)
  np.search   NumpyVectorIndex.search (exact, filter mask first)
  os.search   OpenSearchVectorIndex.search (lucene k-NN, filter inside the knn clause; ef = k)
  os.ef=E     the same with IndexSpec.ef_search = E (one per value of --ef)
  np.lex      NumpyVectorIndex.lexical_search (BM25)
  os.lex      OpenSearchVectorIndex.lexical_search (BM25)
  svc.np      services.recall.recall on SQLite + numpy, query vector precomputed (no embedding)
  svc.os      the same service call with the OpenSearch index (same SQLite store): hybrid_search =
              one _msearch (k-NN + BM25 whose hits carry their cosine as a script field)
  b.search    os.search, b.lex os.lex and svc.b svc.os with the adapter of ``--before`` (a git ref,
              default main: its chalicelib exported by ``git archive`` and imported under another
              package name) on an index of its own, created by that code (its mapping and
              settings) and seeded with the same entries: the code before, in the same run

``--profile Q`` (default 30) runs Q of the queries again with the profile API, on both indexes: the
node's time per search of the _msearch split into the k-NN graph search with its filter (the k-NN
plugin runs it when the query's weight is created), the BM25 matching and scoring, the collector and
the rewrite (``phases``).

Round trips per service recall are HTTP requests counted at the client's connections
(``devtools.opensearch_node.RequestCounter``), so nothing the adapter does escapes the count.

``os.*`` also report the node's own ``took`` (server-side ms, integer resolution), so the rest is
HTTP + JSON + the client. Quality: recall@10 / @50 of each OpenSearch k-NN variant against the exact
numpy result under the same filter, BM25 top-10 overlap (OpenSearch's statistics are index-wide,
numpy's per tenant, so they may differ), service top-5 agreement, and a tenant-leak count (any
tenant-B id in a tenant-A answer is a bug, not a performance number).

Before each timed call the bench waits (bounded, <= 0.3 s) until this process and the node's JVM
stop burning CPU (OpenBLAS threads spin after a large product; the JVM finishes the last request). Prints numbers only; compare ratios, not absolute times.
"""
from __future__ import annotations

import argparse
import os
import random
import secrets
import shutil
import sys
import tempfile
import time
from dataclasses import asdict, replace
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from bench._harness import export_ref, pct, settle
from bench.recall_latency import (
    AGENTS,
    FixedEmbedder,
    base_lessons,
    bulk_put,
    floor_search,
    make_experiences,
    make_queries,
)

OTHER_START = 10_000_000  # tenant B's experience ids start here: exp_1000xxxx is never tenant A's


class TookRecorder:
    """Wraps the opensearch-py client: records the node's ``took`` (ms) of every search and msearch.
    With ``profiles`` a list, every search is sent with ``profile: true`` and its profile kept there."""

    def __init__(self, client) -> None:
        self._client = client
        self.took: list[int] = []
        self.profiles: list[dict] | None = None

    def search(self, *args, body=None, **kwargs):
        if self.profiles is not None:
            body = {**body, "profile": True}
        response = self._client.search(*args, body=body, **kwargs)
        self.took.append(int(response.get("took", -1)))
        if self.profiles is not None:
            self.profiles.append(response["profile"])
        return response

    def msearch(self, *args, body=None, **kwargs):
        if self.profiles is not None:  # every second line is a search (after its header)
            body = [line if i % 2 == 0 else {**line, "profile": True} for i, line in enumerate(body)]
        response = self._client.msearch(*args, body=body, **kwargs)
        self.took.append(int(response.get("took", -1)))  # the whole request, all its searches
        if self.profiles is not None:
            self.profiles += [answer["profile"] for answer in response["responses"]]
        return response

    def __getattr__(self, name):
        return getattr(self._client, name)


def node_stats(client) -> dict:
    node = next(iter(client.nodes.stats(metric="process,jvm")["nodes"].values()))
    return {"cpu_ms": node["process"]["cpu"]["total_in_millis"], "heap": node["jvm"]["mem"]["heap_used_in_bytes"],
            "heap_max": node["jvm"]["mem"]["heap_max_in_bytes"]}


def node_pid(client) -> int | None:
    """The node's JVM pid (same host: 127.0.0.1 only), for waiting until it is idle."""
    node = next(iter(client.nodes.info(metric="process")["nodes"].values()))
    pid = node.get("process", {}).get("id")
    return int(pid) if pid and Path(f"/proc/{pid}/stat").exists() else None


def phases(profile: dict) -> dict[str, float]:
    """ms of one search's profile (one shard) by phase: ``weight`` the weight creation of the query,
    where the k-NN plugin (2.19, lucene) runs the graph search with its filter, segment by segment;
    ``match`` the rest of the query (BM25: iterating the terms' postings under the filter and
    scoring); ``collect`` the top-k collector; ``rewrite`` the query rewrite. The fetch phase (ids,
    cosines) is not in a 2.19 profile: it is ``took`` minus these."""
    search = profile["shards"][0]["searches"][0]
    total = sum(node["time_in_nanos"] for node in search["query"])
    weight = sum(node["breakdown"].get("create_weight", 0) for node in search["query"])
    return {"weight": weight / 1e6, "match": (total - weight) / 1e6,
            "collect": sum(c["time_in_nanos"] for c in search["collector"]) / 1e6,
            "rewrite": search["rewrite_time"] / 1e6}


def profile_recalls(recorder: TookRecorder, sides: dict, tenant: str, prepared, k: int) -> dict:
    """The node's time by phase for each side's ``hybrid_search`` (its k-NN and its BM25 search),
    queries in the same order, one side after the other per query."""
    out: dict[str, dict[str, list[float]]] = {}
    for _, vec, flt, text in prepared:
        for side, index in sides.items():
            recorder.profiles = []
            try:
                index.hybrid_search(tenant, vec, text, flt, k)
            finally:
                got, recorder.profiles = recorder.profiles, None
            for kind, profile in zip(("knn", "bm25"), got):
                for phase, ms in phases(profile).items():
                    out.setdefault(f"{side} {kind}", {}).setdefault(phase, []).append(ms)
    return out


def index_stats(client, name: str) -> dict:
    p = client.indices.stats(index=name, metric="store,segments,docs")["_all"]["primaries"]
    return {"segments": p["segments"]["count"], "bytes": p["store"]["size_in_bytes"], "docs": p["docs"]["count"]}


def load_before(ref: str, dest: Path):
    """The OpenSearch adapter of git ref ``ref``: its chalicelib/ exported into ``dest`` and imported
    as the package ``chalicelib_before`` (chalicelib imports itself by relative imports only, so the
    copy runs its own code beside the work tree's). Returns (opensearch_index module, label)."""
    import importlib
    import importlib.util

    label = export_ref(ref, dest, ("chalicelib",))
    package = dest / "chalicelib_before"
    (dest / "chalicelib").rename(package)
    spec = importlib.util.spec_from_file_location("chalicelib_before", package / "__init__.py",
                                                  submodule_search_locations=[str(package)])
    sys.modules["chalicelib_before"] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(sys.modules["chalicelib_before"])
    return importlib.import_module("chalicelib_before.adapters.opensearch_index"), label


class Seeder:
    """Grows tenant A (SQLite store, numpy index, OpenSearch) and tenant B (OpenSearch only) in step;
    every OpenSearch index of ``os_indexes`` gets the same entries."""

    def __init__(self, deps, os_indexes, tenant_a: str, tenant_b: str, bases, base_vecs, seed: int,
                 service: bool) -> None:
        self.deps, self.os_indexes, self.a, self.b = deps, os_indexes, tenant_a, tenant_b
        self.bases, self.base_vecs, self.service = bases, base_vecs, service
        self.rng, self.nrng = random.Random(seed), np.random.default_rng(seed)
        self.now = datetime.now(timezone.utc)
        self.n_a = self.n_b = 0
        self.os_docs = 0  # documents written, over every index
        self.os_seconds = 0.0
        self.seconds_by_index = [0.0] * len(os_indexes)  # bulk time per index (the refresh is apart)

    def _chunk(self, tenant: str, start: int, count: int):
        from chalicelib.ports import IndexEntry

        exps, vecs = make_experiences(tenant, start, count, self.bases, self.base_vecs, self.rng, self.nrng, self.now)
        entries = [IndexEntry(e.experience_id, v, e.agent_id, e.user_id, tuple(e.tools), e.task_type, tuple(e.tags),
                              e.search_text()) for e, v in zip(exps, vecs)]
        return exps, entries

    def grow_to(self, n_a: int, n_b: int, budget: float, chunk: int = 5000) -> dict:
        t = {"gen": 0.0, "store": 0.0, "numpy": 0.0, "os": 0.0, "refresh": 0.0}
        t_start = time.perf_counter()
        truncated = False
        pc = time.perf_counter
        while self.n_a < n_a or self.n_b < n_b:
            if pc() - t_start > budget:
                truncated = True
                break
            # interleave the tenants: B gets its share in every round
            for tenant in ("a", "b"):
                have, want = (self.n_a, n_a) if tenant == "a" else (self.n_b, n_b)
                if have >= want:
                    continue
                size = min(chunk if tenant == "a" else max(1, chunk * n_b // max(n_a, 1)), want - have)
                tid = self.a if tenant == "a" else self.b
                t0 = pc()
                exps, entries = self._chunk(tid, have if tenant == "a" else OTHER_START + have, size)
                t1 = pc()
                if tenant == "a":
                    if self.service:
                        bulk_put(self.deps.experiences, exps)
                    t2 = pc()
                    self.deps.index.upsert(tid, entries)
                    t3 = pc()
                else:
                    t2 = t3 = pc()
                for j, os_index in enumerate(self.os_indexes):
                    t_ix = pc()
                    os_index.upsert(tid, entries)
                    self.seconds_by_index[j] += pc() - t_ix
                t4 = pc()
                t["gen"] += t1 - t0
                t["store"] += t2 - t1
                t["numpy"] += t3 - t2
                t["os"] += t4 - t3
                self.os_docs += size * len(self.os_indexes)
                self.os_seconds += t4 - t3
                if tenant == "a":
                    self.n_a += size
                else:
                    self.n_b += size
        t0 = pc()
        for os_index in self.os_indexes:
            os_index.client.indices.refresh(index=os_index.spec.name)
        t["refresh"] = pc() - t0
        self.os_seconds += t["refresh"]
        t["truncated"] = truncated
        return t


def measure(args, deps, deps_noemb, os_plain, os_variants: dict, recorder: TookRecorder, tenant: str,
            queries, warm_queries, n: int, client, index_name: str, os_before=None, counter=None) -> dict:
    from chalicelib.ports import IndexFilter
    from chalicelib.services import recall as recall_svc

    part = deps.index._partition(tenant)  # the same N x 384 float32 matrix the numpy index searches
    matrix = part.vecs[: part.n]
    assert matrix.shape[0] == n and matrix.dtype == np.float32
    k = max(deps.recall_candidates, 5 * 4)
    deps_os = replace(deps_noemb, index=os_plain)
    deps_b = replace(deps_noemb, index=os_before)
    before = os_before is not None

    methods = ["floor", "np.search", "os.search", *(["b.search"] if before else []), *os_variants, "np.lex", "os.lex",
               *(["b.lex"] if before else [])]
    if args.service:
        methods += ["svc.np", "svc.os", *(["svc.b"] if before else [])]
    times: dict[str, list[float]] = {m: [] for m in methods}
    took: dict[str, list[int]] = {m: [] for m in methods if m.startswith(("os.", "b.", "svc.os", "svc.b"))}
    trips: dict[str, list[int]] = {m: [] for m in took}
    quality = {m: {"r10": [], "r50": []} for m in ["os.search", *(["b.search"] if before else []), *os_variants]}
    lex_overlap: list[float] = []
    lex_tie_ok: list[float] = []
    svc_agree = svc_scores = svc_compared = svc_same = lex_same = leaks = empty_np = 0

    def ops(q, vec, flt, text):
        out = [("floor", lambda: floor_search(matrix, vec, k)),
               ("np.search", lambda: deps.index.search(tenant, vec, flt, k)),
               ("os.search", lambda: os_plain.search(tenant, vec, flt, k))]
        if before:
            out.append(("b.search", lambda: os_before.search(tenant, vec, flt, k)))
        out += [(name, (lambda ix=ix: ix.search(tenant, vec, flt, k))) for name, ix in os_variants.items()]
        out += [("np.lex", lambda: deps.index.lexical_search(tenant, text, flt, k)),
                ("os.lex", lambda: os_plain.lexical_search(tenant, text, flt, k))]
        if before:
            out.append(("b.lex", lambda: os_before.lexical_search(tenant, text, flt, k)))
        if args.service:
            kw = asdict(q)
            out += [("svc.np", lambda: recall_svc.recall(deps_noemb, **kw)),
                    ("svc.os", lambda: recall_svc.recall(deps_os, **kw))]
            if before:
                out.append(("svc.b", lambda: recall_svc.recall(deps_b, **kw)))
        return out

    def prepared(qs):
        from chalicelib.services.recall import query_text

        return [(q, deps_noemb.embedder.table[query_text(q)],
                 IndexFilter(agent_id=q.agent_id, user_id=q.user_id, tools=q.tools, task_type=q.task_type),
                 query_text(q)) for q in qs]

    for q, vec, flt, text in prepared(warm_queries):  # JIT, caches, page cache: not timed
        for _, fn in ops(q, vec, flt, text):
            fn()
    pids = [node_pid(client)] if node_pid(client) else []
    settle(pids, max_wait=2.0)
    cpu0, t_start = node_stats(client)["cpu_ms"], time.perf_counter()
    requests = 0
    deadline = time.monotonic() + args.max_seconds
    pc = time.perf_counter
    done = 0
    shuffler = random.Random(args.seed + 5)
    for q, vec, flt, text in prepared(queries):
        if time.monotonic() > deadline:
            print(f"  (N={n}: stopped after {done} queries: --max-seconds reached)", flush=True)
            break
        results = {}
        order = ops(q, vec, flt, text)
        shuffler.shuffle(order)  # no method always pays for going first (cold caches, sleeping threads)
        for name, fn in order:
            settle(pids, max_wait=0.3)  # this process and the node's JVM idle first
            before, sent = len(recorder.took), counter.count
            t = pc()
            results[name] = fn()
            times[name].append((pc() - t) * 1000)
            if name in took:
                new = recorder.took[before:]
                requests += len(new)
                took[name].append(sum(new))
                trips[name].append(counter.count - sent)
        done += 1
        exact = [i for i, _ in results["np.search"]]
        empty_np += not exact
        for name in quality:
            got = [i for i, _ in results[name]]
            leaks += sum(int(i.split("_")[1]) >= OTHER_START for i in got)
            if exact:
                quality[name]["r10"].append(len(set(got[:10]) & set(exact[:10])) / min(10, len(exact)))
                quality[name]["r50"].append(len(set(got) & set(exact)) / len(exact))
        np_lex, os_lex = [i for i, _ in results["np.lex"]], [i for i, _ in results["os.lex"]]
        leaks += sum(int(i.split("_")[1]) >= OTHER_START for i in os_lex)
        if np_lex:
            top = min(10, len(np_lex))
            lex_overlap.append(len(set(np_lex[:top]) & set(os_lex[:top])) / top)
            # many texts differ only in a case number, so BM25 ties abound and each engine breaks them its
            # own way: count an OpenSearch hit as right when numpy scores it at least as high as its own 10th
            every = dict(deps.index.lexical_search(tenant, text, flt, n))
            tenth = results["np.lex"][top - 1][1]
            lex_tie_ok.append(sum(every.get(i, 0.0) >= tenth * (1 - 1e-6) for i in os_lex[:top]) / top)
        if args.service:
            a, b = results["svc.np"][0], results["svc.os"][0]
            leaks += sum(int(h.experience.experience_id.split("_")[1]) >= OTHER_START for h in b)
            svc_compared += 1
            svc_agree += [h.experience.experience_id for h in a] == [h.experience.experience_id for h in b]
            svc_scores += len(a) == len(b) and all(abs(x.score - y.score) <= 0.01 for x, y in zip(a, b))
        if args.service and before:
            c = results["svc.b"][0]
            leaks += sum(int(h.experience.experience_id.split("_")[1]) >= OTHER_START for h in c)
            # the code before on its own index: the same ids in the same order, scores within 1e-6 (two HNSW
            # graphs built apart may still differ in a near tie)
            svc_same += [h.experience.experience_id for h in b] == [h.experience.experience_id for h in c] and all(
                abs(x.score - y.score) <= 1e-6 for x, y in zip(b, c))
        if before:
            leaks += sum(int(i.split("_")[1]) >= OTHER_START for i, _ in results["b.lex"])
            # BM25 of both indexes: the same scores, rank by rank (which of tied ids comes first is the engine's)
            mine, theirs = [s for _, s in results["os.lex"]], [s for _, s in results["b.lex"]]
            lex_same += len(mine) == len(theirs) and all(abs(x - y) <= 1e-4 * max(1.0, abs(y)) for x, y in zip(mine, theirs))
    elapsed = time.perf_counter() - t_start
    cpu1 = node_stats(client)["cpu_ms"]
    sides = {"after": os_plain, **({"before": os_before} if before else {})}
    profile = profile_recalls(recorder, sides, tenant, prepared(queries[: args.profile]), k) if args.profile else {}
    return {"n": n, "times": times, "took": took, "trips": trips, "quality": quality, "lex_overlap": lex_overlap, "lex_tie_ok": lex_tie_ok,
            "leaks": leaks, "svc": (svc_agree, svc_scores, svc_compared), "svc_same": svc_same, "lex_same": lex_same, "profile": profile, "done": done, "empty_np": empty_np,
            "node_cpu_per_req": (cpu1 - cpu0) / requests if requests else float("nan"),
            "node_busy": (cpu1 - cpu0) / 1000 / elapsed, "index": index_stats(client, index_name),
            "node": node_stats(client)}


def build_queries(count: int, seed: int, tenant: str):
    from chalicelib.domain.models import RecallQuery

    rng = random.Random(seed + 100)
    out = []
    for i, q in enumerate(make_queries(count, random.Random(seed))):
        user = f"user-{rng.randrange(50)}" if i % 7 == 3 else None
        agent = q.get("agent_id") or (rng.choice(AGENTS) if i % 7 == 5 else None)
        out.append(RecallQuery(tenant_id=tenant, query=q["query"], agent_id=agent, user_id=user,
                               task_type=q.get("task_type"), tools=tuple(q.get("tools", ())),
                               tags=tuple(q.get("tags", ())), top_k=q["top_k"]))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.aws_recall_latency", description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000", help="comma-separated N of tenant A's entries")
    parser.add_argument("--queries", type=int, default=200, help="measured queries per size")
    parser.add_argument("--warmup", type=int, default=30, help="warm-up queries per size (other texts)")
    parser.add_argument("--ef", default="100,400", help="IndexSpec.ef_search values to time beside the default (ef = k)")
    parser.add_argument("--other-frac", type=float, default=0.1, help="tenant B's size as a fraction of N")
    parser.add_argument("--chunk", type=int, default=2000, help="documents per bulk request")
    parser.add_argument("--bases", type=int, default=300, help="real MiniLM embeddings perturbed into the vectors")
    parser.add_argument("--no-service", dest="service", action="store_false",
                        help="skip the service-level recall (and seeding the SQLite experience store)")
    parser.add_argument("--seed-budget", type=float, default=600.0,
                        help="seconds of seeding per size; past it the size is measured where the seeding stopped")
    parser.add_argument("--max-seconds", type=float, default=600.0, help="time bound of the measurement per size")
    parser.add_argument("--before", default="main",
                        help="git ref whose OpenSearch adapter is measured beside the work tree's ('none': skip)")
    parser.add_argument("--profile", type=int, default=30,
                        help="queries run again with the profile API on each index (0: none)")
    parser.add_argument("--heap", default="1g", help="heap of a node this script starts (OPENSEARCH_HEAP)")
    parser.add_argument("--keep-index", action="store_true", help="do not delete the OpenSearch index at the end")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    sizes = sorted({int(s) for s in args.sizes.split(",") if s.strip()})
    efs = sorted({int(e) for e in args.ef.split(",") if e.strip()})
    if not sizes or sizes[0] < 1 or args.queries < 1:
        parser.error("sizes and queries must be positive")

    os.environ.setdefault("OPENSEARCH_HEAP", args.heap)
    from chalicelib.adapters.opensearch.index import OpenSearchVectorIndex, build_client
    from chalicelib.adapters.opensearch.queries import IndexSpec
    from chalicelib.container import build_embedded
    from chalicelib.services.recall import embedded_texts
    from chalicelib.services.tenants import create_tenant
    from chalicelib.settings import Settings
    from devtools.opensearch_node import RequestCounter, node_url

    tmp = tempfile.mkdtemp(prefix="hindsight-bench-aws-recall-")
    client = index_name = None
    try:
        t0 = time.perf_counter()
        url = node_url()
        if not url.startswith(("http://127.0.0.1", "http://localhost")):
            raise SystemExit(f"refusing a node that is not on 127.0.0.1: {url}")
        print(f"OpenSearch node {url} ready in {time.perf_counter() - t0:.1f} s", flush=True)
        raw_client = build_client(url, service="none", timeout=300.0)
        client = TookRecorder(raw_client)
        index_name = f"bench-recall-{secrets.token_hex(4)}"
        spec = IndexSpec(name=index_name, dim=384, engine="lucene")  # never faiss on the local node
        os_plain = OpenSearchVectorIndex(client, spec, refresh=False, bulk_chunk=args.chunk)
        os_plain.ensure_index()
        os_variants = {f"os.ef={e}": OpenSearchVectorIndex(client, replace(spec, ef_search=e)) for e in efs}
        for ix in os_variants.values():
            ix._ready = True  # the same index: no second existence check
        os_before, before_label = None, None
        if args.before != "none":
            before_mod, before_label = load_before(args.before, Path(tmp) / "before")
            os_before = before_mod.OpenSearchVectorIndex(
                client, before_mod.q.IndexSpec(name=f"{index_name}-before", dim=384, engine="lucene"), refresh=False,
                bulk_chunk=args.chunk)
            os_before.ensure_index()
            print(f"before: {before_label} (chalicelib/ of that ref), index {os_before.spec.name}", flush=True)
        os_all = [os_plain] + ([os_before] if os_before is not None else [])
        counter = RequestCounter(raw_client)

        settings = Settings(data_dir=tmp, embedder="minilm", worker=False, admin_key="hsadmin_bench_inprocess",
                            rate_limit_per_second=0)  # measure the service, not the limit
        t0 = time.perf_counter()
        deps = build_embedded(settings)
        tenant_a, _ = create_tenant(deps, "bench-a")
        tenant_b, _ = create_tenant(deps, "bench-b")
        rng = random.Random(args.seed)
        bases = base_lessons(args.bases, rng)
        base_vecs = deps.embedder.embed([f"{b['situation']} {b['lesson']} Tools: {', '.join(b['tools'])}." for b in bases])
        queries = build_queries(args.queries, args.seed + 1, tenant_a.tenant_id)
        warm = build_queries(args.warmup, args.seed + 991, tenant_a.tenant_id)
        # every text the service embeds (a query that negates something: also without it)
        texts = list(dict.fromkeys(t for q in queries + warm for t in embedded_texts(q)))
        table = dict(zip(texts, deps.embedder.embed(texts)))
        deps_noemb = replace(deps, embedder=FixedEmbedder(deps.embedder.dim, table), token_embedder=None, token_pass=None)
        print(f"setup: MiniLM + {len(bases)} base and {len(texts)} query embeddings: {time.perf_counter() - t0:.1f} s;"
              f" index {index_name} (lucene, m={spec.m}, ef_construction={spec.ef_construction}, 1 shard)", flush=True)

        seeder = Seeder(deps, os_all, tenant_a.tenant_id, tenant_b.tenant_id, bases, base_vecs, args.seed + 2,
                        args.service)
        results, seeding = [], []
        for n in sizes:
            for ix in os_all:
                raw_client.indices.put_settings(index=ix.spec.name, body={"index": {"refresh_interval": "-1"}})
            t0 = time.perf_counter()
            docs0, os0, cpu0 = seeder.os_docs, seeder.os_seconds, node_stats(raw_client)["cpu_ms"]
            by0 = list(seeder.seconds_by_index)
            parts = seeder.grow_to(n, int(n * args.other_frac), args.seed_budget)
            for ix in os_all:
                raw_client.indices.put_settings(index=ix.spec.name, body={"index": {"refresh_interval": None}})
            wall = time.perf_counter() - t0
            rate = (seeder.os_docs - docs0) / max(seeder.os_seconds - os0, 1e-9)
            node_ms_doc = (node_stats(raw_client)["cpu_ms"] - cpu0) / max(seeder.os_docs - docs0, 1)
            for ix in os_all:
                n_os_a, n_os_b = ix.count(tenant_a.tenant_id), ix.count(tenant_b.tenant_id)
                if (n_os_a, n_os_b) != (seeder.n_a, seeder.n_b) or deps.index.count(tenant_a.tenant_id) != seeder.n_a:
                    raise RuntimeError(f"counts disagree: OpenSearch {ix.spec.name} A={n_os_a} B={n_os_b}, numpy A="
                                       f"{deps.index.count(tenant_a.tenant_id)}, seeded A={seeder.n_a} B={seeder.n_b}")
            stats = index_stats(raw_client, index_name)
            per_index = [{"name": ix.spec.name, "bulk": seeder.seconds_by_index[j] - by0[j],
                          **index_stats(raw_client, ix.spec.name)} for j, ix in enumerate(os_all)]
            seeding.append({"target": n, "n": seeder.n_a, "n_b": seeder.n_b, "wall": wall, "rate": rate, **parts,
                            **stats, "node_ms_doc": node_ms_doc, "per_index": per_index})
            note = (f"; STOPPED by --seed-budget {args.seed_budget:.0f} s: at {rate:.0f} docs/s, {n} would need "
                    f"~{(n * (1 + args.other_frac) * len(os_all) - seeder.os_docs) / rate / 60 + wall / 60:.0f} min") \
                if parts["truncated"] else ""
            print(f"seeded A={seeder.n_a} B={seeder.n_b}: {wall:.1f} s (generate {parts['gen']:.1f}, SQLite "
                  f"{parts['store']:.1f}, numpy {parts['numpy']:.1f}, OpenSearch bulk {parts['os']:.1f} + refresh "
                  f"{parts['refresh']:.1f}); OpenSearch {rate:.0f} docs/s, node CPU {node_ms_doc:.2f} ms/doc; {stats['segments']} segments, "
                  f"{stats['bytes'] / 2**20:.0f} MiB{note}", flush=True)
            t0 = time.perf_counter()
            client.took.clear()
            res = measure(args, deps, deps_noemb, os_plain, os_variants, client, tenant_a.tenant_id, queries, warm,
                          seeder.n_a, raw_client, index_name, os_before, counter)
            print(f"measured N={seeder.n_a}: {time.perf_counter() - t0:.1f} s", flush=True)
            results.append(res)
            if parts["truncated"]:
                break
        report(results, seeding, args, url, before_label)
    finally:
        if client is not None and index_name and not args.keep_index:
            try:
                client.indices.delete(index=f"{index_name},{index_name}-before", ignore_unavailable=True)
                print(f"deleted index {index_name} (and {index_name}-before)")
            except Exception as exc:  # noqa: BLE001 -- reported; the private node goes away anyway
                print(f"could not delete index {index_name}: {exc}")
        shutil.rmtree(tmp, ignore_errors=True)


def report(results, seeding, args, url, before_label=None) -> None:
    def cell(xs):
        return f"{pct(xs, 50):7.2f} [{pct(xs, 99):7.2f}]"

    print(f"\nOpenSearch seeding (lucene HNSW m=16 ef_construction=128; bulk {args.chunk} docs/request, "
          "refresh off, one refresh at the end)")
    print(f"{'target':>8} | {'A':>7} | {'B':>6} | {'wall s':>7} | {'bulk s':>7} | {'refresh s':>9} | {'docs/s':>7} |"
          f" {'node CPU ms/doc':>15} | {'segments':>8} | {'store MiB':>9} | truncated")
    for s in seeding:
        print(f"{s['target']:>8} | {s['n']:>7} | {s['n_b']:>6} | {s['wall']:7.1f} | {s['os']:7.1f} |"
              f" {s['refresh']:9.1f} | {s['rate']:7.0f} | {s['node_ms_doc']:15.2f} | {s['segments']:>8} | {s['bytes'] / 2**20:9.0f} |"
              f" {'YES' if s['truncated'] else 'no'}")
    if before_label:
        print(f"per index (after: the work tree; before: {before_label}), bulk seconds of each, the refresh apart")
        for s in seeding:
            for side, ix in zip(("after", "before"), s["per_index"]):
                print(f"{s['target']:>8} | {side:>7} | bulk {ix['bulk']:7.1f} s | {ix['segments']:>3} segments |"
                      f" {ix['bytes'] / 2**20:6.0f} MiB | {ix['docs']:>7} docs | {ix['name']}")

    names = list(results[0]["times"])
    print(f"\nIndex-level latency, ms p50 [p99] (k=50, same vectors, same IndexFilter; {results[0]['done']} queries;"
          " interleaved)")
    print(f"{'method':>10} | " + " | ".join(f"{'N=' + str(r['n']):>17}" for r in results))
    for m in names:
        print(f"{m:>10} | " + " | ".join(f"{cell(r['times'][m]):>17}" for r in results))

    print("\nOpenSearch server-side 'took', ms p50 [p99] (integer ms; the rest of the latency is HTTP + JSON + client)")
    print(f"{'method':>10} | " + " | ".join(f"{'N=' + str(r['n']):>17}" for r in results))
    for m in [m for m in names if m in results[0]["took"]]:
        print(f"{m:>10} | " + " | ".join(f"{cell([float(x) for x in r['took'][m]]):>17}" for r in results))

    print("\nRatios of p50 (same run)")
    pairs = [("os.search", "np.search"), ("os.search", "floor"), ("np.search", "floor"), ("os.lex", "np.lex")]
    if args.service:
        pairs.append(("svc.os", "svc.np"))
    print(f"{'N':>8} | " + " | ".join(f"{a + '/' + b:>19}" for a, b in pairs))
    for r in results:
        p = {m: pct(r["times"][m], 50) for m in names}
        print(f"{r['n']:>8} | " + " | ".join(f"{p[a] / p[b]:19.2f}" for a, b in pairs))
    if before_label:
        pairs = [("os.search", "b.search"), ("os.lex", "b.lex")] + ([("svc.os", "svc.b")] if args.service else [])
        print(f"\nAfter (the work tree) / before ({before_label}), same run: latency p50 and p99, node 'took' p50 and p99")
        print(f"{'N':>8} | " + " | ".join(f"{a + '/' + b:>27}" for a, b in pairs))
        for r in results:
            t, tk = r["times"], r["took"]

            def four(a, b):
                ta, tb = [float(x) for x in tk[a]], [float(x) for x in tk[b]]
                return (f"{pct(t[a], 50) / pct(t[b], 50):5.2f} {pct(t[a], 99) / pct(t[b], 99):5.2f}"
                        f" {pct(ta, 50) / max(pct(tb, 50), 1):5.2f} {pct(ta, 99) / max(pct(tb, 99), 1):5.2f}")
            print(f"{r['n']:>8} | " + " | ".join(f"{four(a, b):>27}" for a, b in pairs))
    if len(results) > 1:
        print(f"{'growth':>8} | " + " | ".join(
            f"{'x' + format(pct(results[-1]['times'][m], 50) / pct(results[0]['times'][m], 50), '.2f'):>19}"
            for m in ("os.search", "np.search", "floor", "os.lex")) + f"   (p50 at N={results[-1]['n']} / N={results[0]['n']})")

    print("\nQuality against the exact numpy answer under the same filter (mean over queries)")
    variants = list(results[0]["quality"])
    print(f"{'N':>8} | " + " | ".join(f"{v + ' r@10':>16} {'r@50':>5}" for v in variants)
          + f" | {'BM25 top-10 ids':>15} {'(ties ok)':>9} | {'svc top-5 ids':>13} {'scores±.01':>10} | {'tenant leaks':>12}"
          + (f" | {'BM25 = before':>13}" if before_label else ""))
    for r in results:
        qs = " | ".join(f"{np.mean(r['quality'][v]['r10']):16.3f} {np.mean(r['quality'][v]['r50']):5.3f}" for v in variants)
        agree, same_scores, compared = r["svc"]
        svc = f"{agree:>6}/{compared:<6} {same_scores:>6}/{compared:<3}" if compared else "n/a"
        lex = (f"{np.mean(r['lex_overlap']):15.3f} {np.mean(r['lex_tie_ok']):9.3f}" if r["lex_overlap"]
               else f"{'n/a':>25}")
        same = f" | {r['lex_same']:>6}/{r['done']:<6}" if before_label else ""
        print(f"{r['n']:>8} | {qs} | {lex} | {svc:>24} | {r['leaks']:>12}{same}")

    if args.service:
        print("\nService recall on OpenSearch (k-NN + BM25 with filters: tenant, agent/user scope, tools, task type):"
              " HTTP requests per recall, ms p50 [p99], beside numpy and the floor of the same run")
        sides = ["svc.os"] + (["svc.b"] if before_label else [])
        print(f"{'N':>8} | " + " | ".join(f"{'trips ' + m:>12}" for m in sides) + " | "
              + " | ".join(f"{m:>17}" for m in [*sides, "svc.np", "floor"]) + f" | {'os/np p50':>9}"
              + (f" | {'same hits as svc.b':>18}" if before_label else ""))
        for r in results:
            t, tr = r["times"], r["trips"]
            trip = {m: f"{np.mean(tr[m]):.2f} ({min(tr[m])}-{max(tr[m])})" for m in sides}
            print(f"{r['n']:>8} | " + " | ".join(f"{trip[m]:>12}" for m in sides) + " | "
                  + " | ".join(f"{cell(t[m]):>17}" for m in [*sides, "svc.np", "floor"])
                  + f" | {pct(t['svc.os'], 50) / pct(t['svc.np'], 50):9.2f}"
                  + (f" | {r['svc_same']:>9}/{r['svc'][2]:<8}" if before_label else ""))

    for r in results:
        if not r["profile"]:
            continue
        print(f"\nWhere the node spends a recall's time (profile API, {args.profile} queries, N={r['n']}): ms p50 [p99]"
              " by phase of each search of the _msearch (weight: lucene's k-NN graph search with the filter)")
        phase_names = ("weight", "match", "collect", "rewrite")
        print(f"{'search':>13} | " + " | ".join(f"{ph:>17}" for ph in phase_names))
        for name, per in r["profile"].items():
            print(f"{name:>13} | " + " | ".join(f"{cell(per[ph]):>17}" for ph in phase_names))

    print(f"\nNode ({url})")
    print(f"{'N':>8} | {'CPU ms/request':>14} | {'node busy (cores)':>17} | {'heap used/max MiB':>17} | {'segments':>8} |"
          f" {'store MiB':>9} | {'docs (A+B)':>10}")
    for r in results:
        nd, ix = r["node"], r["index"]
        print(f"{r['n']:>8} | {r['node_cpu_per_req']:14.1f} | {r['node_busy']:17.2f} |"
              f" {nd['heap'] / 2**20:8.0f}/{nd['heap_max'] / 2**20:<8.0f} | {ix['segments']:>8} |"
              f" {ix['bytes'] / 2**20:9.0f} | {ix['docs']:>10}")


if __name__ == "__main__":
    main()
