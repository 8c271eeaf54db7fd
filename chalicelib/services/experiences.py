"""What was learned: manual writes, reads, forgetting and feedback."""
from __future__ import annotations

import uuid
from dataclasses import replace
from typing import Any, Literal, NamedTuple, Sequence

from ..domain.corrections import restates
from ..domain.distill import corrects, supersede
from ..domain.errors import Conflict, NotFound, Unavailable
from ..domain.models import Experience, ExperienceStatus, Signal, Source
from ..domain.restore import restored
from ..domain.rule_reading import read_rule
from ..domain.scoring import apply_feedback, as_seen_at
from ..ports import IndexFilter, Page
from .deps import Deps
from .indexing import Embedded, embed_texts, experience_vector, index_still_active
from .learning import same_situation
from .revisions import MAX_ATTEMPTS, change

# how many of the nearest lessons are looked at for one a new human lesson may correct
CORRECTION_CANDIDATES = 10


class Written(NamedTuple):
    experience: Experience
    created: bool
    # active lessons of the same scope and situation whose advice the new one contradicts, that it
    # did not supersede: probable corrections, named so that the writer can confirm them
    correction_of: list[str]


def write_experience(
    deps: Deps,
    tenant_id: str,
    situation: str,
    *,
    lesson: str = "",
    advice: str = "",
    action: str = "",
    result: str = "",
    experience_id: str | None = None,
    tags: Sequence[str] = (),
    task_type: str | None = None,
    tools: Sequence[str] = (),
    agent_id: str | None = None,
    user_id: str | None = None,
    source: str = Source.HUMAN.value,
    sources: Sequence[str] = (),
    confidence: float | None = None,
    supersedes: Sequence[str] | Literal["auto"] | None = None,
) -> Written:
    """Store a manual lesson (the lesson and the advice stand for each other when one is missing;
    the confidence defaults to the source's; its call rule is read from its words). A
    client-chosen id makes it idempotent: a repeat returns the stored one, indexed again if
    active: the first attempt may have stored it and failed before indexing it (a lock timeout,
    the index down), and the retry is what makes it recallable.

    ``supersedes``: the ids of lessons this one replaces, in the same tenant and scope (NotFound
    otherwise, as for an id that does not exist; Conflict for a forgotten one or one another lesson
    replaced already); they are archived and chained to it in one atomic write. ``"auto"``: the
    probable corrections (``correction_candidates``) are the ones replaced. The new lesson and
    the replaced ones are written in one conditional write: when another write changed a replaced
    one (or stored the same id) first, all of it is done again from a fresh read."""
    for _ in range(MAX_ATTEMPTS):
        written = _write_once(
            deps, tenant_id, situation, lesson=lesson, advice=advice, action=action, result=result,
            experience_id=experience_id, tags=tags, task_type=task_type, tools=tools, agent_id=agent_id,
            user_id=user_id, source=source, sources=sources, confidence=confidence, supersedes=supersedes,
        )
        if written is not None:
            return written
    raise Unavailable(f"the lessons replaced by {experience_id or 'a new lesson'} kept changing while it was written; retry")


def _write_once(
    deps: Deps,
    tenant_id: str,
    situation: str,
    *,
    lesson: str,
    advice: str,
    action: str,
    result: str,
    experience_id: str | None,
    tags: Sequence[str],
    task_type: str | None,
    tools: Sequence[str],
    agent_id: str | None,
    user_id: str | None,
    source: str,
    sources: Sequence[str],
    confidence: float | None,
    supersedes: Sequence[str] | Literal["auto"] | None,
) -> Written | None:
    """``write_experience`` from one read; None when its conditional write lost a race."""
    now = deps.clock.now()
    if experience_id:
        existing = deps.experiences.get_many(tenant_id, [experience_id]).get(experience_id)
        if existing is not None:
            if existing.status is ExperienceStatus.ACTIVE:
                index_still_active(deps, tenant_id, [existing])
            return Written(existing, False, [])
    origin = Source(source)
    lesson, advice = lesson or advice, advice or lesson
    exp = Experience(
        tenant_id=tenant_id,
        experience_id=experience_id or "exp_" + uuid.uuid4().hex[:24],
        situation=situation,
        action=action,
        result=result,
        lesson=lesson,
        advice=advice,
        created_at=now,
        updated_at=now,
        renewed_at=now,
        tags=list(tags),
        task_type=task_type,
        tools=list(tools),
        agent_id=agent_id,
        user_id=user_id,
        source=origin,
        sources=list(sources),
        confidence=confidence if confidence is not None else origin.default_confidence,
        freshness=1.0,
        rule=read_rule(advice, lesson, situation, tools),  # a person's words: read once, here
    )
    vectors = Embedded()
    found = correction_candidates(deps, exp, vectors) if origin is Source.HUMAN or supersedes == "auto" else []
    olds = found if supersedes == "auto" else _replaced(deps, exp, supersedes or ())
    demoted = []
    for old in olds:
        gone, exp = supersede(old, exp, now)
        demoted.append(gone)
    replaced = {d.experience_id for d in demoted}
    flagged = [c.experience_id for c in found if c.experience_id not in replaced]
    if flagged and origin is Source.HUMAN:
        exp = replace(exp, contradicts=flagged)
    stored = deps.experiences.put_all_if([*demoted, exp])
    if stored is None:
        return None
    exp = stored[-1]
    index_still_active(deps, exp.tenant_id, [exp], known=vectors)
    deps.index.delete(tenant_id, [d.experience_id for d in demoted])
    return Written(exp, True, flagged)


def _replaced(deps: Deps, exp: Experience, ids: Sequence[str]) -> list[Experience]:
    """The lessons ``exp`` is said to replace, checked: each of this tenant and exactly this scope,
    neither forgotten nor replaced by another lesson already."""
    wanted = list(dict.fromkeys(ids))
    found = deps.experiences.get_many(exp.tenant_id, wanted)
    out = []
    for i in wanted:
        old = found.get(i)
        if old is None or (old.agent_id, old.user_id) != (exp.agent_id, exp.user_id) or i == exp.experience_id:
            raise NotFound(f"experience {i} not found in this scope (agent_id={exp.agent_id}, user_id={exp.user_id})")
        if old.status is ExperienceStatus.FORGOTTEN:
            raise Conflict(f"experience {i} is forgotten: it cannot be superseded")
        if old.superseded_by and old.superseded_by != exp.experience_id:
            raise Conflict(f"experience {i} is superseded by {old.superseded_by} already")
        out.append(old)
    return out


def correction_candidates(deps: Deps, exp: Experience, vectors: dict[str, Any]) -> list[Experience]:
    """Active lessons of exactly ``exp``'s scope about the same situation (the test a learned lesson
    must pass to supersede another: ``learning.same_situation``, or the same situation reworded,
    answering what the old advice said: ``corrections.restates``) whose advice differs: what a new
    human lesson probably corrects. ``vectors`` is filled with what was embedded."""
    embed_texts(deps, list(exp.embedding_texts()), vectors)
    hits = deps.index.search(exp.tenant_id, experience_vector(exp, vectors), IndexFilter(exp.agent_id, exp.user_id, ()),
                             CORRECTION_CANDIDATES)
    near = deps.experiences.get_many(exp.tenant_id, [i for i, _ in hits])
    return [
        old for i, _ in hits if (old := near.get(i)) is not None
        and old.status is ExperienceStatus.ACTIVE
        and (old.agent_id, old.user_id) == (exp.agent_id, exp.user_id)
        and corrects(exp, old)
        and (restates(exp, old) or same_situation(deps, old, exp, vectors))
    ]


def _shown(deps: Deps, exp: Experience) -> Experience:
    # the freshness recall scores and stats counts (domain.scoring.current_freshness)
    return as_seen_at(exp, deps.clock.now(), deps.decay.half_life_days)


def get_experience(deps: Deps, tenant_id: str, experience_id: str) -> Experience:
    return _shown(deps, deps.experiences.get(tenant_id, experience_id))


def list_experiences(
    deps: Deps, tenant_id: str, agent_id: str | None, status: str | None, limit: int, cursor: str | None
) -> Page:
    wanted = ExperienceStatus(status) if status else None
    page = deps.experiences.list(tenant_id, agent_id=agent_id, status=wanted, limit=limit, cursor=cursor)
    return replace(page, items=[_shown(deps, e) for e in page.items])


def forget(deps: Deps, tenant_id: str, experience_id: str, reason: str | None) -> Experience:
    """Out of recall for good; kept as a tombstone with its reason for audit.

    Forgetting again is 200 and changes nothing, unless it gives a reason the tombstone does not
    hold yet: that reason is added after the first (``"<first>; also: <second>"``), so the answer
    shows it was recorded and the first reason is never lost. The reasons kept are bounded
    (``MAX_REASONS``: the first and the latest others). Written conditionally: a write that read
    the lesson before the forget cannot put it back.
    """
    now = deps.clock.now()

    def forgotten(exp: Experience) -> Experience:
        if exp.status is not ExperienceStatus.FORGOTTEN:
            return replace(exp, status=ExperienceStatus.FORGOTTEN, status_reason=reason or "forgotten", updated_at=now)
        if reason and reason not in _reasons(exp.status_reason):
            return replace(exp, status_reason=with_reason(exp.status_reason, reason), updated_at=now)
        return exp

    exp = change(deps, tenant_id, experience_id, forgotten).experience
    deps.index.delete(tenant_id, [experience_id])
    return _shown(deps, exp)


ALSO = "; also: "
MAX_REASONS = 10  # on a tombstone: the first and the nine latest (1,000 forgets made a 1 MB reason)


def _reasons(status_reason: str | None) -> list[str]:
    return (status_reason or "").split(ALSO)


def with_reason(status_reason: str | None, reason: str) -> str:
    """The tombstone's reasons with one more: the first is kept, then the latest ones, at most
    ``MAX_REASONS`` in all."""
    first, *others = [*_reasons(status_reason), reason]
    return ALSO.join([first, *others[-(MAX_REASONS - 1):]])


def feedback(deps: Deps, tenant_id: str, experience_id: str, signal: str) -> Experience:
    now = deps.clock.now()

    def judged(exp: Experience) -> Experience:
        if exp.status is ExperienceStatus.FORGOTTEN:
            raise Conflict(f"experience {experience_id} is forgotten")
        return apply_feedback(exp, Signal(signal), now, deps.decay)

    updated = change(deps, tenant_id, experience_id, judged).experience
    if updated.status is not ExperienceStatus.ACTIVE:
        deps.index.delete(tenant_id, [experience_id])
    return _shown(deps, updated)


def restore(deps: Deps, tenant_id: str, experience_id: str) -> Experience:
    """Archived -> active, in recall again; its history kept. A forgotten one: Conflict (also when
    it was forgotten while this restore was being written)."""
    now = deps.clock.now()
    updated = change(deps, tenant_id, experience_id, lambda exp: restored(exp, now)).experience
    if updated.status is ExperienceStatus.ACTIVE:
        index_still_active(deps, tenant_id, [updated])  # also mends an active one the index lost
    return _shown(deps, updated)
