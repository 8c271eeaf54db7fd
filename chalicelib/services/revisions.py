"""Every change to a stored lesson is a compare-and-set on the revision it was read with
(``ports.ExperienceStore.put_if``): read, apply the change, write if nobody wrote in between, else
read again and apply the change again. A blind replace wrote back the copy a decay, feedback,
restore, credit or merge had read before an acknowledged forget, and the forget was undone.

Forgotten is terminal: a change applied to a forgotten lesson leaves it forgotten (the change
functions of each use case say how: feedback and restore refuse, decay and credit skip it).
"""
from __future__ import annotations

from typing import Callable, NamedTuple

from ..domain.errors import Unavailable
from ..domain.models import Experience
from .deps import Deps

# Attempts before giving up (503, retry): each lost race means another write landed, so this many
# in a row on one lesson is a storm of writers, not a slow one.
MAX_ATTEMPTS = 25


class Changed(NamedTuple):
    """The outcome of ``change``: the lesson as stored after it, and whether this call wrote it."""

    experience: Experience
    written: bool
    attempts: int


def change(
    deps: Deps,
    tenant_id: str,
    experience_id: str,
    apply: Callable[[Experience], Experience],
    read: Experience | None = None,
) -> Changed:
    """Apply ``apply`` to the stored lesson and write the result conditionally, retried on a
    conflict with a fresh read. ``apply`` returns its argument itself when there is nothing to
    write (then nothing is), and may raise (a Conflict: the change is refused as the lesson now
    stands). ``read``: a copy read earlier (a page of a scan), tried first. NotFound if there is
    no such lesson; Unavailable after ``MAX_ATTEMPTS`` lost races."""
    exp = read if read is not None else deps.experiences.get(tenant_id, experience_id)
    for attempt in range(1, MAX_ATTEMPTS + 1):
        updated = apply(exp)
        if updated is exp:
            return Changed(exp, False, attempt)
        written = deps.experiences.put_if(updated)
        if written is not None:
            return Changed(written, True, attempt)
        exp = deps.experiences.get(tenant_id, experience_id)
    raise Unavailable(f"experience {experience_id} changed {MAX_ATTEMPTS} times while being written; retry")
