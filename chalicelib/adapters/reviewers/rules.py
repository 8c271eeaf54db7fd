from __future__ import annotations

from typing import Sequence

from chalicelib.domain.models import Event, Trajectory
from chalicelib.domain.review import Review, review_by_rules


class DeterministicReviewer:
    """``ports.Reviewer`` without an LLM: the rule-based review of ``domain.review``."""

    def review(self, traj: Trajectory, events: Sequence[Event], kind: str) -> Review:
        return review_by_rules(traj, events, kind)
