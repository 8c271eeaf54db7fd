"""A newer human lesson that contradicts another: ranked above it where both are served.

People correct what an agent learned: a later decision amends an earlier one, an operator rewrites
a lesson that turned out wrong. When such a lesson is written without saying what it supersedes,
the older one stays active (the writer may want both), but the two must not be served in the old
order: the older lesson, written first and often worded closer to the question, would otherwise
outrank its own correction. Which lessons a new one contradicts is decided when it is written
(``services.experiences.correction_candidates``: the same scope, the same situation, other advice)
and kept on it (``Experience.contradicts``); here it only orders the answer and says why.
"""
from __future__ import annotations

from dataclasses import replace

from .models import Hit, Source


def corrections_first(hits: list[Hit]) -> list[Hit]:
    """``hits`` (best first) with each newer human lesson moved just above the highest-ranked
    served lesson it contradicts, its explanation naming what it corrects; the rest in order."""
    out = list(hits)
    for hit in hits:
        exp = hit.experience
        if exp.source is not Source.HUMAN or not exp.contradicts:
            continue
        pos = {h.experience.experience_id: i for i, h in enumerate(out)}
        here = pos[exp.experience_id]
        served = [i for i in exp.contradicts if i in pos and out[pos[i]].experience.created_at <= exp.created_at]
        if not served:
            continue
        me = replace(out[here], explanation=replace(out[here].explanation, corrects=tuple(served)))
        target = min([here, *(pos[i] for i in served)])
        del out[here]
        out.insert(target, me)
    return out
