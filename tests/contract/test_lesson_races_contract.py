"""What was acknowledged stays done, on every store: the use cases that change a lesson (decay,
feedback, restore, credit) racing a forget, started together by a barrier, many times. Each
reads the lesson and writes it back; written blindly, the copy read before the forget put the
lesson back in recall (decay racing 150 forgets left 25 active). Credit is bound to its recall:
one id replayed by many runs, or attached by another agent's run, credits once or not at all.
"""
from __future__ import annotations

import threading
from datetime import timedelta
from typing import Callable

import pytest

from chalicelib.domain.errors import Conflict
from chalicelib.domain.models import Event, ExperienceStatus, Trajectory
from chalicelib.services import credit as credit_service
from chalicelib.services import experiences as experiences_service
from chalicelib.services import maintenance
from chalicelib.services.deps import Deps
from chalicelib.services.recall_ids import remember
from tests.support.builders import experience
from tests.support.fakes import FakeClock, InMemoryVectorIndex, fake_deps

from .conftest import T0

ACTIVE, ARCHIVED, FORGOTTEN = ExperienceStatus.ACTIVE, ExperienceStatus.ARCHIVED, ExperienceStatus.FORGOTTEN
LESSONS = 12  # lessons per round: each thread walks all of them, so their reads and writes interleave
ROUNDS = 4


@pytest.fixture
def deps(experience_store, recall_ledger, trajectory_store) -> Deps:
    d = fake_deps(clock=FakeClock(T0 + timedelta(days=40)), experiences=experience_store, recalls=recall_ledger,
                  trajectories=trajectory_store)
    assert isinstance(d.index, InMemoryVectorIndex)  # the index is not under test here
    return d


def seed(deps: Deps, round_: int, status: ExperienceStatus = ACTIVE, **kw) -> list[str]:
    ids = [f"r{round_}-x{i}" for i in range(LESSONS)]
    for i in ids:
        # old and stale: a decay changes every one of them (its freshness, and archives some)
        written = deps.experiences.put_if(experience(experience_id=i, status=status, created_at=T0, renewed_at=T0,
                                                     updated_at=T0, **kw))
        assert written is not None
    return ids


def together(*work: Callable[[], None]) -> None:
    """Run each callable in a thread of its own, released at once by a barrier; re-raise the
    first error any of them raised."""
    barrier, errors = threading.Barrier(len(work)), []

    def run(fn: Callable[[], None]) -> None:
        try:
            barrier.wait()
            fn()
        except BaseException as exc:  # noqa: BLE001 - surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(fn,)) for fn in work]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    if errors:
        raise errors[0]


def forget_all(deps: Deps, ids: list[str]) -> Callable[[], None]:
    def go() -> None:
        for i in ids:
            assert experiences_service.forget(deps, "t1", i, "wrong").status is FORGOTTEN  # the 200 the caller sees
    return go


def still_forgotten(deps: Deps, ids: list[str]) -> list[str]:
    stored = deps.experiences.get_many("t1", ids)
    return [i for i in ids if stored[i].status is not FORGOTTEN]


def test_decay_racing_forgets_never_undoes_one(deps):
    for round_ in range(ROUNDS):
        ids = seed(deps, round_, utility=0.1, confidence=0.1)
        together(lambda: maintenance.run_decay(deps, tenant_id="t1", page_size=LESSONS), forget_all(deps, ids))
        assert still_forgotten(deps, ids) == [], f"round {round_}: forgets undone by decay"


def test_feedback_racing_forgets_never_undoes_one(deps):
    for round_ in range(ROUNDS):
        ids = seed(deps, round_)

        def feedback() -> None:
            for i in ids:
                try:
                    experiences_service.feedback(deps, "t1", i, "succeeded")
                except Conflict:
                    pass  # forgotten first: refused, as it should be

        together(feedback, forget_all(deps, ids))
        assert still_forgotten(deps, ids) == [], f"round {round_}: forgets undone by feedback"


def test_restore_racing_forgets_never_undoes_one(deps):
    for round_ in range(ROUNDS):
        ids = seed(deps, round_, status=ARCHIVED)

        def restore() -> None:
            for i in ids:
                try:
                    experiences_service.restore(deps, "t1", i)
                except Conflict:
                    pass

        together(restore, forget_all(deps, ids))
        assert still_forgotten(deps, ids) == [], f"round {round_}: forgets undone by restore"


def test_feedback_racing_feedback_loses_no_vote(deps):
    """Two writers of the same kind: each one's change lands (a lost update lost a vote)."""
    ids = seed(deps, 0)
    deps.experiences.put_if(experience(experience_id="alone"))
    for _ in range(3):
        experiences_service.feedback(deps, "t1", "alone", "succeeded")
    expected = deps.experiences.get("t1", "alone").utility
    together(*[lambda: [experiences_service.feedback(deps, "t1", i, "succeeded") for i in ids]] * 3)
    for exp in deps.experiences.get_many("t1", ids).values():
        assert exp.utility == expected  # three votes each, as one after the other: none written over another


# --- credit bound to its recall ---------------------------------------------------------------


def run(deps: Deps, trajectory_id: str, agent_id: str, recall_id: str, outcome: str) -> tuple[Trajectory, list[Event]]:
    now = deps.clock.now()
    traj = Trajectory(tenant_id="t1", trajectory_id=trajectory_id, agent_id=agent_id, goal="weather",
                      created_at=now, updated_at=now, outcome=outcome)
    events = [
        Event(event_id="e1", type="recall", timestamp=now, content={"recall_id": recall_id}, seq=1),
        Event(event_id="e2", type="tool_call", timestamp=now, seq=2,
              content={"tool": "ask_user", "params": {"question": "Which city?"}, "status": "ok", "result": "Lyon"}),
        Event(event_id="e3", type="tool_call", timestamp=now, seq=3,
              content={"tool": "get_weather", "params": {"city": "Lyon"}, "status": "ok", "result": "rain"}),
    ]
    return traj, events


def test_one_recall_id_replayed_by_twenty_runs_credits_one(deps):
    deps.experiences.put_if(experience(agent_id="bot-r"))
    rid = remember(deps, "t1", ["x1"], agent_id="bot-r")
    for n in range(20):
        credit_service.credit_trajectory(deps, *run(deps, f"tr{n}", "bot-r", rid, "success"))
    got = deps.experiences.get("t1", "x1")
    assert got.served == 1 and got.credited == ["tr0"]
    assert got.utility < 0.7  # one success's worth (20 of them made it 0.999)


def test_runs_crediting_one_recall_at_once_credit_it_once(deps):
    deps.experiences.put_if(experience(agent_id="bot-r"))
    for round_ in range(ROUNDS):
        rid = remember(deps, "t1", ["x1"], agent_id="bot-r")
        before = deps.experiences.get("t1", "x1").served
        together(*[lambda n=n: credit_service.credit_trajectory(deps, *run(deps, f"q{round_}-{n}", "bot-r", rid, "success"))
                   for n in range(4)])
        assert deps.experiences.get("t1", "x1").served == before + 1, f"round {round_}"


def test_another_agents_recall_id_credits_nothing(deps):
    deps.experiences.put_if(experience(agent_id="bot-x"))
    rid = remember(deps, "t1", ["x1"], agent_id="bot-x")
    for n in range(4):  # 4 failed runs of bot-y archived bot-x's lesson
        summary = credit_service.credit_trajectory(deps, *run(deps, f"y{n}", "bot-y", rid, "failure"))
        assert summary["adopted"] == [] and summary["other_runs_recalls"] == 1
    got = deps.experiences.get("t1", "x1")
    assert (got.status, got.served, got.utility) == (ACTIVE, 0, 0.5)


def test_a_recall_without_a_scope_credits_only_lessons_the_run_may_see(deps):
    deps.experiences.put_if(experience(agent_id="bot-x"))
    deps.experiences.put_if(experience(experience_id="shared", agent_id=None))
    rid = remember(deps, "t1", ["x1", "shared"])  # a recall that named no agent
    summary = credit_service.credit_trajectory(deps, *run(deps, "y0", "bot-y", rid, "failure"))
    assert summary["adopted"] == ["shared"]
    assert deps.experiences.get("t1", "x1").served == 0
