"""Contract of ``ports.ExperienceStore``: the source of truth for every experience."""
from __future__ import annotations

import base64
import json
from dataclasses import replace
from datetime import timedelta

import pytest

from chalicelib.domain.call_rule import Argument, ArgumentKind, CallRule, RuleKind
from chalicelib.domain.errors import InvalidInput, NotFound
from chalicelib.domain.models import Candidate, Experience, ExperienceStatus, Source

from .conftest import T0

ACTIVE, ARCHIVED, FORGOTTEN = ExperienceStatus.ACTIVE, ExperienceStatus.ARCHIVED, ExperienceStatus.FORGOTTEN


def exp(experience_id: str, tenant_id: str = "t1", minute: int = 0, **kw) -> Experience:
    created = T0 + timedelta(minutes=minute)
    fields = dict(
        tenant_id=tenant_id,
        experience_id=experience_id,
        situation=f"situation of {experience_id}",
        action="ran the migration",
        result="it failed",
        lesson="take a backup first",
        advice="back up before migrating",
        created_at=created,
        updated_at=created,
        renewed_at=created,
    )
    fields.update(kw)
    return Experience(**fields)


def ids(items: list[Experience]) -> list[str]:
    return [e.experience_id for e in items]


def all_pages(store, tenant_id: str, limit: int, **filters) -> tuple[list[str], int]:
    """Every id the listing yields, following cursors; and how many pages it took."""
    seen, cursor, pages = [], None, 0
    while True:
        page = store.list(tenant_id, limit=limit, cursor=cursor, **filters)
        pages += 1
        assert len(page.items) <= limit
        seen += ids(page.items)
        if page.cursor is None:
            return seen, pages
        assert pages < 100, "the cursor never ends"
        cursor = page.cursor


def all_active(store, limit: int) -> list[tuple[str, str]]:
    seen, cursor = [], None
    for _ in range(100):
        page = store.scan_active(limit=limit, cursor=cursor)
        assert len(page.items) <= limit
        seen += [(e.tenant_id, e.experience_id) for e in page.items]
        if page.cursor is None:
            return seen
        cursor = page.cursor
    raise AssertionError("the cursor never ends")


# --- put / get / get_many -----------------------------------------------------------------------


def test_a_stored_experience_reads_back_equal(experience_store):
    full = exp(
        "x1",
        tags=["db", "migration"],
        task_type="ops",
        tools=["psql"],
        agent_id="a1",
        user_id="u1",
        source=Source.HUMAN,
        sources=["tr1", "tr2"],
        confidence=0.75,
        freshness=0.5,
        utility=0.625,
        status=ARCHIVED,
        version=3,
        support=2,
        fingerprint="fp-1",
        polarity="negative",
        status_reason="decayed",
        updated_at=T0 + timedelta(days=1, microseconds=7),
        served=7,
        adopted=4,
        adopted_successes=3,
        ignored_successes=1,
        credited=["tr7", "tr8"],
        history=[{"at": T0.isoformat(), "event": "restored", "from": "archived", "reason": "decayed", "utility": 0.1}],
    )
    experience_store.put(full)
    assert experience_store.get("t1", "x1") == full


ARGUMENTS = CallRule(RuleKind.ARGUMENTS, "charge", (
    Argument(ArgumentKind.VALUE_SHAPE, "amount", "a whole number", "1999", "a decimal number", "19.99"),
    Argument(ArgumentKind.VALUE, "currency", "a 3-letter uppercase code", "`EUR`"),
    Argument(ArgumentKind.FORBIDDEN, "legacy_mode"),
    Argument(ArgumentKind.STRUCTURE, "customer", keys=("email", "id")),
    Argument(ArgumentKind.KEYS, "metadata", keys=("order",)),
    Argument(ArgumentKind.NAMED, "query", words="in `query`, add `LIMIT 20` at the end"),
    Argument(ArgumentKind.MISSING, "idempotency_key"),
))
RULES = {
    "arguments": ARGUMENTS,
    "call_first": CallRule(RuleKind.CALL_FIRST, "search_flights", (Argument(ArgumentKind.MISSING, "iata"),),
                           other_tool="lookup_airport",
                           first_arguments=(Argument(ArgumentKind.VALUE_SHAPE, "city", "a value like `Paris`"),)),
    "use_instead": CallRule(RuleKind.USE_INSTEAD, "refund_item", other_tool="void_item"),
    "do_not_retry": CallRule(RuleKind.DO_NOT_RETRY, "sync_calendar"),
    "objected": CallRule(RuleKind.OBJECTED, "send_email"),
}


@pytest.mark.parametrize("kind", list(RULES))
def test_a_lessons_call_rule_reads_back_equal_from_every_read(experience_store, kind):
    lesson = exp("x1", rule=RULES[kind], fingerprint="fp", situation_key="sk", tools=[RULES[kind].tool])
    experience_store.put(lesson)
    reads = [
        experience_store.get("t1", "x1"),
        experience_store.get_many("t1", ["x1"])["x1"],
        *experience_store.list("t1").items,
        experience_store.find_active_by_fingerprint("t1", "fp", None, None),
        *experience_store.find_active_by_situation("t1", "sk", None, None),
        *experience_store.scan_active().items,
    ]
    assert [r.rule for r in reads] == [RULES[kind]] * 6
    assert reads[0] == lesson


def test_a_lesson_without_a_rule_reads_back_without_one_whatever_its_words_say(experience_store):
    """Its words read as a rule ("Do not retry..."), but none was stored: none is read back."""
    experience_store.put(exp("x1", advice="Do not retry `sync_calendar` with the same parameters.", tools=["sync_calendar"]))
    assert experience_store.get("t1", "x1").rule is None


def test_put_of_an_existing_id_replaces_it(experience_store):
    experience_store.put(exp("x1", fingerprint="fp"))
    experience_store.put(exp("x1", lesson="a better lesson", version=2, status=FORGOTTEN, fingerprint="fp"))
    got = experience_store.get("t1", "x1")
    assert (got.lesson, got.version, got.status) == ("a better lesson", 2, FORGOTTEN)
    assert ids(experience_store.list("t1").items) == ["x1"]
    assert experience_store.find_active_by_fingerprint("t1", "fp", None, None) is None


def test_put_all_stores_every_one_and_replaces_existing_ones(experience_store):
    experience_store.put(exp("x1", lesson="old"))
    experience_store.put_all([exp("x1", lesson="new", status=ARCHIVED, superseded_by="x2", version=2), exp("x2", supersedes="x1")])
    got = experience_store.get_many("t1", ["x1", "x2"])
    assert (got["x1"].lesson, got["x1"].status, got["x1"].superseded_by) == ("new", ARCHIVED, "x2")
    assert got["x2"].supersedes == "x1"


def test_put_all_stores_none_when_one_cannot_be_stored(experience_store):
    experience_store.put(exp("x1", lesson="old"))
    broken = replace(exp("x3"), status="not a status")  # fails as it is written
    with pytest.raises(Exception):
        experience_store.put_all([exp("x1", lesson="new", version=2), exp("x2"), broken])
    assert experience_store.get("t1", "x1").lesson == "old"
    assert set(experience_store.get_many("t1", ["x1", "x2", "x3"])) == {"x1"}


def test_getting_an_unknown_experience_raises_not_found(experience_store):
    with pytest.raises(NotFound):
        experience_store.get("t1", "nope")


def test_getting_another_tenants_experience_raises_not_found(experience_store):
    experience_store.put(exp("x1", tenant_id="t1"))
    with pytest.raises(NotFound):
        experience_store.get("t2", "x1")


def test_the_same_id_in_two_tenants_is_two_experiences(experience_store):
    experience_store.put(exp("x1", tenant_id="t1", lesson="one"))
    experience_store.put(exp("x1", tenant_id="t2", lesson="two"))
    assert experience_store.get("t1", "x1").lesson == "one"
    assert experience_store.get("t2", "x1").lesson == "two"


def test_get_many_returns_the_ones_that_exist_in_the_tenant(experience_store):
    experience_store.put(exp("x1", tenant_id="t1"))
    experience_store.put(exp("x2", tenant_id="t1"))
    experience_store.put(exp("x3", tenant_id="t2"))
    got = experience_store.get_many("t1", ["x1", "x3", "missing", "x2", "x1"])
    assert set(got) == {"x1", "x2"}
    assert got["x1"] == exp("x1", tenant_id="t1")


def test_get_many_of_no_ids_is_empty(experience_store):
    experience_store.put(exp("x1"))
    assert experience_store.get_many("t1", []) == {}


def test_get_many_includes_experiences_that_are_not_active(experience_store):
    experience_store.put(exp("x1", status=ARCHIVED))
    experience_store.put(exp("x2", status=FORGOTTEN))
    assert set(experience_store.get_many("t1", ["x1", "x2"])) == {"x1", "x2"}


def test_recall_candidates_hold_what_recall_ranks_by_of_the_ones_that_exist_in_the_tenant(experience_store):
    rich = exp("x1", tags=["db"], task_type="ops", tools=["psql", "pg_dump"], intent="back up", anchors=["main"],
               agent_id="a1", user_id="u1", confidence=0.75, freshness=0.5, utility=0.625, status=ARCHIVED,
               fingerprint="fp-1", advice="dump \u00e9 before \"migrating\"", renewed_at=T0 + timedelta(microseconds=7),
               examples=["an example"], history=[{"event": "restored"}])
    plain = exp("x2")
    for e in (rich, plain, exp("x1", tenant_id="t2", advice="another tenant's")):
        experience_store.put(e)
    got = experience_store.recall_candidates("t1", ["x1", "missing", "x2", "x1"])
    assert set(got) == {"x1", "x2"}
    for e in (rich, plain):
        candidate = got[e.experience_id]
        assert candidate.whole in (None, e)  # the whole lesson only when the store read it anyway
        candidate.whole = None
        assert candidate == Candidate.of(e, keep_whole=False)
    assert experience_store.recall_candidates("t2", ["x1"])["x1"].advice == "another tenant's"
    assert experience_store.recall_candidates("t1", []) == {}


# --- list ---------------------------------------------------------------------------------------


def test_list_is_newest_first(experience_store):
    for i, minute in enumerate([3, 1, 4, 0, 2]):
        experience_store.put(exp(f"x{i}", minute=minute))
    assert ids(experience_store.list("t1").items) == ["x2", "x0", "x4", "x1", "x3"]


def test_list_breaks_ties_of_created_at_by_id_descending(experience_store):
    for i in [2, 0, 1]:
        experience_store.put(exp(f"x{i}", minute=5))
    experience_store.put(exp("y", minute=6))
    assert ids(experience_store.list("t1").items) == ["y", "x2", "x1", "x0"]


@pytest.mark.parametrize("limit", [1, 2, 3, 7, 8])
def test_paging_with_distinct_created_at_yields_every_experience_once_in_order(experience_store, limit):
    for i in range(7):
        experience_store.put(exp(f"x{i}", minute=(i * 5) % 7))  # created out of id order
    expected = ids(experience_store.list("t1", limit=100).items)
    assert len(expected) == 7
    seen, pages = all_pages(experience_store, "t1", limit)
    assert seen == expected
    assert pages == -(-7 // limit)


@pytest.mark.parametrize("limit", [1, 2, 3, 7])
def test_paging_with_equal_created_at_yields_every_experience_once_in_order(experience_store, limit):
    for i in [4, 1, 6, 0, 3, 5, 2]:
        experience_store.put(exp(f"x{i}", minute=0))
    seen, _ = all_pages(experience_store, "t1", limit)
    assert seen == [f"x{i}" for i in range(6, -1, -1)]


def test_paging_with_mixed_created_at_yields_every_experience_once_in_order(experience_store):
    minutes = {"a": 1, "b": 1, "c": 2, "d": 1, "e": 0, "f": 2, "g": 0}
    for experience_id, minute in minutes.items():
        experience_store.put(exp(experience_id, minute=minute))
    seen, _ = all_pages(experience_store, "t1", 2)
    assert seen == ["f", "c", "d", "b", "a", "g", "e"]


def test_created_at_one_microsecond_apart_still_orders(experience_store):
    experience_store.put(exp("older-but-bigger-id", created_at=T0 + timedelta(microseconds=1)))
    experience_store.put(exp("newer", created_at=T0 + timedelta(microseconds=2)))
    seen, _ = all_pages(experience_store, "t1", 1)
    assert seen == ["newer", "older-but-bigger-id"]


def test_the_last_page_has_no_cursor_even_when_full(experience_store):
    for i in range(4):
        experience_store.put(exp(f"x{i}", minute=i))
    first = experience_store.list("t1", limit=2)
    assert first.cursor is not None
    second = experience_store.list("t1", limit=2, cursor=first.cursor)
    assert ids(second.items) == ["x1", "x0"]
    assert second.cursor is None


def test_an_empty_tenant_lists_nothing(experience_store):
    experience_store.put(exp("x1", tenant_id="t1"))
    page = experience_store.list("t2")
    assert page.items == [] and page.cursor is None


def test_list_filters_by_agent(experience_store):
    experience_store.put(exp("x1", agent_id="a1", minute=1))
    experience_store.put(exp("x2", agent_id="a2", minute=2))
    experience_store.put(exp("x3", agent_id=None, minute=3))
    experience_store.put(exp("x4", agent_id="a1", minute=4))
    assert ids(experience_store.list("t1", agent_id="a1").items) == ["x4", "x1"]
    assert ids(experience_store.list("t1").items) == ["x4", "x3", "x2", "x1"]


def test_list_filters_by_status(experience_store):
    experience_store.put(exp("x1", status=ACTIVE, minute=1))
    experience_store.put(exp("x2", status=ARCHIVED, minute=2))
    experience_store.put(exp("x3", status=FORGOTTEN, minute=3))
    experience_store.put(exp("x4", status=ACTIVE, minute=4))
    assert ids(experience_store.list("t1", status=ACTIVE).items) == ["x4", "x1"]
    assert ids(experience_store.list("t1", status=ARCHIVED).items) == ["x2"]
    assert ids(experience_store.list("t1", status=FORGOTTEN).items) == ["x3"]


def test_filtered_paging_yields_every_match_once(experience_store):
    for i in range(9):
        experience_store.put(
            exp(f"x{i}", minute=i % 3, agent_id="a1" if i % 2 else "a2", status=ACTIVE if i % 3 else ARCHIVED)
        )
    expected = [
        e.experience_id
        for e in experience_store.list("t1", limit=100).items
        if e.agent_id == "a1" and e.status is ACTIVE
    ]
    seen, _ = all_pages(experience_store, "t1", 1, agent_id="a1", status=ACTIVE)
    assert seen == expected and len(expected) == 3


def test_list_never_shows_another_tenants_experiences(experience_store):
    experience_store.put(exp("x1", tenant_id="t1"))
    experience_store.put(exp("x2", tenant_id="t2"))
    assert ids(experience_store.list("t1").items) == ["x1"]


def test_a_put_that_changes_status_moves_the_experience_between_filters(experience_store):
    experience_store.put(exp("x1"))
    experience_store.put(exp("x1", status=ARCHIVED))
    assert experience_store.list("t1", status=ACTIVE).items == []
    assert ids(experience_store.list("t1", status=ARCHIVED).items) == ["x1"]


def test_an_archived_experience_put_back_active_is_found_again_everywhere(experience_store):
    """Restore: every lookup of active experiences (the sparse indexes of DynamoDB) sees it again."""
    active = exp("x1", fingerprint="fp", situation_key="sk", agent_id="a1")
    experience_store.put(replace(active, status=ARCHIVED, status_reason="decayed"))
    assert experience_store.find_active_by_fingerprint("t1", "fp", "a1", None) is None
    assert experience_store.find_active_by_situation("t1", "sk", "a1", None) == []
    assert all_active(experience_store, 10) == []
    restored = replace(active, version=2, status_reason="restored", history=[{"event": "restored", "from": "archived"}])
    experience_store.put(restored)
    assert experience_store.find_active_by_fingerprint("t1", "fp", "a1", None) == restored
    assert experience_store.find_active_by_situation("t1", "sk", "a1", None) == [restored]
    assert all_active(experience_store, 10) == [("t1", "x1")]
    assert ids(experience_store.list("t1", status=ACTIVE).items) == ["x1"]
    assert experience_store.list("t1", status=ARCHIVED).items == []
    assert experience_store.count_by_status("t1") == {"active": 1}


def _b64(obj) -> str:
    return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")


@pytest.mark.parametrize(
    "cursor", ["not a cursor", "!!!!", "eyJh", _b64({"a": 1}), _b64([1]), _b64(["x", "y"]), _b64([None, None])]
)
def test_list_with_an_invalid_cursor_raises_invalid_input(experience_store, cursor):
    experience_store.put(exp("x1"))
    with pytest.raises(InvalidInput):
        experience_store.list("t1", cursor=cursor)



def _b64_text(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


# Forged cursors that decode to JSON no store can bind: each shape of cursor a store issues (SQLite's
# [created_us, id] and [tenant, id], DynamoDB's key), holding an integer beyond 64 bits, a lone
# surrogate (no UTF-8 encodes it) or a float of no number.
FORGED_CURSORS = {
    "int 2^63": _b64([2**63, "x1"]),
    "int of 100 digits": _b64([10**100, "x1"]),
    "negative int of 100 digits": _b64([-(10**100), "x1"]),
    "high surrogate in the id": _b64([1, "\ud800"]),
    "low surrogate in the id": _b64([1, "\udc00"]),
    "surrogate in the tenant": _b64(["\ud800", "x1"]),
    "surrogate in a scan's id": _b64(["t1", "x\udfff"]),
    "surrogate in a key's sort key": _b64({"tenant_id": "t1", "created_sk": "\ud800", "experience_id": "x1"}),
    "surrogate in a key's id": _b64({"tenant_id": "t1", "created_sk": "0001#x1", "experience_id": "\udbff"}),
    "infinity": _b64_text('[1e999,"x1"]'),
}


@pytest.mark.parametrize("cursor", list(FORGED_CURSORS.values()), ids=list(FORGED_CURSORS))
def test_a_forged_cursor_of_unbindable_values_raises_invalid_input(experience_store, cursor):
    experience_store.put(exp("x1"))
    experience_store.put(exp("x2", minute=1))
    for listing in (
        lambda: experience_store.list("t1", cursor=cursor),
        lambda: experience_store.list("t1", status=ACTIVE, cursor=cursor),
        lambda: experience_store.list("t1", agent_id="a1", cursor=cursor),
        lambda: experience_store.scan_active(cursor=cursor),
    ):
        with pytest.raises(InvalidInput):
            listing()

# --- find_active_by_fingerprint -----------------------------------------------------------------


def test_find_by_fingerprint_matches_the_exact_scope(experience_store):
    experience_store.put(exp("agent-only", fingerprint="fp", agent_id="a1", user_id=None))
    experience_store.put(exp("agent-user", fingerprint="fp", agent_id="a1", user_id="u1"))
    experience_store.put(exp("shared", fingerprint="fp", agent_id=None, user_id=None))
    find = experience_store.find_active_by_fingerprint
    assert find("t1", "fp", "a1", None).experience_id == "agent-only"
    assert find("t1", "fp", "a1", "u1").experience_id == "agent-user"
    assert find("t1", "fp", None, None).experience_id == "shared"


def test_a_none_scope_is_not_a_wildcard(experience_store):
    experience_store.put(exp("x1", fingerprint="fp", agent_id="a1", user_id="u1"))
    find = experience_store.find_active_by_fingerprint
    assert find("t1", "fp", None, None) is None
    assert find("t1", "fp", "a1", None) is None
    assert find("t1", "fp", None, "u1") is None
    assert find("t1", "fp", "a2", "u1") is None
    assert find("t1", "fp", "a1", "u1").experience_id == "x1"


def test_a_shared_experience_is_not_found_for_a_narrower_scope(experience_store):
    experience_store.put(exp("x1", fingerprint="fp", agent_id=None, user_id=None))
    assert experience_store.find_active_by_fingerprint("t1", "fp", "a1", None) is None
    assert experience_store.find_active_by_fingerprint("t1", "fp", None, "u1") is None


def test_find_by_fingerprint_ignores_experiences_that_are_not_active(experience_store):
    experience_store.put(exp("x1", fingerprint="fp", status=ARCHIVED))
    experience_store.put(exp("x2", fingerprint="fp", status=FORGOTTEN))
    assert experience_store.find_active_by_fingerprint("t1", "fp", None, None) is None
    experience_store.put(exp("x3", fingerprint="fp"))
    assert experience_store.find_active_by_fingerprint("t1", "fp", None, None).experience_id == "x3"


def test_find_by_fingerprint_stays_in_the_tenant_and_the_fingerprint(experience_store):
    experience_store.put(exp("x1", tenant_id="t1", fingerprint="fp"))
    assert experience_store.find_active_by_fingerprint("t2", "fp", None, None) is None
    assert experience_store.find_active_by_fingerprint("t1", "other", None, None) is None


# --- scan_active --------------------------------------------------------------------------------


def test_scan_active_walks_every_tenant_in_tenant_then_id_order(experience_store):
    experience_store.put(exp("b", tenant_id="t2"))
    experience_store.put(exp("z", tenant_id="t1", minute=9))
    experience_store.put(exp("a", tenant_id="t2"))
    experience_store.put(exp("m", tenant_id="t1"))
    experience_store.put(exp("old", tenant_id="t1", status=ARCHIVED))
    experience_store.put(exp("gone", tenant_id="t3", status=FORGOTTEN))
    page = experience_store.scan_active()
    assert [(e.tenant_id, e.experience_id) for e in page.items] == [("t1", "m"), ("t1", "z"), ("t2", "a"), ("t2", "b")]
    assert page.cursor is None


@pytest.mark.parametrize("limit", [1, 2, 3, 5, 6])
def test_scan_active_pages_cover_every_active_experience_once(experience_store, limit):
    expected = []
    for tenant_id in ["t3", "t1", "t2"]:
        for i in range(2):
            experience_store.put(exp(f"x{i}", tenant_id=tenant_id))
            expected.append((tenant_id, f"x{i}"))
        experience_store.put(exp("archived", tenant_id=tenant_id, status=ARCHIVED))
    assert all_active(experience_store, limit) == sorted(expected)


def test_a_scan_page_shorter_than_the_limit_has_no_cursor(experience_store):
    for i in range(3):
        experience_store.put(exp(f"x{i}"))
    first = experience_store.scan_active(limit=2)
    assert first.cursor is not None
    last = experience_store.scan_active(limit=2, cursor=first.cursor)
    assert ids(last.items) == ["x2"]
    assert last.cursor is None


def test_scan_active_resumes_from_a_cursor_after_writes(experience_store):
    for i in range(4):
        experience_store.put(exp(f"x{i}"))
    first = experience_store.scan_active(limit=2)
    assert ids(first.items) == ["x0", "x1"]
    # maintenance archives what it has seen and a new experience arrives before it resumes
    experience_store.put(exp("x0", status=ARCHIVED))
    experience_store.put(exp("x5"))
    rest = []
    cursor = first.cursor
    while cursor is not None:
        page = experience_store.scan_active(limit=2, cursor=cursor)
        rest += ids(page.items)
        cursor = page.cursor
    assert rest == ["x2", "x3", "x5"]


def test_scan_active_of_an_empty_store_is_one_empty_page(experience_store):
    page = experience_store.scan_active()
    assert page.items == [] and page.cursor is None


def test_scan_active_with_an_invalid_cursor_raises_invalid_input(experience_store):
    with pytest.raises(InvalidInput):
        experience_store.scan_active(cursor="not a cursor")


def test_counts_by_status_are_per_tenant(experience_store):
    experience_store.put(exp("a"))
    experience_store.put(exp("b", status=ExperienceStatus.ARCHIVED))
    experience_store.put(exp("c", status=ExperienceStatus.ARCHIVED))
    experience_store.put(exp("d", tenant_id="t2"))
    assert experience_store.count_by_status("t1") == {"active": 1, "archived": 2}
    assert experience_store.count_by_status("t3") == {}


def test_find_by_situation_returns_every_active_lesson_of_that_situation_in_exactly_that_scope(experience_store):
    experience_store.put(exp("a", situation_key="s1", agent_id="ag", minute=1))
    experience_store.put(exp("b", situation_key="s1", agent_id="ag", minute=2, fingerprint="other"))
    experience_store.put(exp("c", situation_key="s1", agent_id="ag", status=ARCHIVED))
    experience_store.put(exp("d", situation_key="s1", agent_id=None))
    experience_store.put(exp("e", situation_key="s2", agent_id="ag"))
    experience_store.put(exp("f", situation_key="s1", agent_id="ag", tenant_id="t2"))
    assert ids(experience_store.find_active_by_situation("t1", "s1", "ag", None)) == ["a", "b"]
    assert ids(experience_store.find_active_by_situation("t1", "s1", None, None)) == ["d"]
    assert experience_store.find_active_by_situation("t1", "s9", "ag", None) == []


def test_an_existing_database_without_the_situation_column_is_migrated(tmp_path):
    import sqlite3

    from chalicelib.adapters.embedded.db import SqliteDatabase
    from chalicelib.adapters.embedded.stores import SqliteExperienceStore

    path = tmp_path / "old.db"
    old = sqlite3.connect(path)
    old.execute(
        "CREATE TABLE experiences (tenant_id TEXT NOT NULL, experience_id TEXT NOT NULL, agent_id TEXT, user_id TEXT,"
        " status TEXT NOT NULL, fingerprint TEXT, created_us INTEGER NOT NULL, doc TEXT NOT NULL,"
        " PRIMARY KEY (tenant_id, experience_id))"
    )
    old.commit()
    old.close()
    store = SqliteExperienceStore(SqliteDatabase(str(path)))
    store.put(exp("a", situation_key="s1"))
    assert ids(store.find_active_by_situation("t1", "s1", None, None)) == ["a"]


# --- archive_if_unchanged -----------------------------------------------------------------------


def _archived(e: Experience) -> Experience:
    return replace(e, status=ARCHIVED, status_reason="decayed", updated_at=e.updated_at + timedelta(days=1))


def test_archive_if_unchanged_archives_the_lesson_as_read_and_takes_it_out_of_the_active_views(experience_store):
    experience_store.put(exp("x1", fingerprint="fp", situation_key="sk", tags=["db"], utility=0.25))
    read = experience_store.get("t1", "x1")
    assert experience_store.archive_if_unchanged(read, _archived(read)) is True
    got = experience_store.get("t1", "x1")
    assert (got.status, got.status_reason) == (ARCHIVED, "decayed")
    assert all_active(experience_store, 10) == []
    assert experience_store.find_active_by_fingerprint("t1", "fp", None, None) is None
    assert experience_store.find_active_by_situation("t1", "sk", None, None) == []
    assert ids(experience_store.list("t1", status=ARCHIVED).items) == ["x1"]


def test_archive_if_unchanged_a_lesson_read_from_a_page_of_the_scan(experience_store):
    """Decay archives what the maintenance scan read: the page's copy is the stored lesson."""
    experience_store.put(exp("x1", tools=["psql"], examples=["migrate <db>"], literals={"ab": "<db>"}, confidence=0.7))
    (read,) = experience_store.scan_active().items
    assert experience_store.archive_if_unchanged(read, _archived(read)) is True
    assert experience_store.get("t1", "x1").status is ARCHIVED


def test_archive_if_unchanged_writes_nothing_over_a_lesson_changed_since_it_was_read(experience_store):
    experience_store.put(exp("x1"))
    read = experience_store.get("t1", "x1")
    renewed = replace(read, utility=0.9, renewed_at=read.renewed_at + timedelta(days=3))  # feedback since
    experience_store.put(renewed)
    assert experience_store.archive_if_unchanged(read, _archived(read)) is False
    assert experience_store.get("t1", "x1") == renewed


def test_archive_if_unchanged_leaves_a_forgotten_lesson_forgotten(experience_store):
    experience_store.put(exp("x1"))
    read = experience_store.get("t1", "x1")
    experience_store.put(replace(read, status=FORGOTTEN, status_reason="wrong"))
    assert experience_store.archive_if_unchanged(read, _archived(read)) is False
    got = experience_store.get("t1", "x1")
    assert (got.status, got.status_reason) == (FORGOTTEN, "wrong")


def test_archive_if_unchanged_of_a_lesson_that_is_gone_or_of_another_tenant_writes_nothing(experience_store):
    ghost = exp("x1")
    assert experience_store.archive_if_unchanged(ghost, _archived(ghost)) is False
    assert all_active(experience_store, 10) == []
    with pytest.raises(NotFound):
        experience_store.get("t1", "x1")
    experience_store.put(exp("x1", tenant_id="t2"))
    assert experience_store.archive_if_unchanged(ghost, _archived(ghost)) is False
    assert experience_store.get("t2", "x1").status is ACTIVE


def test_archive_if_unchanged_refuses_an_active_or_another_lesson(experience_store):
    experience_store.put(exp("x1"))
    read = experience_store.get("t1", "x1")
    with pytest.raises(ValueError):
        experience_store.archive_if_unchanged(read, read)
    with pytest.raises(ValueError):
        experience_store.archive_if_unchanged(read, _archived(exp("x2")))
# --- conditional writes: compare-and-set on the revision read ------------------------------------


def test_put_if_writes_a_new_lesson_and_each_write_moves_its_revision(experience_store):
    first = experience_store.put_if(exp("x1"))
    assert first is not None and first.revision == 1
    assert experience_store.get("t1", "x1").revision == 1
    second = experience_store.put_if(replace(experience_store.get("t1", "x1"), lesson="better"))
    assert second is not None and second.revision == 2
    got = experience_store.get("t1", "x1")
    assert (got.lesson, got.revision) == ("better", 2)


def test_put_if_from_a_copy_read_before_another_write_writes_nothing(experience_store):
    experience_store.put_if(exp("x1"))
    read = experience_store.get("t1", "x1")
    assert experience_store.put_if(replace(read, status=FORGOTTEN, status_reason="wrong")) is not None
    assert experience_store.put_if(replace(read, utility=0.9)) is None  # the copy read before the forget
    got = experience_store.get("t1", "x1")
    assert (got.status, got.utility, got.revision) == (FORGOTTEN, 0.5, 2)
    assert experience_store.put_if(exp("x1")) is None  # "new" while one is stored


def test_put_if_takes_a_lesson_stored_before_revisions_as_revision_0(experience_store):
    experience_store.put(exp("x1"))  # a plain put keeps the revision it is given: 0
    read = experience_store.get("t1", "x1")
    assert read.revision == 0
    assert experience_store.put_if(replace(read, lesson="changed")) is not None
    assert experience_store.put_if(replace(read, lesson="stale")) is None


def test_put_all_if_writes_all_or_none(experience_store):
    experience_store.put_if(exp("x1", lesson="old"))
    read = experience_store.get("t1", "x1")
    written = experience_store.put_all_if([replace(read, status=ARCHIVED, superseded_by="x2"), exp("x2", supersedes="x1")])
    assert written is not None and [e.revision for e in written] == [2, 1]
    stale = experience_store.put_all_if([replace(read, lesson="stale"), exp("x3")])  # x1 moved since ``read``
    assert stale is None
    assert set(experience_store.get_many("t1", ["x1", "x2", "x3"])) == {"x1", "x2"}
    assert experience_store.get("t1", "x1").status is ARCHIVED


def test_of_writers_racing_from_one_read_exactly_one_wins(experience_store):
    import threading

    experience_store.put_if(exp("x1"))
    for round_ in range(8):
        read = experience_store.get("t1", "x1")
        barrier, wins = threading.Barrier(4), []

        def write(n: int) -> None:
            barrier.wait()
            if experience_store.put_if(replace(read, lesson=f"writer {n} round {round_}")) is not None:
                wins.append(n)

        threads = [threading.Thread(target=write, args=(n,)) for n in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        assert len(wins) == 1, f"round {round_}: {len(wins)} writers won from one read"
        assert experience_store.get("t1", "x1").lesson == f"writer {wins[0]} round {round_}"


def test_a_tombstone_is_found_by_its_fingerprint_in_exactly_its_scope(experience_store):
    experience_store.put_if(exp("x1", fingerprint="fp", agent_id="a", status=FORGOTTEN, minute=1))
    experience_store.put_if(exp("x2", fingerprint="fp", agent_id="a", minute=2))  # active: not a tombstone
    experience_store.put_if(exp("x3", fingerprint="fp", agent_id="b", status=ARCHIVED, minute=3))
    got = experience_store.find_forgotten_by_fingerprint("t1", "fp", "a", None)
    assert got is not None and got.experience_id == "x1"
    assert experience_store.find_forgotten_by_fingerprint("t1", "fp", "b", None) is None
    assert experience_store.find_forgotten_by_fingerprint("t1", "fp", None, None) is None
    assert experience_store.find_forgotten_by_fingerprint("t2", "fp", "a", None) is None
    assert experience_store.find_active_by_fingerprint("t1", "fp", "a", None).experience_id == "x2"
