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

from .lexical import terms
from .models import Experience, Hit, Source

# a situation this short ("the API", "deploys") covers too much to say which lesson it rewords
MIN_RESTATED_TERMS = 3


def _terms(text: str) -> set[str]:
    return {t for t in terms(text) if len(t) > 1}  # "'s" is no word of the situation


def restates(new: Experience, old: Experience) -> bool:
    """Whether ``new`` is about ``old``'s situation in other words and answers what ``old``'s advice
    said: every term of the new situation is one of the old's (the same subject, or the same one
    worded more broadly: "Date format of the public API" for "Formatting dates in the public API
    responses"), at least ``MIN_RESTATED_TERMS`` of them, and the two advices share a term neither
    situation holds (the correction names what it replaces: "DD/MM/YYYY" in both). The test of the
    situations' vectors (``learning.same_situation``) misses a rewording that drops or reorders
    words; this one, lexical, misses what is said with other words, and the two are taken together.

    A special case is not corrected by a broader lesson: a new situation narrower than the old
    ("... paid with a gift card" after "Refunding an order") fails on its extra terms, and an old
    lesson whose advice is about what only its own situation says ("Log each failed batch ..." for
    "Adding logs to the ingestion worker for failed batches") stays beside the broader new one."""
    new_terms, old_terms = _terms(new.situation), _terms(old.situation)
    if len(new_terms) < MIN_RESTATED_TERMS or not new_terms <= old_terms:
        return False
    old_said, new_says = _terms(old.advice or old.lesson), _terms(new.advice or new.lesson)
    if old_said & (old_terms - new_terms) or new_says <= old_said:
        return False  # a special case; or advice in the same words (what changed is a number)
    return bool((new_says & old_said) - old_terms)


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
