"""Render recalled lessons as one block of text an agent puts in its prompt."""
from __future__ import annotations

from typing import Collection, Sequence

from .inert import inert_line
from .models import Hit

HEADER = "<hindsight>\nLessons from your past runs of similar tasks (most relevant first):"
FOOTER = "</hindsight>"


def render_advice(hits: Sequence[Hit], max_items: int, warned: Collection[str] | None = None) -> str:
    """A marked block of second-person advice; empty when there is nothing worth saying.

    Lessons learned from failures that match closely are flagged as warnings; ``warned``, when
    given, names the lessons to flag instead (advise: those whose checks the call breaks). Each
    item is one inert line (`domain.inert`): lesson text comes from what agents sent.
    """
    if not hits:
        return ""
    lines = [HEADER]
    for n, hit in enumerate(hits[:max_items], start=1):
        exp = hit.experience
        if warned is None:
            flagged = exp.polarity == "warning" and hit.explanation.semantic >= 0.5
        else:
            flagged = exp.experience_id in warned
        warn = "WARNING: " if flagged else ""
        lines.append(f"{n}. {warn}{inert_line(exp.advice)}")
    lines.append(FOOTER)
    return "\n".join(lines)
