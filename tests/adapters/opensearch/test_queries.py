"""OpenSearch bodies as data (``opensearch_queries``), and the adapter's I/O rules against a
recording client: Serverless never gets an id or a refresh, every client error is translated.
The real engine runs the contract suite (tests/contract, marker ``opensearch``), and here the
upgrade of an index created by an earlier version."""
from __future__ import annotations

import inspect
import ssl
import uuid

import numpy as np
import pytest
from botocore.credentials import Credentials

from chalicelib.adapters.opensearch import http as os_exc
from chalicelib.adapters.opensearch import queries as q
from chalicelib.adapters.opensearch.index import SMALL_WRITE, IndexUnavailable, OpenSearchVectorIndex, build_client
from chalicelib.domain.lexical import Bm25Params
from chalicelib.ports import IndexEntry, IndexFilter

ABSENT_AGENT = {"bool": {"must_not": [{"exists": {"field": "agent_id"}}]}}
ABSENT_USER = {"bool": {"must_not": [{"exists": {"field": "user_id"}}]}}
TENANT = {"term": {"tenant_id": "t1"}}
IDS_ONLY = {"_source": False, "stored_fields": "_none_", "docvalue_fields": ["experience_id"], "track_total_hits": False}


def either(field: str, clause: dict) -> dict:
    return {
        "bool": {
            "should": [clause, {"bool": {"must_not": [{"exists": {"field": field}}]}}],
            "minimum_should_match": 1,
        }
    }


# --- index ----------------------------------------------------------------------------------------


def test_the_local_index_is_lucene_hnsw_cosine_with_keyword_scopes_a_bm25_text_field_and_no_vector_in_source():
    spec = q.IndexSpec("hindsight-experiences", 384, replicas=0)
    keyword = {"type": "keyword"}
    assert q.index_body(spec) == {
        "settings": {
            "index": {
                "knn": True,
                "similarity": {"hindsight_bm25": {"type": "BM25", "k1": 1.2, "b": 0.4}},
                "number_of_shards": 1,
                "number_of_replicas": 0,
            }
        },
        "mappings": {
            "_routing": {"required": True},  # every write carries its tenant's routing
            "dynamic": "strict",
            "_source": {"excludes": ["embedding"]},
            "properties": {
                "tenant_id": keyword,
                "experience_id": keyword,
                "agent_id": keyword,
                "user_id": keyword,
                "task_type": keyword,
                "intent": keyword,
                "tools": keyword,
                "tags": keyword,
                "text": {"type": "text", "analyzer": "whitespace", "similarity": "hindsight_bm25",
                         "index_options": "freqs"},
                "embedding": {
                    "type": "knn_vector",
                    "dimension": 384,
                    "method": {
                        "name": "hnsw",
                        "engine": "lucene",
                        "space_type": "cosinesimil",
                        "parameters": {"m": 16, "ef_construction": 128},
                    },
                },
            },
        },
    }


def test_a_serverless_faiss_index_names_its_engine_and_no_shard_settings():
    body = q.index_body(q.IndexSpec("x", 8, engine="faiss", serverless=True, replicas=2))
    assert body["settings"] == {
        "index": {"knn": True, "similarity": {"hindsight_bm25": {"type": "BM25", "k1": 1.2, "b": 0.4}}}
    }
    assert body["mappings"]["properties"]["embedding"]["method"]["engine"] == "faiss"


def test_shards_and_replicas_left_none_take_the_cluster_defaults():
    body = q.index_body(q.IndexSpec("x", 8, shards=None))
    assert "number_of_shards" not in body["settings"]["index"] and "number_of_replicas" not in body["settings"]["index"]


@pytest.mark.parametrize("kw", [{"engine": "nmslib"}, {"space": "l2"}, {"dim": 0}])
def test_an_index_spec_refuses_engines_without_efficient_filtering_and_other_spaces(kw):
    with pytest.raises(ValueError):
        q.IndexSpec("x", **{"dim": 8, **kw})


def test_the_dimension_is_read_back_from_a_mapping_response():
    response = {"x": {"mappings": {"properties": {"embedding": {"type": "knn_vector", "dimension": 384}}}}}
    assert q.mapped_dimension(response, "x") == 384
    assert q.mapped_dimension({"x": {"mappings": {}}}, "x") is None


def test_the_bm25_parameters_come_from_the_spec_and_a_different_existing_index_is_told_apart():
    spec = q.IndexSpec("x", 8, bm25=Bm25Params(k1=1.5, b=0.4))
    assert q.index_body(spec)["settings"]["index"]["similarity"] == {"hindsight_bm25": {"type": "BM25", "k1": 1.5, "b": 0.4}}
    same = {"x": {"settings": {"index": {"similarity": {"hindsight_bm25": {"type": "BM25", "k1": "1.5", "b": "0.4"}}}}}}
    assert q.similarity_drift(same, "x", spec) == {}
    older = {"x": {"settings": {"index": {"similarity": {"hindsight_bm25": {"type": "BM25", "k1": "1.2", "b": "0.75"}}}}}}
    assert q.similarity_drift(older, "x", spec) == {"k1": (1.2, 1.5), "b": (0.75, 0.4)}
    assert q.similarity_drift({"x": {"settings": {"index": {}}}}, "x", spec) == {"k1": (1.2, 1.5), "b": (0.75, 0.4)}


@pytest.mark.parametrize("k1, b", [(-0.1, 0.5), (1.2, 1.5), (1.2, -0.1)])
def test_bm25_parameters_out_of_range_are_refused(k1, b):
    with pytest.raises(ValueError):
        Bm25Params(k1=k1, b=b)


def test_an_existing_index_with_other_bm25_parameters_is_reported_and_still_used(caplog):
    client = FakeClient()
    index = OpenSearchVectorIndex(client, q.IndexSpec("ix", 2, bm25=Bm25Params(b=0.4)))
    with caplog.at_level("WARNING"):
        index.count("t1")
    assert "ranks BM25 with {'b': 0.75}, the settings say {'b': 0.4}" in caplog.text
    client.similarity = {"type": "BM25", "k1": "1.2", "b": "0.4"}
    caplog.clear()
    with caplog.at_level("WARNING"):
        OpenSearchVectorIndex(client, q.IndexSpec("ix", 2, bm25=Bm25Params(b=0.4))).count("t1")
    assert "ranks BM25" not in caplog.text


def test_documents_and_queries_take_the_spec_stemmer_so_both_sides_fold_alike():
    entry = IndexEntry("e1", None, text="painted the fence")
    assert q.document("t1", entry, None, "plural")["text"] == "painted fence"
    assert q.document("t1", entry, None)["text"] == "paint fenc"
    body = q.lexical_query("t1", "painting fences", IndexFilter(), 5, "light")
    assert body["query"]["bool"]["must"][0]["match"]["text"]["query"] == "paint fenc"


def test_the_adapter_writes_and_queries_with_its_spec_stemmer():
    client = FakeClient()
    index = OpenSearchVectorIndex(client, q.IndexSpec("ix", 2, bm25=Bm25Params(stemmer="plural")))
    index.upsert("t1", [IndexEntry("e1", np.array([1.0, 0.0]), text="painted")])
    index.lexical_search("t1", "paintings", IndexFilter(), 5)
    bulk = next(c for c in client.calls if c[0] == "bulk")
    assert bulk[1][1]["text"] == "painted"  # not the default (light) "paint"
    search = next(c for c in client.calls if c[0] == "search")
    assert search[1]["query"]["bool"]["must"][0]["match"]["text"]["query"] == "painting"


def test_the_fields_an_older_index_lacks_are_the_ones_to_put():
    spec = q.IndexSpec("x", 8)
    props = q.index_body(spec)["mappings"]["properties"]
    older = {"x": {"mappings": {"properties": {k: v for k, v in props.items() if k != "intent"}}}}
    assert q.missing_properties(older, "x", spec) == {"intent": {"type": "keyword"}}
    assert q.missing_properties({"x": {"mappings": {"properties": props}}}, "x", spec) == {}


# --- documents ------------------------------------------------------------------------------------


def test_a_document_lowercases_tools_and_task_type_and_leaves_out_what_is_shared():
    entry = IndexEntry(
        "e1", None, agent_id="a1", tools=("Git", "docker", "git"), task_type="Operation",
        tags=("ci",), text="Call get_weather: MissingParameter", intent=" Check The Weather ",
    )
    assert q.document("t1", entry, [0.6, 0.8]) == {
        "tenant_id": "t1",
        "experience_id": "e1",
        "agent_id": "a1",
        "task_type": "operation",
        "intent": "check the weather",
        "tools": ["docker", "git"],
        "tags": ["ci"],
        "text": "call get_weather get weather missingparameter miss parameter",  # light stemmer: keys, not words
        "embedding": [0.6, 0.8],
    }


def test_a_shared_entry_without_a_vector_is_only_tenant_id_and_text():
    assert q.document("t1", IndexEntry("e1", None), None) == {"tenant_id": "t1", "experience_id": "e1", "text": ""}


def test_document_ids_are_unambiguous_whatever_the_ids_contain():
    assert q.doc_id("t1", "e1") == "2:t1:e1"
    assert q.doc_id("a:b", "c") != q.doc_id("a", "b:c")


def test_bulk_index_lines_carry_the_document_id_except_on_serverless():
    docs = [{"experience_id": "e1", "tenant_id": "t1"}, {"experience_id": "e2", "tenant_id": "t1"}]
    assert q.bulk_index_lines("ix", "t1", docs, serverless=False) == [
        {"index": {"_index": "ix", "_id": "2:t1:e1"}}, docs[0],
        {"index": {"_index": "ix", "_id": "2:t1:e2"}}, docs[1],
    ]
    assert q.bulk_index_lines("ix", "t1", docs, serverless=True) == [
        {"index": {"_index": "ix"}}, docs[0], {"index": {"_index": "ix"}}, docs[1],
    ]


def test_bulk_delete_lines_name_each_document():
    assert q.bulk_delete_lines("ix", ["a", "b"]) == [
        {"delete": {"_index": "ix", "_id": "a"}},
        {"delete": {"_index": "ix", "_id": "b"}},
    ]


# --- filters --------------------------------------------------------------------------------------


def test_a_reader_without_agent_or_user_sees_only_shared_entries_of_its_tenant():
    assert q.filter_clause("t1", IndexFilter()) == {"bool": {"filter": [TENANT, ABSENT_AGENT, ABSENT_USER]}}


def test_a_reader_sees_its_own_agent_and_user_and_the_shared_ones():
    assert q.filter_clause("t1", IndexFilter(agent_id="a1", user_id="u1")) == {
        "bool": {
            "filter": [
                TENANT,
                either("agent_id", {"term": {"agent_id": "a1"}}),
                either("user_id", {"term": {"user_id": "u1"}}),
            ]
        }
    }


def test_tools_and_task_type_keep_entries_that_name_none_and_compare_lowercased():
    flt = IndexFilter(tools=("Git", "KubeCtl", "git"), task_type="Operation")
    assert q.filter_clause("t1", flt) == {
        "bool": {
            "filter": [
                TENANT,
                ABSENT_AGENT,
                ABSENT_USER,
                either("task_type", {"term": {"task_type": "operation"}}),
                either("tools", {"terms": {"tools": ["git", "kubectl"]}}),
            ]
        }
    }


def test_an_empty_task_type_is_no_filter():
    assert q.filter_clause("t1", IndexFilter(task_type="")) == q.filter_clause("t1", IndexFilter())


def test_an_intent_keeps_entries_without_one_and_compares_trimmed_and_lowercased():
    assert q.filter_clause("t1", IndexFilter(intent=" Book A Flight ")) == {
        "bool": {"filter": [TENANT, ABSENT_AGENT, ABSENT_USER, either("intent", {"term": {"intent": "book a flight"}})]}
    }
    assert q.filter_clause("t1", IndexFilter(intent="  ")) == q.filter_clause("t1", IndexFilter())


# --- queries --------------------------------------------------------------------------------------


def test_search_puts_the_filter_inside_the_knn_clause():
    flt = IndexFilter(agent_id="a1")
    assert q.search_query("t1", [1.0, 0.0], flt, 5) == {
        "size": 5,
        **IDS_ONLY,
        "query": {"knn": {"embedding": {"vector": [1.0, 0.0], "k": 5, "filter": q.filter_clause("t1", flt)}}},
    }


def test_ef_search_goes_with_the_query_and_is_never_below_k():
    knn = q.search_query("t1", [1.0], IndexFilter(), 50, ef_search=20)["query"]["knn"]["embedding"]
    assert knn["method_parameters"] == {"ef_search": 50}
    knn = q.search_query("t1", [1.0], IndexFilter(), 5, ef_search=100)["query"]["knn"]["embedding"]
    assert knn["method_parameters"] == {"ef_search": 100}


def test_k_is_capped_at_the_largest_result_window():
    body = q.search_query("t1", [1.0], IndexFilter(), 50_000)
    assert body["size"] == body["query"]["knn"]["embedding"]["k"] == q.MAX_K


def test_lexical_search_matches_distinct_terms_under_the_same_filter():
    flt = IndexFilter(tools=("git",))
    assert q.lexical_query("t1", "get_weather failed: get_weather MissingParameter", flt, 10) == {
        "size": 10,
        **IDS_ONLY,
        "query": {
            "bool": {
                "must": [{"match": {"text": {
                    "query": "get_weather get weather fail missingparameter miss parameter",
                    "analyzer": "whitespace",
                }}}],
                "filter": [q.filter_clause("t1", flt)],
            }
        },
    }


def test_a_text_of_stopwords_only_asks_nothing():
    assert q.lexical_query("t1", "the and of", IndexFilter(), 10) is None


def test_serverless_similarities_are_an_exact_knn_over_the_listed_ids():
    assert q.similarity_query("t1", [1.0, 0.0], ["a", "b", "a"]) == {
        "size": 2,
        **IDS_ONLY,
        "query": {"knn": {"embedding": {
            "vector": [1.0, 0.0],
            "k": 2,
            "filter": {"bool": {"filter": [TENANT, {"terms": {"experience_id": ["a", "b"]}}]}},
        }}},
    }


def test_cosines_ride_on_a_search_as_a_script_field_that_leaves_its_query_alone():
    body = q.lexical_query("t1", "kubectl", IndexFilter(), 5)
    carried = q.with_cosines(body, [0.6, 0.8])
    assert {k: v for k, v in carried.items() if k != "script_fields"} == body
    (field,) = carried["script_fields"]
    script = carried["script_fields"][field]["script"]
    assert field == q.COSINE and script["lang"] == "painless"
    assert script["params"] == {"field": "embedding", "query_value": [0.6, 0.8]}
    assert "cosineSimilarity" in script["source"] and "size() == 0" in script["source"]


def test_cosines_by_id_are_the_same_script_over_the_listed_ids():
    assert q.cosine_query("t1", [1.0, 0.0], ["a", "b", "a"]) == q.with_cosines({
        "size": 2,
        **IDS_ONLY,
        "query": {"bool": {"filter": [{"bool": {"filter": [TENANT, {"terms": {"experience_id": ["a", "b"]}}]}}]}},
    }, [1.0, 0.0])


def test_an_msearch_puts_an_empty_header_before_each_search():
    assert q.msearch_lines([{"size": 1}, {"size": 2}]) == [{}, {"size": 1}, {}, {"size": 2}]
    assert q.msearch_lines([{"size": 1}], "t1") == [{"routing": "t1"}, {"size": 1}]


def test_lookup_and_count_are_tenant_scoped():
    assert q.lookup_query("t1", ["a"]) == {
        "size": q.MAX_K,
        "_source": False, "docvalue_fields": ["experience_id"], "track_total_hits": False,  # and the _id
        "query": {"bool": {"filter": [{"bool": {"filter": [TENANT, {"terms": {"experience_id": ["a"]}}]}}]}},
    }
    assert q.count_query("t1") == {"query": {"term": {"tenant_id": "t1"}}}


# --- responses ------------------------------------------------------------------------------------


@pytest.mark.parametrize("cos", [1.0, 0.7, 0.0, -0.3, -1.0])
def test_scores_turn_back_into_cosines(cos):
    assert q.cosine_from_score((1 + cos) / 2, "cosinesimil") == pytest.approx(cos)
    ip_score = 1 + cos if cos >= 0 else 1 / (1 - cos)
    assert q.cosine_from_score(ip_score, "innerproduct") == pytest.approx(cos)


def test_hits_give_their_cosine_unless_they_have_no_vector():
    response = {"hits": {"hits": [
        {"_score": 3.0, "fields": {"experience_id": ["a"], "cosine": [0.25]}},
        {"_score": 2.0, "fields": {"experience_id": ["none"], "cosine": [None]}},
        {"_score": 1.0, "fields": {"experience_id": ["a"], "cosine": [0.5]}},
    ]}}
    assert q.hit_cosines(response) == {"a": 0.25}


def test_hits_give_their_experience_id_and_score():
    response = {"hits": {"hits": [
        {"_id": "2:t1:a", "_score": 0.9, "fields": {"experience_id": ["a"]}},
        {"_id": "2:t1:b", "_score": None, "fields": {"experience_id": ["b"]}},
    ]}}
    assert q.hit_ids(response) == [("a", 0.9), ("b", 0.0)]


# --- the adapter's I/O, against a recording client ----------------------------------------------


def hit(experience_id: str, score: float, _id: str | None = None) -> dict:
    return {"_id": _id or f"auto-{experience_id}", "_score": score, "fields": {"experience_id": [experience_id]}}


class FakeIndices:
    def __init__(self, client: "FakeClient") -> None:
        self.client = client

    def get(self, index):
        """GET <index>: its mappings and settings, or 404 (until a create, or another creator, made it)."""
        self.client.calls.append(("get", index))
        if not self.client.index_exists:
            raise os_exc.NotFoundError(404, "index_not_found_exception", {})
        props = dict(self.client.mapped, embedding={"dimension": self.client.dim})
        return {index: {"mappings": {"properties": props},
                        "settings": {"index": {"similarity": {"hindsight_bm25": self.client.similarity}}}}}

    def create(self, index, body):
        self.client.calls.append(("create", index))
        self.client.index_exists = True
        if self.client.create_error is not None:
            raise self.client.create_error

    def put_mapping(self, index, body):
        self.client.calls.append(("put_mapping", index, body))


class FakeClient:
    """Records every call; answers searches from ``hits`` and bulks from ``bulk_response``."""

    def __init__(self, dim: int = 2, error: Exception | None = None) -> None:
        self.dim = dim
        self.error = error
        self.calls: list[tuple] = []
        self.index_exists = True
        self.create_error: Exception | None = None
        self.mapped = {k: v for k, v in q.index_body(q.IndexSpec("ix", dim))["mappings"]["properties"].items()
                       if k != "embedding"}  # an index of this version
        self.similarity = {"type": "BM25", "k1": "1.2", "b": "0.75"}  # as OpenSearch answers: strings
        self.hits: list[dict] = []
        self.answers: list[dict] = []  # the _msearch responses, when not one per search from hits
        self.bulk_response: dict = {"errors": False, "items": []}
        self.bulk_paths: list[str | None] = []  # the index each bulk was sent under (its path)
        self.indices = FakeIndices(self)
        self.routings: list[tuple[str, str | None]] = []  # (request, the routing it carried)

    def search(self, index, body, **params):
        self.calls.append(("search", body))
        self.routings.append(("search", params.get("routing")))
        if self.error:
            raise self.error
        return {"hits": {"hits": self.hits}}

    def msearch(self, index, body):
        self.calls.append(("msearch", body))
        self.routings += [("msearch", header.get("routing")) for header in body[::2]]
        if self.error:
            raise self.error
        return {"responses": self.answers or [{"hits": {"hits": self.hits}} for _ in body[1::2]]}

    def bulk(self, body, index=None, **params):
        self.calls.append(("bulk", body, params))
        self.bulk_paths.append(index)
        if self.error:
            raise self.error
        return self.bulk_response

    def count(self, index, body, **params):
        self.calls.append(("count", body))
        self.routings.append(("count", params.get("routing")))
        if self.error:
            raise self.error
        return {"count": 3}


def adapter(client: FakeClient, **kw) -> OpenSearchVectorIndex:
    return OpenSearchVectorIndex(client, q.IndexSpec("ix", client.dim, **kw))


def bulks(client: FakeClient) -> list[tuple]:
    return [c for c in client.calls if c[0] == "bulk"]


def searches(client: FakeClient) -> list[tuple]:
    return [c for c in client.calls if c[0] in ("search", "msearch")]


def test_small_writes_refresh_at_once_large_ones_wait_for_a_refresh_and_ids_replace_documents():
    client = FakeClient()
    index = adapter(client)
    index.upsert("t1", [IndexEntry("e1", np.array([3.0, 4.0]))])
    ((_, lines, params),) = bulks(client)
    assert params == {"refresh": "true"}  # a review's lessons: searchable when the write returns, no wait
    assert lines[0] == {"index": {"_index": "ix", "_id": "2:t1:e1", "routing": "t1"}}
    assert lines[1]["embedding"] == pytest.approx([0.6, 0.8])
    small = [IndexEntry(f"e{i}", np.ones(2)) for i in range(SMALL_WRITE)]
    index.upsert("t1", small)
    index.delete("t1", [e.experience_id for e in small])
    index.upsert("t1", [*small, IndexEntry("one more", np.ones(2))])  # a reindex: one refresh for all of it
    index.delete("t1", [e.experience_id for e in small] + ["one more"])
    assert [params for _, _, params in bulks(client)[1:]] == [{"refresh": "true"}] * 2 + [{"refresh": "wait_for"}] * 2
    fixed = OpenSearchVectorIndex(client, q.IndexSpec("ix", 2), refresh="wait_for")  # a deployment's choice
    fixed.upsert("t1", [IndexEntry("e1", np.ones(2))])
    assert bulks(client)[-1][2] == {"refresh": "wait_for"}


def test_serverless_writes_send_no_id_and_no_refresh_and_replace_what_a_lookup_finds():
    client = FakeClient()
    client.hits = [hit("e1", 0.0, "old-1"), hit("e1", 0.0, "old-2")]  # an earlier copy and a duplicate
    index = adapter(client, serverless=True, engine="faiss")
    index.upsert("t1", [IndexEntry("e1", np.array([1.0, 0.0]))])
    index.delete("t1", ["e1"])
    (_, upsert, upsert_params), (_, delete, delete_params) = bulks(client)
    assert upsert_params == delete_params == {}
    assert upsert[:2] == q.bulk_delete_lines("ix", ["old-1", "old-2"])
    assert upsert[2] == {"index": {"_index": "ix"}}
    assert delete == q.bulk_delete_lines("ix", ["old-1", "old-2"])
    assert all("_id" not in line.get("index", {}) for _, lines, _ in bulks(client) for line in lines)


def test_the_last_entry_of_an_id_in_one_upsert_wins():
    client = FakeClient()
    adapter(client).upsert("t1", [IndexEntry("e1", np.array([1.0, 0.0])), IndexEntry("e1", np.array([0.0, 1.0]))])
    ((_, lines, _),) = bulks(client)
    assert len(lines) == 2 and lines[1]["embedding"] == [0.0, 1.0]


def test_search_returns_cosines_and_drops_a_later_copy_of_an_id():
    client = FakeClient()
    client.hits = [hit("a", 1.0), hit("b", 0.75), hit("a", 0.5), hit("c", 0.25)]
    assert adapter(client).search("t1", np.array([1.0, 0.0]), IndexFilter(), 3) == [("a", 1.0), ("b", 0.5), ("c", -0.5)]


def test_a_zero_query_vector_scores_every_passing_entry_zero():
    client = FakeClient()
    client.hits = [hit("a", 0.0), hit("b", 0.0)]
    index = adapter(client)
    assert index.search("t1", np.zeros(2), IndexFilter(), 5) == [("a", 0.0), ("b", 0.0)]
    assert "knn" not in client.calls[-1][1]["query"]
    assert index.similarities("t1", np.zeros(2), ["a", "b"]) == {"a": 0.0, "b": 0.0}


def cosine_hit(experience_id: str, score: float, cosine: float | None) -> dict:
    return {**hit(experience_id, score), "fields": {"experience_id": [experience_id], "cosine": [cosine]}}


def test_hybrid_search_sends_both_searches_in_one_msearch_the_lexical_one_carrying_cosines():
    client = FakeClient()
    client.answers = [{"hits": {"hits": [hit("a", 1.0)]}},
                      {"hits": {"hits": [cosine_hit("a", 2.5, 0.9), cosine_hit("b", 0.5, -0.25)]}}]
    flt = IndexFilter(agent_id="a1")
    assert adapter(client).hybrid_search("t1", np.array([2.0, 0.0]), "kubectl rollout", flt, 5) == (
        {"a": 1.0, "b": -0.25}, {"a": 2.5, "b": 0.5}
    )  # the k-NN's cosine of "a" wins: hybrid_by_parts takes it from the k-NN too
    assert searches(client) == [("msearch", q.msearch_lines([
        q.search_query("t1", [1.0, 0.0], flt, 5),
        q.with_cosines(q.lexical_query("t1", "kubectl rollout", flt, 5), [1.0, 0.0]),
    ], "t1"))]


def test_a_lexical_hit_without_a_vector_gets_no_cosine_and_no_second_request():
    client = FakeClient()
    client.answers = [{"hits": {"hits": [hit("a", 1.0)]}}, {"hits": {"hits": [cosine_hit("flat", 2.0, None)]}}]
    assert adapter(client).hybrid_search("t1", np.array([1.0, 0.0]), "kubectl", IndexFilter(), 5) == (
        {"a": 1.0}, {"flat": 2.0}
    )
    assert [c[0] for c in searches(client)] == ["msearch"]


def test_serverless_hybrid_search_asks_the_cosines_of_lexical_hits_the_knn_missed_in_a_second_request():
    client = FakeClient()
    client.answers = [{"hits": {"hits": [hit("a", 1.0)]}}, {"hits": {"hits": [hit("b", 2.0), hit("a", 1.5)]}}]
    client.hits = [hit("b", 0.75)]  # the similarity search
    index = adapter(client, serverless=True, engine="faiss")
    semantic, lexical = index.hybrid_search("t1", np.array([1.0, 0.0]), "kubectl", IndexFilter(), 5)
    assert semantic == {"a": 1.0, "b": 0.5} and lexical == {"b": 2.0, "a": 1.5}
    assert [c[0] for c in searches(client)] == ["msearch", "search"]
    assert searches(client)[0][1][3] == q.lexical_query("t1", "kubectl", IndexFilter(), 5)
    assert searches(client)[1][1] == q.similarity_query("t1", [1.0, 0.0], ["b"])


def test_similarities_read_the_script_field_and_skip_entries_without_a_vector():
    client = FakeClient()
    client.hits = [cosine_hit("a", 0.0, 0.5), cosine_hit("flat", 0.0, None)]
    assert adapter(client).similarities("t1", np.array([1.0, 0.0]), ["a", "flat", "gone"]) == {"a": 0.5}
    assert searches(client) == [("search", q.cosine_query("t1", [1.0, 0.0], ["a", "flat", "gone"]))]


def test_hybrid_search_with_a_zero_vector_or_no_terms_needs_one_request():
    client = FakeClient()
    client.answers = [{"hits": {"hits": [hit("a", 1.0)]}}, {"hits": {"hits": [hit("b", 2.0)]}}]
    index = adapter(client)
    assert index.hybrid_search("t1", np.zeros(2), "kubectl", IndexFilter(), 5) == ({"a": 0.0, "b": 0.0}, {"b": 2.0})
    client.answers = [{"hits": {"hits": [hit("a", 1.0)]}}]
    assert index.hybrid_search("t1", np.array([1.0, 0.0]), "the and of", IndexFilter(), 5) == ({"a": 1.0}, {})
    assert [c[0] for c in searches(client)] == ["msearch", "msearch"]
    assert searches(client)[1][1] == q.msearch_lines([q.search_query("t1", [1.0, 0.0], IndexFilter(), 5)], "t1")
    assert index.hybrid_search("t1", np.ones(2), "kubectl", IndexFilter(), 0) == ({}, {})
    assert len(searches(client)) == 2


def test_a_failed_search_inside_an_msearch_fails_the_hybrid_search():
    client = FakeClient()
    client.answers = [{"hits": {"hits": []}}, {"error": {"type": "search_phase_execution_exception"}, "status": 503}]
    with pytest.raises(IndexUnavailable, match="search_phase_execution_exception"):
        adapter(client).hybrid_search("t1", np.ones(2), "kubectl", IndexFilter(), 5)


def test_a_zero_vector_is_stored_without_embedding():
    client = FakeClient()
    adapter(client).upsert("t1", [IndexEntry("e1", np.zeros(2), text="kept for lexical search")])
    ((_, lines, _),) = bulks(client)
    assert "embedding" not in lines[1] and lines[1]["text"] == "kept lexical search"


def test_a_vector_of_the_wrong_dimension_is_refused_before_any_request():
    client = FakeClient()
    with pytest.raises(ValueError):
        adapter(client).upsert("t1", [IndexEntry("e1", np.ones(3))])
    assert bulks(client) == []


def test_deleting_a_missing_document_is_not_an_error_but_a_failed_write_is():
    client = FakeClient()
    client.bulk_response = {"errors": True, "items": [{"delete": {"_id": "x", "status": 404, "result": "not_found"}}]}
    index = adapter(client)
    index.delete("t1", ["x"])
    client.bulk_response = {"errors": True, "items": [
        {"index": {"_id": "2:t1:e1", "status": 429, "error": {"type": "es_rejected_execution_exception"}}},
    ]}
    with pytest.raises(IndexUnavailable, match="es_rejected_execution_exception"):
        index.upsert("t1", [IndexEntry("e1", np.ones(2))])


def test_the_index_is_created_once_when_missing_and_a_concurrent_creator_is_fine():
    client = FakeClient()
    client.index_exists = False
    client.create_error = os_exc.RequestError(400, "resource_already_exists_exception", {})
    index = adapter(client)
    assert index.count("t1") == 3 and index.count("t1") == 3
    assert [c for c in client.calls if c[0] in ("get", "create")] == [("get", "ix"), ("create", "ix"), ("get", "ix")]


def test_an_existing_index_costs_one_request_to_check():
    client = FakeClient()
    index = adapter(client)
    assert index.count("t1") == 3 and index.count("t1") == 3
    assert [c[0] for c in client.calls] == ["get", "count", "count"]


def test_an_index_created_by_an_earlier_version_gets_the_fields_it_lacks_once():
    client = FakeClient()
    del client.mapped["intent"]
    index = adapter(client)
    assert index.count("t1") == 3 and index.count("t1") == 3
    assert [c for c in client.calls if c[0] == "put_mapping"] == [
        ("put_mapping", "ix", {"properties": {"intent": {"type": "keyword"}}})
    ]


def test_an_index_made_at_deploy_time_is_never_created_or_changed_by_the_functions():
    """``manage_index=False`` (the cloud stack): documents only, each request under the index's path,
    which is all the functions' roles may reach; the deploy-time setup forces the check."""
    client = FakeClient()
    client.index_exists = False
    del client.mapped["intent"]
    index = OpenSearchVectorIndex(client, q.IndexSpec("ix", client.dim), manage_index=False)
    index.upsert("t1", [IndexEntry("e1", np.ones(2))])
    index.delete("t1", ["e1"])
    assert index.count("t1") == 3
    assert [c[0] for c in client.calls] == ["bulk", "bulk", "count"]
    assert client.bulk_paths == ["ix", "ix"]
    index.ensure_index(force=True)
    assert [c[0] for c in client.calls[3:]] == ["get", "create", "get", "put_mapping"]


def test_an_index_of_this_version_gets_no_mapping_update():
    client = FakeClient()
    adapter(client).count("t1")
    assert [c for c in client.calls if c[0] == "put_mapping"] == []


@pytest.mark.opensearch
def test_a_real_index_created_before_intents_takes_them_and_keeps_its_entries():
    from tests.support.opensearch import node_url

    client = build_client(node_url(), service="none", timeout=30)
    spec = q.IndexSpec(f"hindsight-upgrade-{uuid.uuid4().hex[:12]}", 2, replicas=0)
    old = q.index_body(spec)
    del old["mappings"]["properties"]["intent"]
    del old["mappings"]["_routing"]  # nor tenant routing: its one shard holds documents placed by id
    client.indices.create(index=spec.name, body=old)
    try:
        client.index(index=spec.name, id=q.doc_id("t1", "old"), refresh=True,
                     body=q.document("t1", IndexEntry("old", None, text="api key"), [1.0, 0.0]))
        index = OpenSearchVectorIndex(client, spec, refresh=True)
        index.upsert("t1", [IndexEntry("new", np.array([1.0, 0.0]), text="api key", intent="rotate keys"),
                            IndexEntry("other", np.array([1.0, 0.0]), text="api key", intent="read docs")])
        flt = IndexFilter(intent="Rotate Keys")
        assert sorted(i for i, _ in index.search("t1", np.array([1.0, 0.0]), flt, 5)) == ["new", "old"]
        assert sorted(i for i, _ in index.lexical_search("t1", "api key", flt, 5)) == ["new", "old"]
        # routed requests on one shard find what was placed by id: a routed delete removes it
        index.delete("t1", ["old"])
        assert sorted(i for i, _ in index.search("t1", np.array([1.0, 0.0]), flt, 5)) == ["new"]
    finally:
        client.indices.delete(index=spec.name, ignore_unavailable=True)
        client.close()


def test_an_existing_index_of_another_dimension_is_refused():
    client = FakeClient(dim=2)
    index = OpenSearchVectorIndex(client, q.IndexSpec("ix", 384))
    with pytest.raises(ValueError, match="2-dimensional"):
        index.count("t1")


UPSTREAM = [cls for _, cls in inspect.getmembers(os_exc, inspect.isclass) if issubclass(cls, os_exc.OpenSearchError)]


@pytest.mark.parametrize("cls", UPSTREAM, ids=lambda c: c.__name__)
def test_every_client_error_becomes_index_unavailable(cls):
    error = cls(503, "unavailable", {}) if issubclass(cls, os_exc.TransportError) else cls("broken")
    client = FakeClient(error=error)
    index = adapter(client)
    calls = [
        lambda: index.upsert("t1", [IndexEntry("e1", np.ones(2))]),
        lambda: index.delete("t1", ["e1"]),
        lambda: index.search("t1", np.ones(2), IndexFilter(), 5),
        lambda: index.lexical_search("t1", "kubectl rollout", IndexFilter(), 5),
        lambda: index.similarities("t1", np.ones(2), ["e1"]),
        lambda: index.hybrid_search("t1", np.ones(2), "kubectl rollout", IndexFilter(), 5),
        lambda: index.count("t1"),
    ]
    for call in calls:
        with pytest.raises(IndexUnavailable) as caught:
            call()
        assert caught.value.__cause__ is error


# --- the client factory ---------------------------------------------------------------------------


@pytest.mark.parametrize("service", ["es", "aoss"])
def test_aws_endpoints_are_signed_with_sigv4_for_their_service(service):
    client = build_client(
        "https://vectors.eu-west-1.aoss.amazonaws.com", region="eu-west-1", service=service,
        credentials=Credentials("AKIDEXAMPLE", "secret"),
    )
    assert client.url == "https://vectors.eu-west-1.aoss.amazonaws.com:443"
    assert (client.signer.service, client.signer.region) == (service, "eu-west-1")
    # the certificate is checked, against the CA bundle loaded once into the context (adapters.tls)
    context = client.pool.conn_kw["ssl_context"]
    assert client.pool.cert_reqs == "CERT_REQUIRED" and context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
    assert context.cert_store_stats()["x509_ca"] > 50


def test_a_local_node_is_reached_unsigned():
    client = build_client("http://127.0.0.1:9200", service="none")
    assert client.url == "http://127.0.0.1:9200" and client.signer is None


@pytest.mark.parametrize("kw", [{"service": "es"}, {"service": "nmslib", "region": "x"}])
def test_the_factory_refuses_sigv4_without_a_region_and_unknown_services(kw):
    with pytest.raises(ValueError):
        build_client("https://x.es.amazonaws.com", credentials=Credentials("a", "b"), **kw)



def test_every_request_about_a_tenant_carries_its_routing_from_one_function():
    client = FakeClient()
    index = adapter(client)
    index.upsert("t1", [IndexEntry("e1", np.ones(2))])
    index.delete("t1", ["e1"])
    index.search("t1", np.ones(2), IndexFilter(), 5)
    index.lexical_search("t1", "kubectl rollout", IndexFilter(), 5)
    index.similarities("t1", np.ones(2), ["e1"])
    index.hybrid_search("t1", np.ones(2), "kubectl rollout", IndexFilter(), 5)
    index.count("t1")
    actions = [line for _, lines, _ in bulks(client) for line in lines if set(line) & {"index", "delete"}]
    assert [next(iter(a.values()))["routing"] for a in actions] == ["t1", "t1"]
    assert {kind for kind, _ in client.routings} == {"search", "msearch", "count"}
    assert {route for _, route in client.routings} == {"t1"}


def test_no_routing_on_serverless_or_when_turned_off():
    for kw in ({"serverless": True, "engine": "faiss"}, {"routing": False}):
        client = FakeClient()
        index = adapter(client, **kw)
        index.search("t1", np.ones(2), IndexFilter(), 5)
        index.hybrid_search("t1", np.ones(2), "kubectl rollout", IndexFilter(), 5)
        index.count("t1")
        assert {route for _, route in client.routings} == {None}, kw
        assert "_routing" not in q.index_body(index.spec)["mappings"]


def test_an_index_of_several_shards_made_without_routing_is_refused_while_routing_is_on():
    client = FakeClient()
    original = client.indices.get

    def described(index):
        answer = original(index)
        answer[index].setdefault("settings", {}).setdefault("index", {})["number_of_shards"] = "3"
        return answer

    client.indices.get = described
    with pytest.raises(ValueError, match="without tenant routing"):
        adapter(client, shards=3).count("t1")
    assert adapter(client, shards=3, routing=False).count("t1") == 3  # placed by id: unrouted requests work
