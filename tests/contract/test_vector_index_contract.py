"""Contract of ``ports.VectorIndex``: exact-enough cosine k-NN per tenant, with scope and tool filters."""
from __future__ import annotations

import math

import numpy as np
import pytest

from chalicelib.ports import IndexEntry, IndexFilter, hybrid_by_parts

from .conftest import DIM

ANYONE = IndexFilter()  # agent None, user None, no tools: sees only fully shared entries


def vec(*head: float) -> np.ndarray:
    """A DIM-dimensional vector starting with ``head``; deliberately not normalised."""
    v = np.zeros(DIM, dtype=np.float32)
    v[: len(head)] = head
    return v


def entry(experience_id: str, v: np.ndarray | None = None, **kw) -> IndexEntry:
    return IndexEntry(experience_id, vec(1.0) if v is None else v, **kw)


def found(index, tenant_id: str = "t1", q: np.ndarray | None = None, flt: IndexFilter = ANYONE, k: int = 100) -> list[str]:
    return [i for i, _ in index.search(tenant_id, vec(1.0) if q is None else q, flt, k)]


Q = vec(3.0)  # along the first axis


# --- search -------------------------------------------------------------------------------------


def test_search_returns_cosine_scores_best_first(vector_index):
    vector_index.upsert(
        "t1",
        [
            entry("orthogonal", vec(0, 5)),
            entry("same", vec(2)),
            entry("opposite", vec(-1)),
            entry("diagonal", vec(4, 4)),
            entry("mostly", vec(3, 1)),
        ],
    )
    hits = vector_index.search("t1", Q, ANYONE, 10)
    assert [i for i, _ in hits] == ["same", "mostly", "diagonal", "orthogonal", "opposite"]
    expected = [1.0, 3 / math.sqrt(10), 1 / math.sqrt(2), 0.0, -1.0]
    assert [s for _, s in hits] == pytest.approx(expected, abs=1e-5)
    assert all(isinstance(s, float) for _, s in hits)


def test_search_of_an_empty_tenant_finds_nothing(vector_index):
    assert vector_index.search("t1", Q, ANYONE, 5) == []


@pytest.mark.parametrize("k", [0, 1, 3, 5, 50])
def test_search_returns_at_most_k_of_the_best(vector_index, k):
    vector_index.upsert("t1", [entry(f"x{i}", vec(10 - i, i)) for i in range(5)])  # x0 closest, x4 farthest
    assert found(vector_index, q=Q, k=k) == [f"x{i}" for i in range(min(k, 5))]


def test_k_counts_only_entries_that_pass_the_filter(vector_index):
    vector_index.upsert(
        "t1",
        [entry(f"other{i}", vec(1, 0.01 * i), agent_id="a2") for i in range(5)]
        + [entry("mine-far", vec(1, 5), agent_id="a1"), entry("shared-far", vec(1, 9))],
    )
    assert found(vector_index, q=Q, flt=IndexFilter(agent_id="a1"), k=2) == ["mine-far", "shared-far"]


def test_upserting_nothing_is_a_no_op(vector_index):
    vector_index.upsert("t1", [])
    assert vector_index.count("t1") == 0


def test_upserting_an_existing_id_replaces_its_vector(vector_index):
    vector_index.upsert("t1", [entry("x", vec(1)), entry("y", vec(1, 1))])
    vector_index.upsert("t1", [entry("x", vec(-1))])
    hits = vector_index.search("t1", Q, ANYONE, 10)
    assert [i for i, _ in hits] == ["y", "x"]
    assert hits[1][1] == pytest.approx(-1.0, abs=1e-5)
    assert vector_index.count("t1") == 2


def test_upserting_an_existing_id_replaces_its_tools(vector_index):
    vector_index.upsert("t1", [entry("x", tools=("git",))])
    git, docker = IndexFilter(tools=("git",)), IndexFilter(tools=("docker",))
    assert found(vector_index, flt=git) == ["x"] and found(vector_index, flt=docker) == []
    vector_index.upsert("t1", [entry("x", tools=("docker",))])
    assert found(vector_index, flt=git) == [] and found(vector_index, flt=docker) == ["x"]
    vector_index.upsert("t1", [entry("x", tools=())])
    assert found(vector_index, flt=git) == ["x"] and found(vector_index, flt=docker) == ["x"]


def test_upserting_an_existing_id_replaces_its_scope(vector_index):
    vector_index.upsert("t1", [entry("x", agent_id="a1", user_id="u1")])
    assert found(vector_index, flt=IndexFilter(agent_id="a1", user_id="u1")) == ["x"]
    vector_index.upsert("t1", [entry("x", agent_id="a2")])
    assert found(vector_index, flt=IndexFilter(agent_id="a1", user_id="u1")) == []
    assert found(vector_index, flt=IndexFilter(agent_id="a2")) == ["x"]
    vector_index.upsert("t1", [entry("x")])
    assert found(vector_index) == ["x"]


# --- delete / count -----------------------------------------------------------------------------


def test_deleted_entries_are_no_longer_found_or_counted(vector_index):
    vector_index.upsert("t1", [entry("x"), entry("y"), entry("z")])
    vector_index.delete("t1", ["x", "z"])
    assert found(vector_index) == ["y"]
    assert vector_index.count("t1") == 1


def test_deleting_unknown_ids_is_ignored(vector_index):
    vector_index.delete("t1", ["never-there"])  # an empty tenant, too
    vector_index.upsert("t1", [entry("x")])
    vector_index.delete("t1", ["never-there", "x", "x"])
    vector_index.delete("t1", ["x"])
    vector_index.delete("t1", [])
    assert vector_index.count("t1") == 0
    assert found(vector_index) == []


def test_a_deleted_id_can_be_upserted_again(vector_index):
    vector_index.upsert("t1", [entry("x", vec(1), tools=("git",))])
    vector_index.delete("t1", ["x"])
    vector_index.upsert("t1", [entry("x", vec(0, 1), tools=("docker",))])
    assert vector_index.count("t1") == 1
    assert found(vector_index, flt=IndexFilter(tools=("git",))) == []
    ((hit, score),) = vector_index.search("t1", Q, IndexFilter(tools=("docker",)), 5)
    assert hit == "x" and score == pytest.approx(0.0, abs=1e-5)


def test_count_counts_distinct_ids_per_tenant(vector_index):
    assert vector_index.count("t1") == 0
    vector_index.upsert("t1", [entry("x"), entry("y")])
    vector_index.upsert("t1", [entry("x"), entry("z")])
    vector_index.upsert("t2", [entry("x")])
    assert vector_index.count("t1") == 3
    assert vector_index.count("t2") == 1


# --- tenants ------------------------------------------------------------------------------------


def test_a_tenant_never_finds_another_tenants_entries(vector_index):
    vector_index.upsert("t1", [entry("mine")])
    vector_index.upsert("t2", [entry("theirs")])
    assert found(vector_index, "t1") == ["mine"]
    assert found(vector_index, "t2") == ["theirs"]
    assert found(vector_index, "t3") == []


def test_the_same_id_in_two_tenants_is_two_entries(vector_index):
    vector_index.upsert("t1", [entry("x", vec(1))])
    vector_index.upsert("t2", [entry("x", vec(-1))])
    vector_index.delete("t2", ["x"])
    ((hit, score),) = vector_index.search("t1", Q, ANYONE, 5)
    assert hit == "x" and score == pytest.approx(1.0, abs=1e-5)
    assert vector_index.count("t2") == 0


# --- scope and tool filters ---------------------------------------------------------------------


@pytest.fixture
def scoped(vector_index):
    vector_index.upsert(
        "t1",
        [
            entry("shared"),
            entry("agent-a1", agent_id="a1"),
            entry("agent-a2", agent_id="a2"),
            entry("user-u1", user_id="u1"),
            entry("a1-u1", agent_id="a1", user_id="u1"),
            entry("a1-u2", agent_id="a1", user_id="u2"),
        ],
    )
    return vector_index


@pytest.mark.parametrize(
    "agent_id, user_id, visible",
    [
        (None, None, {"shared"}),
        ("a1", None, {"shared", "agent-a1"}),
        (None, "u1", {"shared", "user-u1"}),
        ("a1", "u1", {"shared", "agent-a1", "user-u1", "a1-u1"}),
        ("a2", "u1", {"shared", "agent-a2", "user-u1"}),
        ("a1", "u2", {"shared", "agent-a1", "a1-u2"}),
        ("stranger", "nobody", {"shared"}),
    ],
)
def test_a_reader_sees_its_own_agent_and_user_and_the_shared_entries(scoped, agent_id, user_id, visible):
    assert set(found(scoped, flt=IndexFilter(agent_id=agent_id, user_id=user_id))) == visible


EVERY_SCOPE = {"shared", "agent-a1", "agent-a2", "user-u1", "a1-u1", "a1-u2"}


@pytest.mark.parametrize("agent_id, user_id", [(None, None), ("a1", "u1"), ("stranger", None)])
def test_all_scopes_lifts_the_scope_rules_in_both_searches_and_in_the_tenant_only(scoped, agent_id, user_id):
    scoped.upsert("t2", [entry("other-tenant", agent_id="a1"), entry("other-shared")])
    flt = IndexFilter(agent_id=agent_id, user_id=user_id, all_scopes=True)
    assert set(found(scoped, flt=flt)) == EVERY_SCOPE
    scoped.upsert("t1", [entry("words", text="kubectl rollout", agent_id="a2", user_id="u2")])
    scoped.upsert("t2", [entry("other-words", text="kubectl rollout", agent_id="a2")])
    assert [i for i, _ in scoped.lexical_search("t1", "kubectl rollout", flt, 10)] == ["words"]
    semantic, lexical = scoped.hybrid_search("t1", vec(1.0), "kubectl rollout", flt, 100)
    assert set(semantic) == EVERY_SCOPE | {"words"} and set(lexical) == {"words"}


def test_all_scopes_keeps_the_other_filters(vector_index):
    vector_index.upsert("t1", [entry("a1-git", agent_id="a1", tools=("git",)), entry("a2-docker", agent_id="a2", tools=("docker",)),
                               entry("u1-git-deploy", user_id="u1", tools=("git",), task_type="operation")])  # fmt: skip
    flt = IndexFilter(tools=("git",), all_scopes=True)
    assert set(found(vector_index, flt=flt)) == {"a1-git", "u1-git-deploy"}
    flt = IndexFilter(tools=("git",), task_type="query", all_scopes=True)
    assert set(found(vector_index, flt=flt)) == {"a1-git"}


@pytest.fixture
def tooled(vector_index):
    vector_index.upsert(
        "t1",
        [
            entry("no-tools"),
            entry("git", tools=("Git",)),
            entry("containers", tools=("docker", "kubectl")),
        ],
    )
    return vector_index


@pytest.mark.parametrize(
    "tools, visible",
    [
        ((), {"no-tools", "git", "containers"}),
        (("git",), {"no-tools", "git"}),
        (("GIT",), {"no-tools", "git"}),
        (("KubeCtl",), {"no-tools", "containers"}),
        (("git", "docker"), {"no-tools", "git", "containers"}),
        (("terraform",), {"no-tools"}),
    ],
)
def test_entries_that_name_tools_must_share_one_with_the_query(tooled, tools, visible):
    assert set(found(tooled, flt=IndexFilter(tools=tools))) == visible


def test_scope_and_tool_filters_apply_together(vector_index):
    vector_index.upsert(
        "t1",
        [
            entry("a1-git", agent_id="a1", tools=("git",)),
            entry("a1-docker", agent_id="a1", tools=("docker",)),
            entry("a2-git", agent_id="a2", tools=("git",)),
            entry("shared-any"),
        ],
    )
    flt = IndexFilter(agent_id="a1", tools=("git",))
    assert set(found(vector_index, flt=flt)) == {"a1-git", "shared-any"}


# --- persistence --------------------------------------------------------------------------------


def test_a_new_index_on_the_same_storage_finds_the_same_results(durable_backend):
    first = durable_backend.index()
    first.upsert(
        "t1",
        [
            entry("same", vec(2), agent_id="a1", tools=("Git",)),
            entry("diagonal", vec(1, 1), user_id="u1"),
            entry("replaced", vec(1), tools=("docker",)),
            entry("deleted", vec(1)),
            entry("shared", vec(0, 1)),
        ],
    )
    first.upsert("t1", [entry("replaced", vec(-1), tools=("kubectl",))])
    first.delete("t1", ["deleted"])
    first.upsert("t2", [entry("other-tenant", vec(1))])
    queries = [
        IndexFilter(),
        IndexFilter(agent_id="a1", user_id="u1"),
        IndexFilter(agent_id="a1", tools=("git",)),
        IndexFilter(tools=("docker",)),
        IndexFilter(tools=("KUBECTL",)),
    ]
    before = [first.search("t1", Q, flt, 10) for flt in queries]

    again = durable_backend.reopen().index()
    assert again is not first
    after = [again.search("t1", Q, flt, 10) for flt in queries]
    for b, a in zip(before, after):
        assert [i for i, _ in a] == [i for i, _ in b]
        assert [s for _, s in a] == pytest.approx([s for _, s in b], abs=1e-6)
    assert after[2][0][0] == "same" and "replaced" in dict(after[4])
    assert again.count("t1") == 4 and again.count("t2") == 1


# --- task type, lexical search, similarities ----------------------------------------------------


def test_a_task_type_filter_keeps_that_type_and_entries_without_one(vector_index):
    vector_index.upsert("t1", [entry("q", task_type="query"), entry("op", task_type="Operation"), entry("any")])
    assert sorted(found(vector_index, flt=IndexFilter(task_type="operation"))) == ["any", "op"]
    assert sorted(found(vector_index)) == ["any", "op", "q"]


def test_an_intent_filter_keeps_that_intent_and_entries_without_one(vector_index):
    vector_index.upsert("t1", [entry("read", intent="Read the forecast", text="weather city"),
                               entry("book", intent=" book a flight ", text="weather city"),
                               entry("any", text="weather city")])
    flt = IndexFilter(intent="BOOK A FLIGHT")
    assert sorted(found(vector_index, flt=flt)) == ["any", "book"]
    assert sorted(i for i, _ in vector_index.lexical_search("t1", "weather", flt, 10)) == ["any", "book"]
    assert sorted(found(vector_index)) == ["any", "book", "read"]
    assert sorted(i for i, _ in vector_index.lexical_search("t1", "weather", ANYONE, 10)) == ["any", "book", "read"]


def test_lexical_search_ranks_rare_exact_terms_first(vector_index):
    vector_index.upsert("t1", [
        entry("weather", text="Call ask_user before get_weather: MissingParameter city"),
        entry("flights", text="Call lookup_airport before search_flights: InvalidAirport"),
        entry("both", text="get_weather and search_flights both need a city"),
        entry("none", text="nothing relevant here"),
    ])
    hits = vector_index.lexical_search("t1", "get_weather failed with MissingParameter", ANYONE, 10)
    assert [i for i, _ in hits][:2] == ["weather", "both"]
    assert "none" not in [i for i, _ in hits] and all(s > 0 for _, s in hits)
    assert vector_index.lexical_search("t1", "unrelated words entirely", ANYONE, 10) == []


def test_lexical_search_obeys_the_filter_and_the_tenant(vector_index):
    vector_index.upsert("t1", [entry("mine", text="deploy kubectl rollout", agent_id="a1"),
                               entry("theirs", text="deploy kubectl rollout", agent_id="a2")])
    vector_index.upsert("t2", [entry("other-tenant", text="deploy kubectl rollout")])
    hits = vector_index.lexical_search("t1", "kubectl rollout", IndexFilter(agent_id="a1"), 10)
    assert [i for i, _ in hits] == ["mine"]


def test_an_entry_deleted_then_upserted_again_is_found_by_both_searches(vector_index):
    """What restoring an archived lesson does to the index: out of it, then back in."""
    vector_index.upsert("t1", [entry("x", vec(1), text="ask_user before get_weather", tools=("get_weather",))])
    vector_index.delete("t1", ["x"])
    assert vector_index.lexical_search("t1", "get_weather", IndexFilter(tools=("get_weather",)), 10) == []
    vector_index.upsert("t1", [entry("x", vec(1), text="ask_user before get_weather", tools=("get_weather",))])
    assert [i for i, _ in vector_index.lexical_search("t1", "get_weather", IndexFilter(tools=("get_weather",)), 10)] == ["x"]
    assert found(vector_index, flt=IndexFilter(tools=("get_weather",))) == ["x"]
    assert vector_index.count("t1") == 1


def test_lexical_search_forgets_deleted_and_replaced_text(vector_index):
    vector_index.upsert("t1", [entry("a", text="alpha beta"), entry("b", text="gamma")])
    vector_index.upsert("t1", [entry("a", text="delta")])
    vector_index.delete("t1", ["b"])
    assert vector_index.lexical_search("t1", "alpha gamma", ANYONE, 10) == []
    assert [i for i, _ in vector_index.lexical_search("t1", "delta", ANYONE, 10)] == ["a"]


def test_similarities_score_listed_entries_and_skip_unknown_ones(vector_index):
    vector_index.upsert("t1", [entry("same", vec(2)), entry("diag", vec(1, 1))])
    sims = vector_index.similarities("t1", Q, ["same", "diag", "missing"])
    assert sims == pytest.approx({"same": 1.0, "diag": 1 / math.sqrt(2)}, abs=1e-5)
    assert vector_index.similarities("t2", Q, ["same"]) == {}


def test_a_reopened_index_keeps_texts_and_task_types(durable_backend):
    first = durable_backend.index()
    first.upsert("t1", [entry("a", text="rotate the api key", task_type="operation"), entry("b", text="api docs")])
    again = durable_backend.reopen().index()
    before, after = first.lexical_search("t1", "rotate key", ANYONE, 5), again.lexical_search("t1", "rotate key", ANYONE, 5)
    assert [i for i, _ in after] == [i for i, _ in before] == ["a"]
    assert [s for _, s in after] == pytest.approx([s for _, s in before])
    assert found(again, flt=IndexFilter(task_type="query")) == ["b"]


def test_a_reopened_index_keeps_intents(durable_backend):
    durable_backend.index().upsert("t1", [entry("a", text="api key", intent="rotate keys"), entry("b", text="api key")])
    again = durable_backend.reopen().index()
    assert found(again, flt=IndexFilter(intent="read docs")) == ["b"]
    assert sorted(i for i, _ in again.lexical_search("t1", "api key", IndexFilter(intent="Rotate Keys"), 5)) == ["a", "b"]


# --- hybrid search ------------------------------------------------------------------------------


@pytest.fixture
def mixed(vector_index):
    """Texts and vectors that rank differently, ties on both sides, scopes, tools, task types,
    intents, an entry without a direction, and another tenant holding the same words."""
    vector_index.upsert("t1", [
        entry("near-quiet", vec(1, 0.1), text="unrelated billing export"),
        entry("tie-a", vec(1, 1), text="kubectl rollout namespace"),
        entry("tie-b", vec(1, 1), text="kubectl rollout namespace"),
        entry("far-loud", vec(-1, 2), text="kubectl rollout NotFound namespace"),
        entry("opposite-loud", vec(-1), text="NotFound NotFound kubectl"),
        entry("no-direction", vec(), text="kubectl rollout NotFound"),
        entry("agent-a1", vec(1, 0.5), text="kubectl NotFound", agent_id="a1"),
        entry("git-only", vec(0.5, 1), text="rollout git", tools=("git",)),
        entry("query-type", vec(1, 0.3), text="namespace rollout", task_type="query"),
        entry("book-intent", vec(0.2, 1), text="kubectl namespace", intent="book a flight"),
    ])
    vector_index.upsert("t2", [entry("other-tenant", vec(1), text="kubectl rollout NotFound namespace")])
    return vector_index


HYBRID_CASES = {
    "everything": (vec(1.0), "kubectl rollout NotFound namespace", ANYONE, 50),
    "k below the candidates": (vec(1.0), "kubectl rollout NotFound namespace", ANYONE, 2),
    "k of one": (vec(1.0, 0.1), "NotFound", ANYONE, 1),
    "k of zero": (vec(1.0), "kubectl", ANYONE, 0),
    "ties at the cut": (vec(1.0, 1.0), "kubectl rollout namespace", ANYONE, 2),
    "no lexical hit": (vec(1.0), "terraform apply", ANYONE, 3),
    "a text without terms": (vec(1.0), "the and of", ANYONE, 3),
    "an empty text": (vec(1.0), "", ANYONE, 3),
    "a zero vector": (vec(), "kubectl rollout NotFound", ANYONE, 50),
    "a zero vector, k below": (vec(), "kubectl rollout NotFound", ANYONE, 2),
    "scope": (vec(1.0), "kubectl NotFound", IndexFilter(agent_id="a1"), 3),
    "tools": (vec(1.0), "rollout git", IndexFilter(tools=("docker",)), 50),
    "task type": (vec(1.0), "namespace rollout", IndexFilter(task_type="operation"), 50),
    "intent": (vec(1.0), "kubectl namespace", IndexFilter(intent="Book a flight"), 2),
    "everything filtered": (vec(1.0), "kubectl rollout", IndexFilter(agent_id="a1", user_id="u1", tools=("git",),
                                                                    task_type="query", intent="book a flight"), 50),
}


@pytest.mark.parametrize("case", list(HYBRID_CASES))
def test_hybrid_search_answers_what_its_three_parts_answer(mixed, case):
    vector, text, flt, k = HYBRID_CASES[case]
    semantic, lexical = mixed.hybrid_search("t1", vector, text, flt, k)
    want_semantic, want_lexical = hybrid_by_parts(mixed, "t1", vector, text, flt, k)
    assert semantic == want_semantic
    assert lexical == want_lexical
    assert all(isinstance(s, float) for s in [*semantic.values(), *lexical.values()])


def test_hybrid_search_gives_lexical_hits_outside_the_k_nn_their_cosine(vector_index):
    vector_index.upsert("t1", [entry("near", vec(1), text="billing export"),
                               entry("diag", vec(1, 1), text="kubectl NotFound"),
                               entry("far", vec(0, 1), text="kubectl")])
    vector_index.upsert("t2", [entry("theirs", vec(1), text="kubectl NotFound")])
    semantic, lexical = vector_index.hybrid_search("t1", Q, "kubectl NotFound", ANYONE, 1)
    assert semantic == pytest.approx({"near": 1.0, "diag": 1 / math.sqrt(2)}, abs=1e-5)
    assert list(lexical) == ["diag"] and lexical["diag"] > 0
    semantic, lexical = vector_index.hybrid_search("t1", Q, "kubectl NotFound", ANYONE, 3)
    assert semantic == pytest.approx({"near": 1.0, "diag": 1 / math.sqrt(2), "far": 0.0}, abs=1e-5)
    assert list(lexical) == ["diag", "far"]
    assert vector_index.hybrid_search("t3", Q, "kubectl", ANYONE, 3) == ({}, {})
