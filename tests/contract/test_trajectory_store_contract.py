"""Contract of ``ports.TrajectoryStore``: trajectories, their events, finalize and review."""
from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta

import pytest

from chalicelib.domain.errors import Conflict, InvalidInput, NotFound, TrajectoryFull
from chalicelib.domain.models import Event, Trajectory, TrajectoryStatus

from .conftest import T0


def traj(trajectory_id: str = "tr1", tenant_id: str = "t1", **kw) -> Trajectory:
    fields = dict(
        tenant_id=tenant_id,
        trajectory_id=trajectory_id,
        agent_id="agent-1",
        goal="deploy the service",
        created_at=T0,
        updated_at=T0,
        user_id="user-1",
        task_type="deploy",
        tools=["git", "docker"],
        intent="ship",
        tags=["prod"],
        metadata={"ticket": "OPS-1", "nested": {"n": 1}},
    )
    fields.update(kw)
    return Trajectory(**fields)


def ev(event_id: str, minute: int = 0, **content) -> Event:
    return Event(
        event_id=event_id,
        type="tool_call",
        timestamp=T0 + timedelta(minutes=minute),
        content={"tool": "git", "status": "ok", **content},
        node_id=f"n-{event_id}",
        context={"cwd": "/srv"},
    )


def at(minutes: int) -> datetime:
    return T0 + timedelta(minutes=minutes)


def ids(events: list[Event]) -> list[str]:
    return [e.event_id for e in events]


# --- create / get ------------------------------------------------------------------------------


def test_a_created_trajectory_reads_back_equal(trajectory_store):
    stored, created = trajectory_store.create(traj())
    assert created is True
    assert stored == traj()
    assert trajectory_store.get("t1", "tr1") == traj()


def test_creating_an_existing_trajectory_returns_the_stored_one_and_false(trajectory_store):
    trajectory_store.create(traj(goal="the first goal"))
    stored, created = trajectory_store.create(traj(goal="another goal", created_at=at(5), updated_at=at(5)))
    assert created is False
    assert stored.goal == "the first goal"
    assert stored.created_at == T0
    assert trajectory_store.get("t1", "tr1").goal == "the first goal"


def test_create_returns_the_stored_state_not_a_fresh_one(trajectory_store):
    trajectory_store.create(traj())
    trajectory_store.append_events("t1", "tr1", [ev("e1")], at(1))
    stored, created = trajectory_store.create(traj())
    assert created is False
    assert stored.event_count == 1


def test_the_same_trajectory_id_in_two_tenants_is_two_trajectories(trajectory_store):
    assert trajectory_store.create(traj(tenant_id="t1", goal="one"))[1] is True
    assert trajectory_store.create(traj(tenant_id="t2", goal="two"))[1] is True
    assert trajectory_store.get("t1", "tr1").goal == "one"
    assert trajectory_store.get("t2", "tr1").goal == "two"


def test_getting_an_unknown_trajectory_raises_not_found(trajectory_store):
    with pytest.raises(NotFound):
        trajectory_store.get("t1", "nope")


def test_getting_another_tenants_trajectory_raises_not_found(trajectory_store):
    trajectory_store.create(traj(tenant_id="t1"))
    with pytest.raises(NotFound):
        trajectory_store.get("t2", "tr1")


def test_a_new_trajectory_is_open_with_no_events(trajectory_store):
    trajectory_store.create(traj())
    got = trajectory_store.get("t1", "tr1")
    assert got.status is TrajectoryStatus.OPEN
    assert got.event_count == 0
    assert trajectory_store.events("t1", "tr1") == []


# --- append_events ------------------------------------------------------------------------------


def test_events_come_back_in_arrival_order_with_increasing_seq(trajectory_store):
    trajectory_store.create(traj())
    # timestamps deliberately out of order: arrival order wins
    result = trajectory_store.append_events("t1", "tr1", [ev("c", 9), ev("a", 1), ev("b", 5)], at(10))
    assert (result.accepted, result.duplicates) == (3, 0)
    trajectory_store.append_events("t1", "tr1", [ev("d", 0)], at(11))
    events = trajectory_store.events("t1", "tr1")
    assert ids(events) == ["c", "a", "b", "d"]
    seqs = [e.seq for e in events]
    assert seqs == sorted(seqs) and len(set(seqs)) == 4


def test_stored_events_keep_their_fields(trajectory_store):
    trajectory_store.create(traj())
    sent = ev("e1", 3, detail={"rows": [1, 2]})
    trajectory_store.append_events("t1", "tr1", [sent], at(4))
    (got,) = trajectory_store.events("t1", "tr1")
    assert replace(got, seq=0) == sent


def test_an_event_id_seen_before_counts_as_a_duplicate(trajectory_store):
    trajectory_store.create(traj())
    trajectory_store.append_events("t1", "tr1", [ev("e1"), ev("e2")], at(1))
    result = trajectory_store.append_events("t1", "tr1", [ev("e2", 7), ev("e3")], at(2))
    assert (result.accepted, result.duplicates) == (1, 1)
    assert ids(trajectory_store.events("t1", "tr1")) == ["e1", "e2", "e3"]
    # the first copy is kept
    assert trajectory_store.events("t1", "tr1")[1].timestamp == T0


def test_a_repeated_event_id_inside_one_batch_counts_as_a_duplicate(trajectory_store):
    trajectory_store.create(traj())
    result = trajectory_store.append_events("t1", "tr1", [ev("e1"), ev("e2"), ev("e1", 9)], at(1))
    assert (result.accepted, result.duplicates) == (2, 1)
    assert ids(trajectory_store.events("t1", "tr1")) == ["e1", "e2"]


def test_a_batch_of_only_duplicates_changes_nothing(trajectory_store):
    trajectory_store.create(traj())
    trajectory_store.append_events("t1", "tr1", [ev("e1")], at(1))
    before = trajectory_store.get("t1", "tr1")
    result = trajectory_store.append_events("t1", "tr1", [ev("e1")], at(2))
    assert (result.accepted, result.duplicates) == (0, 1)
    assert trajectory_store.get("t1", "tr1") == before


def test_the_event_count_counts_accepted_events(trajectory_store):
    trajectory_store.create(traj())
    trajectory_store.append_events("t1", "tr1", [ev("e1"), ev("e2")], at(1))
    trajectory_store.append_events("t1", "tr1", [ev("e2"), ev("e3")], at(2))
    assert trajectory_store.get("t1", "tr1").event_count == 3


def test_appending_events_moves_updated_at_to_now(trajectory_store):
    trajectory_store.create(traj())
    trajectory_store.append_events("t1", "tr1", [ev("e1")], at(3))
    got = trajectory_store.get("t1", "tr1")
    assert got.updated_at == at(3)
    assert got.created_at == T0


def test_the_same_event_id_in_two_trajectories_is_no_duplicate(trajectory_store):
    trajectory_store.create(traj("tr1"))
    trajectory_store.create(traj("tr2"))
    trajectory_store.append_events("t1", "tr1", [ev("e1")], at(1))
    result = trajectory_store.append_events("t1", "tr2", [ev("e1")], at(1))
    assert (result.accepted, result.duplicates) == (1, 0)


def test_appending_to_an_unknown_trajectory_raises_not_found(trajectory_store):
    with pytest.raises(NotFound):
        trajectory_store.append_events("t1", "nope", [ev("e1")], at(1))


def test_appending_to_another_tenants_trajectory_raises_not_found(trajectory_store):
    trajectory_store.create(traj(tenant_id="t1"))
    with pytest.raises(NotFound):
        trajectory_store.append_events("t2", "tr1", [ev("e1")], at(1))
    assert trajectory_store.events("t1", "tr1") == []


def test_another_tenant_never_sees_the_events(trajectory_store):
    trajectory_store.create(traj(tenant_id="t1"))
    trajectory_store.append_events("t1", "tr1", [ev("e1")], at(1))
    try:
        seen = trajectory_store.events("t2", "tr1")
    except NotFound:  # the port does not say which; both keep the events private
        seen = []
    assert seen == []


def test_appending_after_finalize_raises_conflict(trajectory_store):
    trajectory_store.create(traj())
    trajectory_store.append_events("t1", "tr1", [ev("e1")], at(1))
    trajectory_store.finalize("t1", "tr1", "success", None, at(2))
    with pytest.raises(Conflict):
        trajectory_store.append_events("t1", "tr1", [ev("e2")], at(3))
    with pytest.raises(Conflict):  # even a duplicate-only batch
        trajectory_store.append_events("t1", "tr1", [ev("e1")], at(3))
    assert ids(trajectory_store.events("t1", "tr1")) == ["e1"]


# --- finalize -----------------------------------------------------------------------------------


def test_finalize_records_the_outcome_and_returns_the_trajectory(trajectory_store):
    trajectory_store.create(traj())
    trajectory_store.append_events("t1", "tr1", [ev("e1")], at(1))
    done = trajectory_store.finalize("t1", "tr1", "failure", "it broke", at(2))
    assert done.status is TrajectoryStatus.FINALIZED
    assert (done.outcome, done.feedback) == ("failure", "it broke")
    assert done.finalized_at == at(2)
    assert done.updated_at == at(2)
    assert done.event_count == 1
    assert trajectory_store.get("t1", "tr1") == done


def test_finalizing_twice_raises_conflict(trajectory_store):
    trajectory_store.create(traj())
    trajectory_store.finalize("t1", "tr1", "success", None, at(1))
    with pytest.raises(Conflict):
        trajectory_store.finalize("t1", "tr1", "failure", "again", at(2))
    assert trajectory_store.get("t1", "tr1").outcome == "success"


def test_finalizing_a_reviewed_trajectory_raises_conflict(trajectory_store):
    trajectory_store.create(traj())
    trajectory_store.finalize("t1", "tr1", "success", None, at(1))
    trajectory_store.save_review("t1", "tr1", "reviewed", [], {}, at(2))
    with pytest.raises(Conflict):
        trajectory_store.finalize("t1", "tr1", "success", None, at(3))


def test_finalizing_an_unknown_or_foreign_trajectory_raises_not_found(trajectory_store):
    trajectory_store.create(traj(tenant_id="t1"))
    with pytest.raises(NotFound):
        trajectory_store.finalize("t1", "nope", "success", None, at(1))
    with pytest.raises(NotFound):
        trajectory_store.finalize("t2", "tr1", "success", None, at(1))
    assert trajectory_store.get("t1", "tr1").status is TrajectoryStatus.OPEN


# --- save_review / finalized_unreviewed ---------------------------------------------------------


def test_save_review_records_status_experiences_and_review(trajectory_store):
    trajectory_store.create(traj())
    trajectory_store.finalize("t1", "tr1", "success", None, at(1))
    review = {"lessons": 2, "rejected": [{"lesson": "x", "reason": "vague"}]}
    saved = trajectory_store.save_review("t1", "tr1", "reviewed", ["x1", "x2"], review, at(2))
    assert saved.status is TrajectoryStatus.REVIEWED
    assert saved.experience_ids == ["x1", "x2"]
    assert saved.review == review
    assert saved.updated_at == at(2)
    assert saved.outcome == "success"
    assert trajectory_store.get("t1", "tr1") == saved


def test_save_review_can_record_a_failed_review(trajectory_store):
    trajectory_store.create(traj())
    trajectory_store.finalize("t1", "tr1", "success", None, at(1))
    saved = trajectory_store.save_review("t1", "tr1", "review_failed", [], {"error": "boom"}, at(2))
    assert saved.status is TrajectoryStatus.REVIEW_FAILED
    assert trajectory_store.get("t1", "tr1").review == {"error": "boom"}


def test_save_review_of_an_unknown_trajectory_raises_not_found(trajectory_store):
    with pytest.raises(NotFound):
        trajectory_store.save_review("t1", "nope", "reviewed", [], {}, at(1))


def test_finalized_unreviewed_lists_only_finalized_trajectories_of_every_tenant(trajectory_store):
    for tenant_id, trajectory_id in [("t1", "open"), ("t1", "fin"), ("t2", "fin"), ("t1", "rev"), ("t2", "failed")]:
        trajectory_store.create(traj(trajectory_id, tenant_id))
    for tenant_id, trajectory_id in [("t1", "fin"), ("t2", "fin"), ("t1", "rev"), ("t2", "failed")]:
        trajectory_store.finalize(tenant_id, trajectory_id, "success", None, at(1))
    trajectory_store.save_review("t1", "rev", "reviewed", [], {}, at(2))
    trajectory_store.save_review("t2", "failed", "review_failed", [], {}, at(2))
    assert sorted(trajectory_store.finalized_unreviewed()) == [("t1", "fin"), ("t2", "fin")]


def test_finalized_unreviewed_returns_at_most_limit(trajectory_store):
    for i in range(5):
        trajectory_store.create(traj(f"tr{i}"))
        trajectory_store.finalize("t1", f"tr{i}", "success", None, at(1))
    got = trajectory_store.finalized_unreviewed(limit=3)
    assert len(got) == 3
    assert set(got) <= {("t1", f"tr{i}") for i in range(5)}


def test_counts_by_status_are_per_tenant(trajectory_store):
    trajectory_store.create(traj("tr1"))
    trajectory_store.create(traj("tr2"))
    trajectory_store.create(traj("tr3", tenant_id="t2"))
    trajectory_store.finalize("t1", "tr2", "success", None, at(1))
    assert trajectory_store.count_by_status("t1") == {"open": 1, "finalized": 1}
    assert trajectory_store.count_by_status("t9") == {}


def test_the_append_result_names_the_newly_stored_event_ids_in_order(trajectory_store):
    trajectory_store.create(traj())
    trajectory_store.append_events("t1", "tr1", [ev("a"), ev("b")], at(0))
    result = trajectory_store.append_events("t1", "tr1", [ev("b"), ev("c"), ev("d"), ev("c")], at(1))
    assert (result.accepted, result.duplicates, result.accepted_ids) == (2, 2, ("c", "d"))


def test_a_large_batch_with_scattered_duplicates_is_stored_in_order_without_gaps(trajectory_store):
    # more events than one statement of a backend may write, duplicates of stored and of earlier
    # batch events among them: the new ones get the next seqs in batch order, none is skipped
    trajectory_store.create(traj())
    trajectory_store.append_events("t1", "tr1", [ev(f"e{i}") for i in range(0, 400, 7)], at(0))
    batch = [ev(f"e{i}", 1) for i in range(400)] + [ev("e5", 2), ev("e399", 2)]
    result = trajectory_store.append_events("t1", "tr1", batch, at(1))
    fresh = [f"e{i}" for i in range(400) if i % 7]
    assert (result.accepted, result.duplicates, list(result.accepted_ids)) == (len(fresh), 402 - len(fresh), fresh)
    events = trajectory_store.events("t1", "tr1")
    assert [e.seq for e in events] == list(range(1, 401))
    assert ids(events) == [f"e{i}" for i in range(0, 400, 7)] + fresh
    assert trajectory_store.get("t1", "tr1").event_count == 400


def test_a_local_review_is_appended_without_changing_the_status(trajectory_store):
    trajectory_store.create(traj())
    trajectory_store.add_local_review("t1", "tr1", ["x1"], {"kind": "local", "n": 1}, at(1))
    after = trajectory_store.add_local_review("t1", "tr1", ["x1", "x2"], {"kind": "local", "n": 2}, at(2))
    assert after.status is TrajectoryStatus.OPEN
    assert after.experience_ids == ["x1", "x2"]
    assert after.review == {"local": [{"kind": "local", "n": 1}, {"kind": "local", "n": 2}]}
    assert trajectory_store.get("t1", "tr1") == after
    with pytest.raises(NotFound):
        trajectory_store.add_local_review("t2", "tr1", [], {}, at(3))


def test_an_append_past_max_events_stores_none_of_the_batch_and_duplicates_do_not_count(trajectory_store):
    trajectory_store.create(traj())
    trajectory_store.append_events("t1", "tr1", [ev(f"e{i}") for i in range(3)], T0, max_events=4)
    with pytest.raises(TrajectoryFull):
        trajectory_store.append_events("t1", "tr1", [ev("e3"), ev("e4")], T0, max_events=4)
    assert trajectory_store.get("t1", "tr1").event_count == 3
    assert [e.event_id for e in trajectory_store.events("t1", "tr1")] == ["e0", "e1", "e2"]
    result = trajectory_store.append_events("t1", "tr1", [ev("e0"), ev("e1"), ev("e3")], T0, max_events=4)
    assert (result.accepted, result.duplicates) == (1, 2)
    with pytest.raises(TrajectoryFull, match="may hold 4"):
        trajectory_store.append_events("t1", "tr1", [ev("e9")], T0, max_events=4)


def test_events_around_reads_the_windows_of_the_listed_events(trajectory_store):
    trajectory_store.create(traj())
    trajectory_store.append_events("t1", "tr1", [ev(f"e{i}") for i in range(1, 31)], T0)
    around = trajectory_store.events_around("t1", "tr1", ["e10", "e12", "e25", "unknown"], 3)
    assert [e.event_id for e in around] == [f"e{i}" for i in (7, 8, 9, 10, 11, 12, 22, 23, 24, 25)]
    assert [e.seq for e in around] == [7, 8, 9, 10, 11, 12, 22, 23, 24, 25]
    assert [e.event_id for e in trajectory_store.events_around("t1", "tr1", ["e2"], 8)] == ["e1", "e2"]
    assert trajectory_store.events_around("t1", "tr1", [], 8) == []
    assert trajectory_store.events_around("t2", "tr1", ["e10"], 3) == []  # another tenant's: nothing


def test_a_summary_holds_every_tool_that_worked_and_only_the_last_events(trajectory_store):
    trajectory_store.create(traj())
    trajectory_store.append_events("t1", "tr1", [ev("e1", tool="lookup"), ev("e2", tool="charge", status="error", error="E")], T0)
    trajectory_store.append_events("t1", "tr1", [ev(f"e{i}") for i in range(3, 33)], T0)  # 30 more calls of git
    trajectory_store.append_events("t1", "tr1", [ev("e3"), ev("e33", tool="deploy")], T0)  # e3 again: a duplicate
    summary = trajectory_store.trajectory_summary("t1", "tr1", tail=4)
    # the lookup 32 events back still counts; a tool whose only call failed does not
    assert summary.tools_ok == frozenset({"lookup", "git", "deploy"})
    assert [e.event_id for e in summary.recent] == ["e30", "e31", "e32", "e33"]
    assert [e.seq for e in summary.recent] == [30, 31, 32, 33] and summary.event_count == 33
    assert trajectory_store.trajectory_summary("t1", "tr1", tail=0).recent == ()
    assert [e.event_id for e in trajectory_store.trajectory_summary("t1", "tr1", tail=100).recent][:2] == ["e1", "e2"]


def test_a_summary_of_a_trajectory_without_events_is_empty(trajectory_store):
    trajectory_store.create(traj())
    summary = trajectory_store.trajectory_summary("t1", "tr1", tail=20)
    assert (summary.tools_ok, summary.recent, summary.event_count) == (frozenset(), (), 0)


def test_a_summary_of_an_unknown_or_foreign_trajectory_raises_not_found(trajectory_store):
    trajectory_store.create(traj())
    with pytest.raises(NotFound):
        trajectory_store.trajectory_summary("t1", "nope", tail=5)
    with pytest.raises(NotFound):
        trajectory_store.trajectory_summary("t2", "tr1", tail=5)


def test_a_page_of_events_holds_the_limit_after_the_seq_and_reads_no_other(trajectory_store):
    trajectory_store.create(traj())
    trajectory_store.append_events("t1", "tr1", [ev(f"e{i}") for i in range(1, 26)], T0)
    first = trajectory_store.events_page("t1", "tr1", 0, 10)
    assert [e.event_id for e in first] == [f"e{i}" for i in range(1, 11)] and [e.seq for e in first] == list(range(1, 11))
    assert [e.event_id for e in trajectory_store.events_page("t1", "tr1", 10, 10)] == [f"e{i}" for i in range(11, 21)]
    assert [e.event_id for e in trajectory_store.events_page("t1", "tr1", 20, 10)] == [f"e{i}" for i in range(21, 26)]
    assert trajectory_store.events_page("t1", "tr1", 25, 10) == []
    assert trajectory_store.events_page("t1", "nope", 0, 10) == [] and trajectory_store.events_page("t2", "tr1", 0, 10) == []


EXPIRY = T0 + timedelta(days=30)


def test_a_trajectorys_event_expiry_is_kept(trajectory_store):
    trajectory_store.create(traj("tr1", events_expire_at=EXPIRY))
    trajectory_store.create(traj("tr2"))
    assert trajectory_store.get("t1", "tr1").events_expire_at == EXPIRY
    assert trajectory_store.get("t1", "tr2").events_expire_at is None
    trajectory_store.append_events("t1", "tr1", [ev("e1")], T0)
    trajectory_store.finalize("t1", "tr1", "success", None, T0)
    assert trajectory_store.get("t1", "tr1").events_expire_at == EXPIRY


def test_an_append_after_the_events_expired_is_a_conflict_that_stores_nothing(trajectory_store):
    trajectory_store.create(traj("tr1", events_expire_at=EXPIRY))
    trajectory_store.append_events("t1", "tr1", [ev("e1")], EXPIRY - timedelta(seconds=1))
    with pytest.raises(Conflict, match="expired"):
        trajectory_store.append_events("t1", "tr1", [ev("e2")], EXPIRY)
    assert trajectory_store.get("t1", "tr1").event_count == 1


def test_the_purge_deletes_the_expired_events_only_and_at_most_the_limit_per_call(backend, trajectory_store):
    """A store that leaves the deletion to its database's TTL (DynamoDB) answers 0 and keeps them
    until the TTL runs (its events carry the expiry: tests/adapters/dynamo/test_event_ttl.py)."""
    trajectory_store.create(traj("old", events_expire_at=EXPIRY))
    trajectory_store.create(traj("later", events_expire_at=EXPIRY + timedelta(days=1)))
    trajectory_store.create(traj("kept"))
    trajectory_store.create(traj("other", tenant_id="t2", events_expire_at=EXPIRY - timedelta(days=1)))
    for trajectory_id, tenant_id in (("old", "t1"), ("later", "t1"), ("kept", "t1"), ("other", "t2")):
        trajectory_store.append_events(tenant_id, trajectory_id, [ev(f"{trajectory_id}-{i}", i) for i in range(5)], T0)
    assert trajectory_store.purge_expired_events(EXPIRY - timedelta(days=2), 100) == 0  # nothing expired yet
    if backend.name == "dynamo":
        assert trajectory_store.purge_expired_events(EXPIRY, 3) == 0
        return
    counts = []
    while done := trajectory_store.purge_expired_events(EXPIRY, 3):
        assert done <= 3
        counts.append(done)
    assert sum(counts) == 10 and len(counts) >= 4  # 'other' and 'old', three at a time at most
    assert trajectory_store.events("t1", "old") == [] and trajectory_store.events("t2", "other") == []
    assert len(trajectory_store.events("t1", "later")) == 5 and len(trajectory_store.events("t1", "kept")) == 5
    assert trajectory_store.get("t1", "old").event_count == 5  # the trajectory stays, as it was
    assert trajectory_store.purge_expired_events(EXPIRY + timedelta(days=1), 100) == 5
    assert len(trajectory_store.events("t1", "kept")) == 5


def test_statuses_are_counted_a_page_at_a_time_each_trajectory_once(trajectory_store):
    for i in range(7):
        trajectory_store.create(traj(f"tr{i}"))
    for i in (1, 4, 5):
        trajectory_store.finalize("t1", f"tr{i}", "success", None, T0)
    trajectory_store.create(traj("tr9", tenant_id="t2"))
    total: dict[str, int] = {}
    cursor, pages = None, 0
    while True:
        counts, cursor = trajectory_store.statuses_page("t1", 3, cursor)
        assert sum(counts.values()) <= 3
        for status, n in counts.items():
            total[status] = total.get(status, 0) + n
        pages += 1
        if cursor is None:
            break
    assert total == {"open": 4, "finalized": 3} == trajectory_store.count_by_status("t1") and pages == 3
    assert trajectory_store.statuses_page("t1", 7) == ({"open": 4, "finalized": 3}, None)  # a full last page: no cursor
    assert trajectory_store.statuses_page("t-none", 3) == ({}, None)


@pytest.mark.parametrize("forged", ["junk", "W10", "WzFd", "eyJhIjoxfQ"])
def test_a_statuses_cursor_the_store_did_not_make_is_invalid_input(trajectory_store, forged):
    trajectory_store.create(traj("tr1"))
    with pytest.raises(InvalidInput):
        trajectory_store.statuses_page("t1", 2, forged)
