"""OpenSearch request bodies for the experience index, built as data.

Pure functions without a client: each returns the dict (or the list of bulk lines) that
``adapters.opensearch_index`` sends, so the rules -- tenant always, scope, tools, task type,
intent -- are unit-tested with ``==`` and the adapter keeps only the I/O.

One index holds every tenant; one document is one ``IndexEntry`` of one tenant:

    tenant_id, experience_id   keyword
    agent_id, user_id          keyword; absent = shared with every agent / user
    task_type                  keyword, lower-cased; absent = fits any task type
    intent                     keyword, trimmed and lower-cased; absent = fits any intent
    tools                      keyword[], lower-cased; absent = names no tool
    tags                       keyword[]
    text                       ``domain.lexical.terms(entry.text)`` joined by spaces, split again by
                               the whitespace analyzer: both backends tokenize the same way (BM25;
                               frequencies and norms, no positions)
    embedding                  knn_vector, HNSW, lucene or faiss; indexed, left out of ``_source``

Absent means the key is left out of the document, so "shared" is ``must_not exists``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Literal, Sequence

from chalicelib.domain.lexical import Bm25Params, terms
from chalicelib.domain.models import match_key, match_keys
from chalicelib.ports import IndexEntry, IndexFilter

Engine = Literal["lucene", "faiss"]
Space = Literal["cosinesimil", "innerproduct"]

VECTOR_FIELD = "embedding"
COSINE = "cosine"  # the script field of ``with_cosines``
BM25 = "hindsight_bm25"
# index.max_result_window and the k-NN plugin's largest k: one request never asks for more
MAX_K = 10_000
# below OpenSearch's default indices.query.bool.max_clause_count (1024): one clause per term
MAX_QUERY_TERMS = 1_000


@dataclass(frozen=True)
class IndexSpec:
    """Where and how the experience index lives.

    ``engine``: ``lucene`` (any OpenSearch >= 2.4, and the only one the local node can run) or
    ``faiss`` (Amazon OpenSearch Service and Serverless; cosinesimil on faiss needs 2.19).
    ``space``: ``cosinesimil``; ``innerproduct`` where faiss lacks cosine -- vectors are unit-length
    when written, so the inner product is the cosine either way.
    ``serverless``: Amazon OpenSearch Serverless, which accepts no document ``_id``, no ``refresh``
    and no shard settings.
    ``ef_search``: sent per query (``method_parameters``) when set; otherwise the engine's default
    (lucene explores k candidates).
    ``shards``/``replicas``: None leaves the cluster default (settings ``opensearch_shards``,
    ``opensearch_replicas``). A shard count is fixed when the index is created: another one needs a
    new index and a reindex (docs/decisions/0402-shards-and-tenant-routing.md).
    ``routing``: every request about a tenant's documents carries ``routing=<tenant_id>``
    (``routing``): a tenant's documents live on one shard, which its searches alone visit, and the
    index refuses a write without it (``_routing.required``). On one shard it changes nothing; an
    index of several shards created without it needs ``routing=False`` until reindexed. Never on
    Serverless, which places documents itself.
    ``bm25``: the text field's BM25 ``k1`` and ``b``, the settings the numpy index ranks with. They
    are fixed when the index is created (``similarity_drift`` tells when an existing index differs);
    its stemmer makes the stored terms, so a changed stemmer needs a reindex
    (``services.maintenance.reindex_tenant``).
    """

    name: str
    dim: int
    engine: Engine = "lucene"
    space: Space = "cosinesimil"
    m: int = 16
    ef_construction: int = 128
    ef_search: int | None = None
    shards: int | None = 1
    replicas: int | None = None
    serverless: bool = False
    routing: bool = True
    bm25: Bm25Params = Bm25Params()

    def __post_init__(self) -> None:
        # nmslib has no efficient (in-query) filtering: a filter would be applied after the top k
        if self.engine not in ("lucene", "faiss"):
            raise ValueError(f"engine must be lucene or faiss, not {self.engine!r}")
        if self.space not in ("cosinesimil", "innerproduct"):
            raise ValueError(f"space must be cosinesimil or innerproduct, not {self.space!r}")
        if self.dim <= 0:
            raise ValueError("dim must be positive")


# --- index ----------------------------------------------------------------------------------------


def routing(spec: IndexSpec, tenant_id: str) -> str | None:
    """The ``routing`` of every request about ``tenant_id``'s documents (writes, deletes, gets,
    searches, counts), or None where the index is not routed. One function for every call: a get
    or a delete routed otherwise than the write was would miss the document."""
    if spec.serverless or not spec.routing:
        return None
    return tenant_id


def routed(spec: IndexSpec) -> bool:
    """Whether the index's documents are placed by tenant (``routing``)."""
    return not spec.serverless and spec.routing


def index_body(spec: IndexSpec) -> dict:
    """Settings and mappings of a new index."""
    index: dict = {
        "knn": True,
        "similarity": {BM25: {"type": "BM25", "k1": spec.bm25.k1, "b": spec.bm25.b}},
    }
    if not spec.serverless:
        if spec.shards is not None:
            index["number_of_shards"] = spec.shards
        if spec.replicas is not None:
            index["number_of_replicas"] = spec.replicas
    keyword = {"type": "keyword"}
    mappings: dict = {"_routing": {"required": True}} if routed(spec) else {}
    return {
        "settings": {"index": index},
        "mappings": {
            **mappings,
            "dynamic": "strict",
            # The vector is indexed (HNSW, and the doc values the cosine script reads) but not kept in
            # _source: as JSON it was most of the stored bytes, and nothing reads it back (a reindex
            # rewrites from the experience store, services.maintenance.reindex_tenant).
            "_source": {"excludes": [VECTOR_FIELD]},
            "properties": {
                "tenant_id": keyword,
                "experience_id": keyword,
                "agent_id": keyword,
                "user_id": keyword,
                "task_type": keyword,
                "intent": keyword,
                "tools": keyword,
                "tags": keyword,
                # BM25 reads term frequencies and the length norm, never positions (no phrase query)
                "text": {"type": "text", "analyzer": "whitespace", "similarity": BM25, "index_options": "freqs"},
                VECTOR_FIELD: {
                    "type": "knn_vector",
                    "dimension": spec.dim,
                    "method": {
                        "name": "hnsw",
                        "engine": spec.engine,
                        "space_type": spec.space,
                        "parameters": {"m": spec.m, "ef_construction": spec.ef_construction},
                    },
                },
            },
        },
    }


def missing_properties(mapping_response: dict, index: str, spec: IndexSpec) -> dict:
    """The fields of ``index_body`` that an existing index lacks (one created before they were
    added): its strict mapping would refuse documents holding them until they are put."""
    props = mapping_response.get(index, {}).get("mappings", {}).get("properties", {})
    wanted = index_body(spec)["mappings"]["properties"]
    return {name: field for name, field in wanted.items() if name not in props}


def similarity_drift(settings_response: dict, index: str, spec: IndexSpec) -> dict[str, tuple[float, float]]:
    """BM25 parameters of an existing index (a GET <index> or <index>/_settings response) that differ from the
    spec, as {name: (index's, spec's)}. A similarity cannot change on an open index, so the caller
    can only report it; an index created before the parameters were set has none and counts as
    OpenSearch's own defaults (k1 1.2, b 0.75)."""
    sim = (settings_response.get(index, {}).get("settings", {}).get("index", {})
           .get("similarity", {}).get(BM25, {}))
    have = {"k1": float(sim.get("k1", 1.2)), "b": float(sim.get("b", 0.75))}
    want = {"k1": spec.bm25.k1, "b": spec.bm25.b}
    return {k: (have[k], want[k]) for k in want if abs(have[k] - want[k]) > 1e-9}


def shard_count(settings_response: dict, index: str) -> int | None:
    """The primary shards of an existing index, from a GET <index> or <index>/_settings response."""
    value = settings_response.get(index, {}).get("settings", {}).get("index", {}).get("number_of_shards")
    return int(value) if value is not None else None


def routing_required(mapping_response: dict, index: str) -> bool:
    """Whether an existing index refuses a write without routing (created routed)."""
    mappings = mapping_response.get(index, {}).get("mappings", {})
    return bool(mappings.get("_routing", {}).get("required", False))


def mapped_dimension(mapping_response: dict, index: str) -> int | None:
    """The vector dimension of an existing index, from a GET <index> or <index>/_mapping response."""
    props = mapping_response.get(index, {}).get("mappings", {}).get("properties", {})
    dim = props.get(VECTOR_FIELD, {}).get("dimension")
    return int(dim) if dim is not None else None


# --- documents ------------------------------------------------------------------------------------


def doc_id(tenant_id: str, experience_id: str) -> str:
    """The document ``_id`` where custom ids are allowed. Length-prefixed, so no pair of
    (tenant, experience) ids can produce the same string whatever characters they hold."""
    return f"{len(tenant_id)}:{tenant_id}:{experience_id}"


def lexical_text(text: str, stemmer: str = "light") -> str:
    return " ".join(terms(text, stemmer))


def _keys(values: Iterable[str]) -> list[str]:
    return sorted(match_keys(values))


def document(tenant_id: str, entry: IndexEntry, vector: Sequence[float] | None, stemmer: str = "light") -> dict:
    """The stored form of an entry. ``vector`` is the unit-length vector as floats, or None for a
    vector with no direction (all zeros): such an entry is kept for BM25 and count, out of k-NN."""
    doc: dict = {"tenant_id": tenant_id, "experience_id": entry.experience_id}
    if entry.agent_id is not None:
        doc["agent_id"] = entry.agent_id
    if entry.user_id is not None:
        doc["user_id"] = entry.user_id
    if match_key(entry.task_type):
        doc["task_type"] = match_key(entry.task_type)
    if match_key(entry.intent):
        doc["intent"] = match_key(entry.intent)
    if entry.tools:
        doc["tools"] = _keys(entry.tools)
    if entry.tags:
        doc["tags"] = list(entry.tags)
    doc["text"] = lexical_text(entry.text, stemmer)
    if vector is not None:
        doc[VECTOR_FIELD] = list(vector)
    return doc


def bulk_index_lines(index: str, tenant_id: str, docs: Sequence[dict], serverless: bool,
                     route: str | None = None) -> list[dict]:
    """``index`` actions: by ``doc_id`` (a write replaces), or without an id on Serverless; with
    ``route`` (``routing``) as each action's routing."""
    lines: list[dict] = []
    for doc in docs:
        meta: dict = {"_index": index}
        if not serverless:
            meta["_id"] = doc_id(tenant_id, doc["experience_id"])
        if route is not None:
            meta["routing"] = route
        lines += [{"index": meta}, doc]
    return lines


def bulk_delete_lines(index: str, ids: Iterable[str], route: str | None = None) -> list[dict]:
    """``delete`` actions by document ``_id`` (and ``route``, the routing it was written with); a
    missing document answers 404 ``not_found``."""
    extra = {"routing": route} if route is not None else {}
    return [{"delete": {"_index": index, "_id": i, **extra}} for i in ids]


# --- filters --------------------------------------------------------------------------------------


def _absent(field: str) -> dict:
    return {"bool": {"must_not": [{"exists": {"field": field}}]}}


def _this_or_absent(field: str, value: dict) -> dict:
    return {"bool": {"should": [value, _absent(field)], "minimum_should_match": 1}}


def scope_clause(field: str, value: str | None) -> dict:
    """A reader sees the shared entries (no value) and, when it has one, its own."""
    if value is None:
        return _absent(field)
    return _this_or_absent(field, {"term": {field: value}})


def filter_clause(tenant_id: str, flt: IndexFilter) -> dict:
    """Tenant and the scope rules of ``ports.IndexFilter``, for a filter context."""
    clauses: list[dict] = [{"term": {"tenant_id": tenant_id}}]
    if not flt.all_scopes:
        clauses += [scope_clause("agent_id", flt.agent_id), scope_clause("user_id", flt.user_id)]
    if match_key(flt.task_type):
        clauses.append(_this_or_absent("task_type", {"term": {"task_type": match_key(flt.task_type)}}))
    if match_key(flt.intent):
        clauses.append(_this_or_absent("intent", {"term": {"intent": match_key(flt.intent)}}))
    if flt.tools:
        clauses.append(_this_or_absent("tools", {"terms": {"tools": _keys(flt.tools)}}))
    return {"bool": {"filter": clauses}}


def ids_clause(tenant_id: str, experience_ids: Sequence[str]) -> dict:
    return {"bool": {"filter": [{"term": {"tenant_id": tenant_id}}, {"terms": {"experience_id": list(experience_ids)}}]}}


# --- queries --------------------------------------------------------------------------------------

# A hit is its experience id, read from doc values, and its score. No stored field is read, not even
# _id: the stored fields of a hit sit in a compressed block beside its neighbours', which the fetch
# phase would decompress for each hit. No total either: counting every match keeps lucene from
# skipping the documents that cannot enter the top k, and nothing reads the count.
_IDS_ONLY = {"_source": False, "stored_fields": "_none_", "docvalue_fields": ["experience_id"],
             "track_total_hits": False}
# what Serverless needs to replace or delete a document: its _id (which it chose)
_DOC_IDS = {"_source": False, "docvalue_fields": ["experience_id"], "track_total_hits": False}


def knn_query(vector: Sequence[float], filter_: dict, k: int, ef_search: int | None = None) -> dict:
    """Approximate k-NN with the filter inside the knn clause (efficient filtering): the k are
    the best among the entries that pass, not the filtered remains of the best k overall."""
    k = min(k, MAX_K)
    knn: dict = {"vector": list(vector), "k": k, "filter": filter_}
    if ef_search is not None:
        knn["method_parameters"] = {"ef_search": max(ef_search, k)}
    return {"size": k, **_IDS_ONLY, "query": {"knn": {VECTOR_FIELD: knn}}}


def search_query(tenant_id: str, vector: Sequence[float], flt: IndexFilter, k: int, ef_search: int | None = None) -> dict:
    return knn_query(vector, filter_clause(tenant_id, flt), k, ef_search)


def similarity_query(tenant_id: str, vector: Sequence[float], experience_ids: Sequence[str]) -> dict:
    """k-NN restricted to the listed ids with k = their number: when no more entries pass the
    filter than k, lucene and faiss score every one of them exactly. For Serverless, where the
    cosine script of ``cosine_query`` is not known to run."""
    unique = list(dict.fromkeys(experience_ids))
    return knn_query(vector, ids_clause(tenant_id, unique), len(unique))


# A script field runs in the fetch phase, once per returned hit: the cosines of a search's hits
# cost the node k dot products and the response k numbers, not k vectors of JSON. k-NN's Painless
# ``cosineSimilarity`` fails on a document without a vector, hence the guard (such a hit: null).
_COSINE_SCRIPT = (
    "if (doc[params.field].size() == 0) { return null; } "
    "return cosineSimilarity(params.query_value, doc[params.field]);"
)


def with_cosines(body: dict, vector: Sequence[float]) -> dict:
    """``body`` whose hits also carry their cosine to ``vector`` (field ``COSINE``), computed on
    the node; ranking and scores stay those of ``body``."""
    script = {"lang": "painless", "source": _COSINE_SCRIPT,
              "params": {"field": VECTOR_FIELD, "query_value": list(vector)}}
    return {**body, "script_fields": {COSINE: {"script": script}}}


def cosine_query(tenant_id: str, vector: Sequence[float], experience_ids: Sequence[str]) -> dict:
    """The listed entries with their cosine to ``vector``: the script of ``with_cosines``, so a
    cosine asked for by id and one carried by a lexical hit are the same float."""
    unique = list(dict.fromkeys(experience_ids))
    return with_cosines(filter_query(ids_clause(tenant_id, unique), len(unique)), vector)


def filter_query(filter_: dict, k: int) -> dict:
    """The entries that pass, unranked (score 1): what a zero query vector, which has no cosine
    with anything, can still be answered with."""
    return {"size": min(k, MAX_K), **_IDS_ONLY, "query": {"bool": {"filter": [filter_]}}}


def query_terms(text: str, stemmer: str = "light") -> list[str]:
    """Distinct terms in first-seen order: a repeated term counts once, as in the numpy index."""
    return list(dict.fromkeys(terms(text, stemmer)))[:MAX_QUERY_TERMS]


def lexical_query(tenant_id: str, text: str, flt: IndexFilter, k: int, stemmer: str = "light") -> dict | None:
    """BM25 over ``text`` under the same filter (filter context: it does not change scores).
    None when the text has no terms, so nothing can match."""
    words = query_terms(text, stemmer)
    if not words:
        return None
    return {
        "size": min(k, MAX_K),
        **_IDS_ONLY,
        "query": {
            "bool": {
                "must": [{"match": {"text": {"query": " ".join(words), "analyzer": "whitespace"}}}],
                "filter": [filter_clause(tenant_id, flt)],
            }
        },
    }


def msearch_lines(bodies: Sequence[dict], route: str | None = None) -> list[dict]:
    """An ``_msearch`` body: each search after its header (the index is in the path), which holds
    ``route``, the searches' routing, when there is one."""
    header = {"routing": route} if route is not None else {}
    lines: list[dict] = []
    for body in bodies:
        lines += [dict(header), body]
    return lines


def lookup_query(tenant_id: str, experience_ids: Sequence[str]) -> dict:
    """The documents (their ``_id``) of listed entries: how Serverless, which chose the ids,
    finds what to replace or delete. Also finds any duplicate left by an earlier write."""
    return {"size": MAX_K, **_DOC_IDS, "query": {"bool": {"filter": [ids_clause(tenant_id, experience_ids)]}}}


def tenant_documents_query(tenant_id: str, size: int) -> dict:
    """The ids of up to ``size`` of the tenant's documents (no source, no score)."""
    return {"query": {"bool": {"filter": [{"term": {"tenant_id": tenant_id}}]}}, "size": size, "_source": False,
            "track_total_hits": False}


def count_query(tenant_id: str) -> dict:
    return {"query": {"term": {"tenant_id": tenant_id}}}


# --- responses ------------------------------------------------------------------------------------


def cosine_from_score(score: float, space: Space) -> float:
    """Undo the k-NN plugin's score translation (docs: k-NN spaces).

    cosinesimil: score = (2 - (1 - cos)) / 2 = (1 + cos) / 2.
    innerproduct on unit vectors: score = 1 + ip when ip >= 0, else 1 / (1 - ip).
    """
    if space == "cosinesimil":
        return 2.0 * score - 1.0
    return score - 1.0 if score >= 1.0 else 1.0 - 1.0 / score


def hit_ids(response: dict) -> list[tuple[str, float]]:
    """(experience_id, raw score) of each hit, in the order returned."""
    return [(h["fields"]["experience_id"][0], float(h["_score"] or 0.0)) for h in response["hits"]["hits"]]


def hit_cosines(response: dict) -> dict[str, float]:
    """experience_id -> cosine of each hit of a ``with_cosines`` search that has one (an entry
    without a vector has none); the first copy of an id counts."""
    out: dict[str, float] = {}
    seen: set[str] = set()
    for h in response["hits"]["hits"]:
        experience_id = h["fields"]["experience_id"][0]
        value = (h["fields"].get(COSINE) or [None])[0]
        if value is not None and experience_id not in seen:
            out[experience_id] = float(value)
        seen.add(experience_id)
    return out
