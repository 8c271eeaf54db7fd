"""Render recalled lessons as one block of text an agent puts in its prompt."""
from __future__ import annotations

import re
from typing import Sequence

from .models import Hit

HEADER = "<hindsight>\nLessons from your past runs of similar tasks (most relevant first):"
FOOTER = "</hindsight>"
_TAG = re.compile(r"<(\s*/?\s*)hindsight", re.I)


def _defused(text: str) -> str:
    """Lesson text (an LLM's or a writer's) must not open or close the block it sits in."""
    return _TAG.sub(lambda m: "<" + m[1].strip() + " hindsight", text)


def render_advice(hits: Sequence[Hit], max_items: int) -> str:
    """A marked block of second-person advice; empty when there is nothing worth saying.

    Lessons learned from failures that match closely are flagged as warnings.
    """
    if not hits:
        return ""
    lines = [HEADER]
    for n, hit in enumerate(hits[:max_items], start=1):
        exp = hit.experience
        warn = "WARNING: " if exp.polarity == "warning" and hit.explanation.semantic >= 0.5 else ""
        lines.append(f"{n}. {warn}{_defused(exp.advice.strip())}")
    lines.append(FOOTER)
    return "\n".join(lines)
