"""The committed tails of recent trajectories: they answer a read-back only when they hold all of it."""
from __future__ import annotations

from datetime import datetime, timezone

from chalicelib.adapters.embedded.event_tails import EventTails
from chalicelib.domain.models import Event

T0 = datetime(2026, 11, 1, tzinfo=timezone.utc)
KEY = ("t1", "tr1")


def batch(first_seq: int, n: int, tag: str = "e") -> list[Event]:
    return [Event(event_id=f"{tag}{s}", type="llm_reasoning", timestamp=T0, seq=s) for s in range(first_seq, first_seq + n)]


def ids(events: list[Event] | None) -> list[str] | None:
    return None if events is None else [e.event_id for e in events]


def test_a_window_inside_the_tail_is_answered_from_it_and_one_reaching_past_it_is_not():
    tails = EventTails(keep=4)
    tails.appended(KEY, 0, batch(1, 6), [10] * 6)
    assert ids(tails.around(KEY, ["e6"], 3)) == ["e3", "e4", "e5", "e6"]
    assert ids(tails.around(KEY, ["e2", "e6"], 1)) == ["e1", "e2", "e5", "e6"]
    tails.appended(KEY, 6, batch(7, 2), [10] * 2)  # keeps 4 before the latest batch: seqs 3..8
    assert ids(tails.around(KEY, ["e8"], 5)) == ["e3", "e4", "e5", "e6", "e7", "e8"]
    assert tails.around(KEY, ["e8"], 6) is None  # seq 2 is no longer held: the database answers
    assert tails.around(KEY, ["e1"], 0) is None and tails.around(KEY, ["unknown"], 1) is None
    assert tails.around(("t2", "tr1"), ["e8"], 1) is None  # another tenant's trajectory of the same id


def test_events_appended_elsewhere_start_a_new_run_instead_of_leaving_a_hole():
    tails = EventTails(keep=10)
    tails.appended(KEY, 0, batch(1, 3), [10] * 3)
    tails.appended(KEY, 5, batch(6, 2), [10] * 2)  # seqs 4 and 5 came from another process
    assert ids(tails.around(KEY, ["e7"], 1)) == ["e6", "e7"]
    assert tails.around(KEY, ["e7"], 3) is None and tails.around(KEY, ["e3"], 0) is None


def test_batches_of_one_commit_applied_out_of_order_keep_the_later_one():
    tails = EventTails(keep=10)
    tails.appended(KEY, 3, batch(4, 3), [10] * 3)
    tails.appended(KEY, 0, batch(1, 3), [10] * 3)  # the earlier batch arrives second: the tail stays 4..6
    assert ids(tails.around(KEY, ["e6"], 2)) == ["e4", "e5", "e6"]
    assert tails.around(KEY, ["e3"], 0) is None
    tails.appended(KEY, 6, batch(7, 1), [10])
    assert ids(tails.around(KEY, ["e7"], 3)) == ["e4", "e5", "e6", "e7"]


def test_the_least_recently_appended_trajectories_go_first_past_the_byte_bound():
    tails = EventTails(max_bytes=100, keep=10)
    for n in range(3):
        tails.appended(("t1", f"tr{n}"), 0, batch(1, 2, tag=f"x{n}-"), [20, 20])
    assert tails.around(("t1", "tr0"), ["x0-2"], 1) is None  # 120 bytes held: the oldest went
    assert ids(tails.around(("t1", "tr2"), ["x2-2"], 1)) == ["x2-1", "x2-2"]
    assert ids(tails.around(("t1", "tr1"), ["x1-2"], 1)) == ["x1-1", "x1-2"]
