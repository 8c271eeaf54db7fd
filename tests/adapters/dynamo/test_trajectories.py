"""DynamoDB-specific behaviour of the trajectory store: item limits, transaction limits, races.

Runs on the session's moto server (devtools/moto_server.py), whose requests are made
atomic one by one as DynamoDB's are, so the races here are the adapter's own.
"""
from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta, timezone

import pytest

pytest.importorskip("pynamodb")
pytest.importorskip("moto")

from chalicelib.adapters.dynamo.items import ORIGINAL_BYTES, TRUNCATED, TRUNCATED_KEYS, size_of  # noqa: E402
from chalicelib.adapters.dynamo.stores import DynamoTrajectoryStore  # noqa: E402
from chalicelib.adapters.dynamo.trajectories import events_pk, seq_sk  # noqa: E402
from chalicelib.domain.errors import Conflict  # noqa: E402
from chalicelib.domain.models import Event, Trajectory, TrajectoryStatus  # noqa: E402
from tests.support.dynamo import dynamo_tables  # noqa: E402

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
DYNAMODB_ITEM_LIMIT = 400 * 1024


@pytest.fixture
def tables():
    t = dynamo_tables()
    t.create("trajectories")
    yield t
    t.delete()


@pytest.fixture
def store(tables) -> DynamoTrajectoryStore:
    return DynamoTrajectoryStore(tables)


def traj(trajectory_id: str = "tr1") -> Trajectory:
    return Trajectory("t1", trajectory_id, "agent-1", "deploy", T0, T0)


def ev(event_id: str, **content) -> Event:
    return Event(event_id, "tool_call", T0, {"tool": "git", "status": "ok", **content})


def stored_item_size(tables, trajectory_id: str, seq: int) -> int:
    raw = tables.events.get(events_pk("t1", trajectory_id), seq_sk(seq), consistent_read=True).serialize()
    return sum(len(name.encode()) + len(str(next(iter(v.values()))).encode()) for name, v in raw.items())


# --- sizes --------------------------------------------------------------------------------------


def test_a_600_kb_event_is_stored_cut_with_a_marker_and_the_append_succeeds(store, tables):
    store.create(traj())
    huge = ev("big", output="x" * 600_000)
    result = store.append_events("t1", "tr1", [ev("before"), huge, ev("after")], T0)
    assert (result.accepted, result.duplicates) == (3, 0)
    before, big, after = store.events("t1", "tr1")
    assert [e.seq for e in (before, big, after)] == [1, 2, 3]
    assert big.content[TRUNCATED] is True
    assert big.content[ORIGINAL_BYTES] == size_of(huge.content) > 600_000
    assert big.content[TRUNCATED_KEYS] == ["output"]
    assert (big.content["tool"], big.content["status"]) == ("git", "ok")  # still a successful git call
    assert big.succeeded and big.tool == "git"
    assert big.content["output"].startswith("xxxx") and 300_000 < len(big.content["output"]) < 600_000
    assert stored_item_size(tables, "tr1", 2) < DYNAMODB_ITEM_LIMIT
    assert after.content == {"tool": "git", "status": "ok"}  # the others are untouched
    assert store.get("t1", "tr1").event_count == 3


def test_a_huge_context_is_cut_too(store):
    store.create(traj())
    event = Event("e1", "llm_reasoning", T0, {"text": "short"}, context={"files": ["y" * 1000] * 500})
    store.append_events("t1", "tr1", [event], T0)
    (got,) = store.events("t1", "tr1")
    assert got.content == {"text": "short"}
    assert got.context[TRUNCATED] is True


def test_a_batch_over_one_transactions_limits_is_stored_whole_and_in_order(store):
    store.create(traj())
    events = [ev(f"e{i:03d}", output="z" * 40_000) for i in range(120)]  # 120 events, ~4.8 MB
    result = store.append_events("t1", "tr1", events, T0)
    assert result.accepted == 120 and list(result.accepted_ids) == [e.event_id for e in events]
    stored = store.events("t1", "tr1")
    assert [e.event_id for e in stored] == [e.event_id for e in events]
    assert [e.seq for e in stored] == list(range(1, 121))
    assert store.get("t1", "tr1").event_count == 120
    again = store.append_events("t1", "tr1", events[50:60] + [ev("new")], T0)  # a retried request
    assert (again.accepted, again.duplicates, again.accepted_ids) == (1, 10, ("new",))


def test_a_huge_review_is_cut_with_a_marker(store):
    store.create(traj())
    store.finalize("t1", "tr1", "success", None, T0)
    saved = store.save_review("t1", "tr1", "reviewed", ["x1"], {"raw": "r" * 500_000, "lessons": 2}, T0)
    assert saved.review["lessons"] == 2 and saved.review[TRUNCATED] is True
    assert store.get("t1", "tr1") == saved


# --- races --------------------------------------------------------------------------------------


def test_concurrent_appends_keep_seqs_unique_and_dense_and_store_each_event_once(store):
    store.create(traj())
    writers, batches = 4, 3

    def write(w: int) -> list[str]:
        accepted: list[str] = []
        for b in range(batches):
            # every writer also sends the same shared event of the round: one of them stores it
            batch = [ev(f"w{w}-b{b}-{i}") for i in range(3)] + [ev(f"shared-{b}")]
            accepted += store.append_events("t1", "tr1", batch, T0 + timedelta(seconds=b)).accepted_ids
        return accepted

    with ThreadPoolExecutor(writers) as pool:
        accepted = [i for ids in pool.map(write, range(writers)) for i in ids]

    expected = {f"w{w}-b{b}-{i}" for w in range(writers) for b in range(batches) for i in range(3)}
    expected |= {f"shared-{b}" for b in range(batches)}
    assert sorted(accepted) == sorted(expected)  # each event accepted by exactly one call
    stored = store.events("t1", "tr1")
    assert [e.seq for e in stored] == list(range(1, len(expected) + 1))
    assert sorted(e.event_id for e in stored) == sorted(expected)
    assert store.get("t1", "tr1").event_count == len(expected)


def test_an_append_racing_a_finalize_is_either_stored_before_it_or_refused(store):
    outcomes = set()
    for round_ in range(8):
        tr = f"tr{round_}"
        store.create(traj(tr))
        store.append_events("t1", tr, [ev("first")], T0)
        start = threading.Barrier(2)
        result: dict[str, object] = {}

        def append() -> None:
            start.wait()
            try:
                result["append"] = store.append_events("t1", tr, [ev("a"), ev("b"), ev("c")], T0)
            except Conflict as exc:
                result["append"] = exc

        def finalize() -> None:
            start.wait()
            result["final"] = store.finalize("t1", tr, "success", None, T0)

        threads = [threading.Thread(target=append), threading.Thread(target=finalize)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

        final = result["final"]
        assert isinstance(final, Trajectory) and final.status is TrajectoryStatus.FINALIZED
        stored = store.events("t1", tr)
        if isinstance(result["append"], Conflict):
            outcomes.add("refused")
            assert [e.event_id for e in stored] == ["first"]
        else:
            outcomes.add("stored")
            assert [e.event_id for e in stored] == ["first", "a", "b", "c"]
        # what finalize returned counts exactly what was stored before it, and nothing came after
        assert final.event_count == len(stored) == store.get("t1", tr).event_count
    assert outcomes  # which side wins is up to the scheduler; both are correct


def test_of_two_racing_finalizes_exactly_one_wins(store):
    store.create(traj())
    start = threading.Barrier(4)

    def finalize(outcome: str) -> object:
        start.wait()
        try:
            return store.finalize("t1", "tr1", outcome, None, T0)
        except Conflict as exc:
            return exc

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(finalize, ["success", "failure", "partial", "success"]))
    winners = [r for r in results if isinstance(r, Trajectory)]
    assert len(winners) == 1 and sum(isinstance(r, Conflict) for r in results) == 3
    assert store.get("t1", "tr1").outcome == winners[0].outcome


def test_concurrent_local_reviews_lose_no_summary(store):
    store.create(traj())

    def review(n: int) -> None:
        store.add_local_review("t1", "tr1", [f"x{n}"], {"n": n}, T0)

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(review, range(8)))
    got = store.get("t1", "tr1")
    assert sorted(s["n"] for s in got.review["local"]) == list(range(8))
    assert sorted(got.experience_ids) == sorted(f"x{n}" for n in range(8))
