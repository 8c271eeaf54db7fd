"""Bringing an archived lesson back: archive is cold storage, not a verdict."""
from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from typing import Any

from .errors import Conflict
from .models import Experience, ExperienceStatus

MAX_HISTORY = 50
NEUTRAL = 0.5  # utility and confidence of a lesson nobody has judged yet


def with_note(exp: Experience, note: dict[str, Any]) -> list[dict[str, Any]]:
    """The experience's history with one more note, the oldest dropped past ``MAX_HISTORY``."""
    return [*exp.history, note][-MAX_HISTORY:]


def restored(exp: Experience, now: datetime) -> Experience:
    """Active again, with everything it learned kept (sources, support, counters, version chain).

    Someone chose to bring it back, which is worth a fresh start: freshness is renewed and a
    utility or confidence that sank below neutral is lifted to neutral, or the next decay would
    archive it again at once. The old values stay in the history note. Restoring an active
    lesson changes nothing; a forgotten one stays forgotten (Conflict).
    """
    if exp.status is ExperienceStatus.FORGOTTEN:
        raise Conflict(f"experience {exp.experience_id} is forgotten; it cannot be restored")
    if exp.status is ExperienceStatus.ACTIVE:
        return exp
    note = {
        "at": now.isoformat(),
        "event": "restored",
        "from": exp.status.value,
        "reason": exp.status_reason,
        "utility": exp.utility,
        "confidence": exp.confidence,
        "version": exp.version,
    }
    return replace(
        exp,
        status=ExperienceStatus.ACTIVE,
        status_reason="restored",
        version=exp.version + 1,
        updated_at=now,
        renewed_at=now,
        freshness=1.0,
        utility=max(exp.utility, NEUTRAL),
        confidence=max(exp.confidence, NEUTRAL),
        history=with_note(exp, note),
    )
