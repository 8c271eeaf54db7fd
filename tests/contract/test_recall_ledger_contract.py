"""Contract of ``ports.RecallLedger``: what recalls served, and credit markers, per tenant, with an expiry."""
from __future__ import annotations

import threading
from datetime import timedelta

from chalicelib.ports import ServedRecall

from .conftest import T0

DAY = timedelta(days=1)


def served(recall_id: str, tenant_id: str = "t1", ids=("e1", "e2"), ttl=DAY, **kw) -> ServedRecall:
    return ServedRecall(tenant_id, recall_id, tuple(ids), T0, T0 + ttl, **kw)


def test_a_recorded_recall_reads_back_equal(recall_ledger):
    recall_ledger.record(served("r1", kind="advise", tool="charge"))
    recall_ledger.record(served("r2", ids=()))
    got = recall_ledger.served("t1", ["r1", "r2"], T0)
    assert got == {"r1": served("r1", kind="advise", tool="charge"), "r2": served("r2", ids=())}


def test_unknown_ids_and_another_tenants_are_left_out(recall_ledger):
    recall_ledger.record(served("r1"))
    recall_ledger.record(served("r9", tenant_id="t2"))
    assert set(recall_ledger.served("t1", ["r1", "r9", "nope"], T0)) == {"r1"}
    assert recall_ledger.served("t2", ["r1"], T0) == {}
    assert recall_ledger.served("t1", [], T0) == {}


def test_an_expired_recall_is_gone_even_before_it_is_purged(recall_ledger):
    recall_ledger.record(served("r1", ttl=DAY))
    assert set(recall_ledger.served("t1", ["r1"], T0 + DAY - timedelta(seconds=1))) == {"r1"}
    assert recall_ledger.served("t1", ["r1"], T0 + DAY) == {}


def test_a_repeated_recall_id_keeps_the_first_answer(recall_ledger):
    recall_ledger.record(served("r1", ids=("e1",)))
    recall_ledger.record(served("r1", ids=("e2",)))
    assert recall_ledger.served("t1", ["r1"], T0)["r1"].experience_ids == ("e1",)


def test_a_lesson_is_marked_credited_once_per_trajectory(recall_ledger):
    assert not recall_ledger.is_credited("t1", "tr1", "e1")
    assert recall_ledger.mark_credited("t1", "tr1", "e1", T0 + DAY) is True
    assert recall_ledger.mark_credited("t1", "tr1", "e1", T0 + DAY) is False
    assert recall_ledger.is_credited("t1", "tr1", "e1")
    # another trajectory, another lesson, another tenant: separate markers
    assert recall_ledger.mark_credited("t1", "tr2", "e1", T0 + DAY) is True
    assert recall_ledger.mark_credited("t1", "tr1", "e2", T0 + DAY) is True
    assert recall_ledger.mark_credited("t2", "tr1", "e1", T0 + DAY) is True
    assert not recall_ledger.is_credited("t3", "tr1", "e1")


def test_ids_with_separators_do_not_collide(recall_ledger):
    assert recall_ledger.mark_credited("t1", "a#b", "c", T0 + DAY) is True
    assert recall_ledger.mark_credited("t1", "a", "b#c", T0 + DAY) is True
    assert not recall_ledger.is_credited("t1", "a#b#c", "")


def test_concurrent_markers_of_the_same_pair_let_exactly_one_through(recall_ledger):
    results: list[bool] = []
    lock = threading.Lock()

    def mark() -> None:
        ok = recall_ledger.mark_credited("t1", "tr1", "e1", T0 + DAY)
        with lock:
            results.append(ok)

    threads = [threading.Thread(target=mark) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == [False] * 7 + [True]


def test_purge_keeps_what_has_not_expired(recall_ledger):
    recall_ledger.record(served("old", ttl=DAY))
    recall_ledger.record(served("new", ttl=3 * DAY))
    recall_ledger.mark_credited("t1", "tr1", "e1", T0 + 3 * DAY)
    purged = recall_ledger.purge_expired(T0 + 2 * DAY)
    assert purged in (0, 1)  # 0: the store's own TTL does the work
    assert set(recall_ledger.served("t1", ["old", "new"], T0 + 2 * DAY)) == {"new"}
    assert recall_ledger.is_credited("t1", "tr1", "e1")


def test_a_reopened_ledger_keeps_what_was_recorded(durable_backend, recall_ledger):
    recall_ledger.record(served("r1"))
    recall_ledger.mark_credited("t1", "tr1", "e1", T0 + DAY)
    again = durable_backend.reopen().recalls()
    assert set(again.served("t1", ["r1"], T0)) == {"r1"}
    assert again.is_credited("t1", "tr1", "e1")


def test_a_recall_keeps_the_scope_it_served(recall_ledger):
    recall_ledger.record(served("r1", agent_id="bot-x", user_id="u1", trajectory_id="tr1"))
    got = recall_ledger.served("t1", ["r1"], T0)["r1"]
    assert (got.agent_id, got.user_id, got.trajectory_id) == ("bot-x", "u1", "tr1")


def test_the_first_trajectory_to_attach_a_recall_holds_it(recall_ledger):
    recall_ledger.record(served("r1"))
    assert recall_ledger.attach("t1", "r1", "tr1") is True
    assert recall_ledger.attach("t1", "r1", "tr1") is True  # again: still this one's
    assert recall_ledger.attach("t1", "r1", "tr2") is False
    assert recall_ledger.served("t1", ["r1"], T0)["r1"].trajectory_id == "tr1"
    assert recall_ledger.attach("t1", "nope", "tr1") is False
    assert recall_ledger.attach("t2", "r1", "tr2") is False  # another tenant's id


def test_a_recall_made_for_a_trajectory_is_held_by_it(recall_ledger):
    recall_ledger.record(served("r1", kind="advise", trajectory_id="tr1"))
    assert recall_ledger.attach("t1", "r1", "tr2") is False
    assert recall_ledger.attach("t1", "r1", "tr1") is True


def test_of_trajectories_attaching_one_recall_at_once_exactly_one_holds_it(recall_ledger):
    for round_ in range(8):
        rid = f"r{round_}"
        recall_ledger.record(served(rid))
        barrier, held = threading.Barrier(4), []

        def attach(n: int) -> None:
            barrier.wait()
            if recall_ledger.attach("t1", rid, f"tr{n}"):
                held.append(n)

        threads = [threading.Thread(target=attach, args=(n,)) for n in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        assert len(held) == 1, f"round {round_}: {held}"
