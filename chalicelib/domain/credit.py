"""Credit from outcomes: the lessons a run was served, whether it followed them, how it ended.

A ``recall`` event in a trajectory says which recall (or advise) answer the agent saw at that
point; the answer's lessons are *served* there. When the trajectory is reviewed, each served
lesson is judged *adopted* (the tool calls after it follow it: ``advise.followed``) or *ignored*,
and the outcome moves its utility and freshness through the feedback effects of
``scoring.apply_feedback``:

    adopted, success  -> succeeded  (renews freshness, raises utility and confidence)
    adopted, failure  -> failed     (lowers utility and confidence: it led the run astray)
    adopted, partial  -> adopted
    ignored, success  -> ignored    (the run did well without it: a little less utility)
    ignored, other    -> nothing    (no evidence either way)

Counters kept on the lesson say how often each happened; ``rates`` turns them into the success
rate when adopted, when ignored, and the lift between them.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from typing import Sequence

from .advise import followed
from .models import Event, Experience, Signal, Trajectory
from .scoring import DecayPolicy, apply_feedback

MAX_CREDITED = 50  # trajectory ids kept on a lesson to recognise a review that runs again


@dataclass(frozen=True)
class Serving:
    """A lesson served in a trajectory: at the first recall event that served it."""

    experience_id: str
    at_seq: int


def recall_events(events: Sequence[Event]) -> list[tuple[Event, str]]:
    """The recall events of a trajectory in order, with the recall id each names."""
    out = []
    for e in sorted(events, key=lambda e: e.seq):
        rid = e.content.get("recall_id") if e.type == "recall" else None
        if isinstance(rid, str) and rid:
            out.append((e, rid))
    return out


def servings(events: Sequence[Event], served: dict[str, Sequence[str]]) -> list[Serving]:
    """Each lesson once, at the first recall event whose answer (``served``: recall id ->
    experience ids) held it. Recall ids with no known answer (expired, another tenant's, made
    up) serve nothing."""
    first: dict[str, int] = {}
    for event, rid in recall_events(events):
        for exp_id in served.get(rid, ()):
            first.setdefault(exp_id, event.seq)
    return [Serving(i, seq) for i, seq in first.items()]


def serves_run(agent_id: str | None, user_id: str | None, bound_to: str | None, traj: Trajectory) -> bool:
    """Whether a recall that served this scope (its agent and user, when it named them), bound to
    ``bound_to`` (None: to no trajectory yet), may credit ``traj``: a run of the same scope, and
    the one it is bound to. 4 failed runs of one agent with another agent's recall id archived
    that agent's lesson."""
    return (agent_id in (None, traj.agent_id) and user_id in (None, traj.user_id)
            and bound_to in (None, traj.trajectory_id))


def adopted(exp: Experience, events: Sequence[Event], serving: Serving) -> bool:
    later = [e for e in sorted(events, key=lambda e: e.seq) if e.seq > serving.at_seq]
    return followed(exp, later)


_EFFECT = {
    (True, "success"): Signal.SUCCEEDED,
    (True, "failure"): Signal.FAILED,
    (True, "partial"): Signal.ADOPTED,
    (False, "success"): Signal.IGNORED,
}


def credited(
    exp: Experience, was_adopted: bool, outcome: str | None, trajectory_id: str, now: datetime, policy: DecayPolicy
) -> Experience:
    """The lesson after one trajectory's credit: counters, the feedback effect, the marker.

    A trajectory already credited (its id among ``credited``) changes nothing.
    """
    if trajectory_id in exp.credited:
        return exp
    success = outcome == "success"
    updated = replace(
        exp,
        served=exp.served + 1,
        adopted=exp.adopted + int(was_adopted),
        adopted_successes=exp.adopted_successes + int(was_adopted and success),
        ignored_successes=exp.ignored_successes + int(not was_adopted and success),
        credited=[*exp.credited, trajectory_id][-MAX_CREDITED:],
        updated_at=now,
    )
    signal = _EFFECT.get((was_adopted, outcome or ""))
    return apply_feedback(updated, signal, now, policy) if signal is not None else updated


@dataclass(frozen=True)
class Rates:
    success_when_adopted: float | None
    success_when_ignored: float | None
    lift: float | None  # success when adopted minus success when ignored


def rates(exp: Experience) -> Rates:
    """Success rates from the counters; None where there is nothing to divide by."""
    ignored = exp.served - exp.adopted
    when_adopted = round(exp.adopted_successes / exp.adopted, 4) if exp.adopted else None
    when_ignored = round(exp.ignored_successes / ignored, 4) if ignored > 0 else None
    lift = round(when_adopted - when_ignored, 4) if when_adopted is not None and when_ignored is not None else None
    return Rates(when_adopted, when_ignored, lift)
