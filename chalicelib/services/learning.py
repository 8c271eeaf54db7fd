"""Learning from a trajectory: review it, distill the lessons into the experience store, index
them, and record the review on the trajectory.

Order of writes: experiences (the source of truth), then the vector index, then the trajectory's
status. Experience ids are derived from (trajectory, lesson), so a review that crashes half way and
runs again rewrites the same experiences instead of adding new ones.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Collection, Sequence

from ..domain import usage
from ..domain.anomaly import WINDOW, qualifies_for_full_review
from ..domain.distill import (
    draft_to_experience,
    literals_to_keep,
    merge_into,
    passes_quality_gate,
    should_supersede,
    specialized_experience,
    supersede,
)
from ..domain.errors import NotFound, Unavailable
from ..domain.lesson import task_example
from ..domain.models import (
    Event,
    Experience,
    ExperienceStatus,
    ReviewKind,
    ReviewSummary,
    Trajectory,
    TrajectoryStatus,
)
from ..domain.review import Review
from ..domain.vectors import rebased
from ..ports import IndexFilter
from .contrast import contrast_drafts, remember_success
from .credit import credit_trajectory
from .deps import Deps
from .indexing import Embedded, embed_texts, experience_vector, index_still_active


@dataclass
class Distilled:
    stored: dict[str, Experience] = field(default_factory=dict)  # what to put, by id
    experience_ids: list[str] = field(default_factory=list)  # the experiences this review stands behind
    rejected: list[dict[str, Any]] = field(default_factory=list)
    merged: int = 0
    superseded: list[str] = field(default_factory=list)
    vectors: dict[str, Any] = field(default_factory=Embedded)  # text -> vector, each embedded once per review


def _near_duplicate(deps: Deps, exp: Experience, vector) -> Experience | None:
    """An active lesson in exactly the same scope whose text is nearly the same (cosine threshold)."""
    hits = deps.index.search(exp.tenant_id, vector, IndexFilter(exp.agent_id, exp.user_id, tuple(exp.tools)), 5)
    close = [i for i, score in hits if rebased(score, deps.similarity_floor) >= deps.merge_threshold and i != exp.experience_id]
    for candidate in deps.experiences.get_many(exp.tenant_id, close).values():
        if (
            candidate.status is ExperienceStatus.ACTIVE
            and (candidate.agent_id, candidate.user_id) == (exp.agent_id, exp.user_id)
            and set(candidate.tools) == set(exp.tools)
        ):
            return candidate
    return None


FIX_KINDS = ("recovery", "llm")  # lessons that name a fix; "don't retry" and feedback never replace one


def same_situation(deps: Deps, old: Experience, new: Experience, vectors: dict[str, Any]) -> bool:
    """The same tool failing the same way in two different tasks is not a contradiction: the
    tasks themselves must be alike for a new fix to replace an old one. The tasks, not the
    situation texts: those hold the tool and the error both share, which made look-alike tasks
    that need another fix (a unit vs a schedule behind the same rejection) replace each other."""
    olds, news = [e for e in old.examples if e] or [old.situation], [e for e in new.examples if e] or [new.situation]
    embed_texts(deps, [*olds, *news], vectors)
    best = max(float(vectors[a] @ vectors[b]) for a in olds for b in news)
    return rebased(best, deps.similarity_floor) >= deps.supersede_threshold


def _first_example_kept(deps: Deps, exp: Experience, keep: Collection[str]) -> Experience:
    """A lesson from one task could not tell its constants from its literals: once a second task
    shows which literals recur, its one task example is written again keeping them."""
    try:
        first = deps.trajectories.get(exp.tenant_id, exp.sources[0])
        if first.events_expired(deps.clock.now()):
            return exp  # its events are gone (retention): the example it was written with stays
        events = deps.trajectories.events(exp.tenant_id, first.trajectory_id)
    except (NotFound, IndexError):
        return exp
    return replace(exp, examples=[task_example(first, events, keep)])


def _gated(review: Review) -> tuple[list, list[dict[str, Any]]]:
    """The drafts that pass the quality gate, and the rejected ones with the reason."""
    drafts, rejected = [], []
    for draft in review.lessons:
        ok, why = passes_quality_gate(draft)
        if ok:
            drafts.append(draft)
        else:
            rejected.append({"lesson": draft.lesson, "reason": why})
    return drafts, rejected


def lesson_texts(traj: Trajectory, review: Review, now: datetime) -> list[str]:
    """The texts ``distill`` embeds for this review's new lessons: known before anything is
    stored, so that the lessons of several reviews can be embedded in one call."""
    drafts, _ = _gated(review)
    return [t for d in drafts for t in draft_to_experience(d, traj, now).embedding_texts()]


def distill(deps: Deps, traj: Trajectory, review: Review, vectors: dict[str, Any] | None = None) -> Distilled:
    """Quality gate, then merge into a known lesson (same fingerprint, or nearly the same text),
    or store as new; a lesson with another fix for the same situation may supersede the old one.
    ``vectors``: texts already embedded (by text), filled in place with the ones embedded here."""
    now = deps.clock.now()
    out = Distilled()
    drafts, out.rejected = _gated(review)
    if not drafts:
        return out
    fresh = [draft_to_experience(d, traj, now) for d in drafts]
    # The id derives from (tenant, trajectory, lesson): one this trajectory's earlier (local) review
    # already stored. If it has since been forgotten or archived, learning it again would put it
    # back in recall: it stays as it is.
    stored = deps.experiences.get_many(traj.tenant_id, [e.experience_id for e in fresh])
    retired = {i: e.status for i, e in stored.items() if e.status is not ExperienceStatus.ACTIVE}
    for exp in fresh:
        if exp.experience_id in retired:
            out.rejected.append({"lesson": exp.lesson, "reason": f"already learned from this trajectory, now {retired[exp.experience_id].value}"})
    drafts = [d for d, e in zip(drafts, fresh) if e.experience_id not in retired]
    # one this trajectory's earlier review stored and that is still active is written again from
    # the revision it is stored with (its conditional write would fail from none)
    fresh = [replace(e, revision=stored[e.experience_id].revision) if e.experience_id in stored else e
             for e in fresh if e.experience_id not in retired]
    if not fresh:
        return out
    out.vectors = embed_texts(deps, [t for e in fresh for t in e.embedding_texts()], Embedded() if vectors is None else vectors)
    for draft, exp in zip(drafts, fresh):
        # Someone forgot this lesson (same situation, same fix, same scope): learning it again
        # would put it back in recall. Its tombstone records the support instead.
        tomb = deps.experiences.find_forgotten_by_fingerprint(traj.tenant_id, exp.fingerprint, exp.agent_id, exp.user_id) if exp.fingerprint else None
        if tomb is not None:
            tomb = out.stored.get(tomb.experience_id, tomb)
            out.stored[tomb.experience_id] = supported(tomb, exp, now)
            out.rejected.append({"lesson": exp.lesson, "reason": f"forgotten as {tomb.experience_id}: its support is recorded there"})
            continue
        vector = experience_vector(exp, out.vectors)
        existing = deps.experiences.find_active_by_fingerprint(traj.tenant_id, exp.fingerprint or "", exp.agent_id, exp.user_id)
        if existing is None:
            existing = _near_duplicate(deps, exp, vector)
        if existing is not None:
            keep = literals_to_keep(existing, draft, traj.trajectory_id)
            special = specialized_experience(draft, keep, traj, now)
            if special is not None and existing.support == 1:
                existing = _first_example_kept(deps, existing, keep)
            exp = merge_into(existing, special or exp, now, specialized=special is not None)
            out.merged += 1
        if exp.situation_key and draft.kind in FIX_KINDS:
            for old in deps.experiences.find_active_by_situation(traj.tenant_id, exp.situation_key, exp.agent_id, exp.user_id):
                if old.experience_id in out.stored or not should_supersede(old, exp) or not same_situation(deps, old, exp, out.vectors):
                    continue
                demoted, exp = supersede(old, exp, now)
                out.stored[demoted.experience_id] = demoted
                out.superseded.append(demoted.experience_id)
        out.stored[exp.experience_id] = exp
        if exp.experience_id not in out.experience_ids:
            out.experience_ids.append(exp.experience_id)
    return out


def supported(tomb: Experience, exp: Experience, now: datetime) -> Experience:
    """A forgotten lesson that a review would have learned again: its sources and support grow,
    it stays forgotten (out of recall)."""
    added = [s for s in exp.sources if s not in tomb.sources]
    if not added:
        return tomb
    return replace(tomb, sources=[*tomb.sources, *added], support=tomb.support + len(added), updated_at=now)


PERSIST_ATTEMPTS = 10  # distill and write again this many times when another write came first


def _persist(deps: Deps, tenant_id: str, result: Distilled) -> bool:
    """Write what the review distilled in conditional writes, each on the revision its lesson was
    read with; False (nothing written) when another write changed one of them first."""
    exps = list(result.stored.values())
    for start in range(0, len(exps), 100):  # a transaction holds at most 100
        if deps.experiences.put_all_if(exps[start:start + 100]) is None:
            return False
    active = [e for e in exps if e.status is ExperienceStatus.ACTIVE]
    index_still_active(deps, tenant_id, active, known=result.vectors)
    gone = [e.experience_id for e in result.stored.values() if e.status is not ExperienceStatus.ACTIVE]
    deps.index.delete(tenant_id, gone)
    return True


def without_recalls(events: list[Event]) -> list[Event]:
    """What the agent did, without what it was shown (``recall`` events): a reviewer reads the
    decision graph and the order of calls, which recall events are not part of."""
    return [e for e in events if e.type != "recall"]


def _findings(review: Review, result: Distilled) -> dict[str, Any]:
    return review.summary() | {
        "rejected": result.rejected,
        "merged": result.merged,
        "superseded": result.superseded,
        "experience_ids": result.experience_ids,
    }


def review_and_learn(
    deps: Deps, tenant_id: str, trajectory_id: str, kind: ReviewKind, triggers: Sequence[str] = ()
) -> Trajectory:
    """Review the trajectory (all of it, or for a local review the windows of its trigger and the
    ``triggers`` coalesced into it), store what it teaches and record the review on it. Raises
    NotFound for an unknown trajectory."""
    step = prepare_review(deps, tenant_id, trajectory_id, kind, triggers)
    return step if isinstance(step, Trajectory) else step.finish(deps)


@dataclass
class DraftedReview:
    """A review whose lessons are drafted and nothing of it stored yet. ``texts`` are what its new
    lessons need embedded: a worker running several reviews embeds all their texts in one call
    (one request to a remote embedder instead of one per review), then finishes each in turn, so
    each one's merges see the lessons the previous ones stored."""

    traj: Trajectory
    kind: ReviewKind
    review: Review
    texts: list[str]
    local: list[dict[str, Any]] = field(default_factory=list)
    credit: dict[str, Any] | None = None
    triggers: list[str] = field(default_factory=list)

    def finish(self, deps: Deps, vectors: dict[str, Any] | None = None) -> Trajectory:
        """Distill, store and index the lessons, record the review. ``vectors``: texts already
        embedded; the missing ones are embedded here."""
        traj, review = self.traj, self.review
        for _ in range(PERSIST_ATTEMPTS):  # a merge or supersession read a lesson another write changed: again
            result = distill(deps, traj, review, vectors)
            if _persist(deps, traj.tenant_id, result):
                break
            vectors = result.vectors  # what was embedded is not embedded again
        else:
            raise Unavailable(f"the lessons of trajectory {traj.trajectory_id} kept changing while its review was stored")
        if not self.kind.is_full:
            findings = _findings(review, result) | ({"triggers": self.triggers} if len(self.triggers) > 1 else {})
            summary = ReviewSummary(findings=findings, trigger=self.kind.trigger, llm_lessons=review.llm_lessons)
            return deps.trajectories.add_local_review(
                traj.tenant_id, traj.trajectory_id, result.experience_ids, summary.as_dict(), deps.clock.now()
            )
        ids = list(dict.fromkeys([*result.experience_ids, *traj.experience_ids]))
        summary = ReviewSummary(
            findings=_findings(review, result), llm_lessons=review.llm_lessons, local=self.local, credit=self.credit
        )
        return deps.trajectories.save_review(
            traj.tenant_id, traj.trajectory_id, TrajectoryStatus.REVIEWED.value, ids, summary.as_dict(), deps.clock.now()
        )


def prepare_review(
    deps: Deps, tenant_id: str, trajectory_id: str, kind: ReviewKind, triggers: Sequence[str] = (),
    vectors: dict[str, Any] | None = None,
) -> Trajectory | DraftedReview:
    """Everything of a review up to its drafted lessons: the reviewer's verdict. Returns the
    trajectory when there is nothing left to store (already reviewed, not worth a review: recorded
    here, or a local review whose trigger is gone). Raises NotFound for an unknown trajectory.
    ``vectors``: texts already embedded (a worker's cache), for the goals a contrast compares."""
    traj = deps.trajectories.get(tenant_id, trajectory_id)
    if not kind.is_full:
        return _draft_locally(deps, traj, kind, triggers)
    if traj.status is TrajectoryStatus.REVIEWED:
        return traj
    # past its retention its events read as gone, whatever the store still holds (TTL runs late)
    events = [] if traj.events_expired(deps.clock.now()) else deps.trajectories.events(tenant_id, trajectory_id)
    local = ReviewSummary.local_reviews(traj)
    # a small clean success is not worth a review, but the lessons it was served still earn credit
    credit = credit_trajectory(deps, traj, events) or None
    events = without_recalls(events)
    remember_success(deps, traj, events)  # even a run too small to review shows the way its task takes
    qualifies, why = qualifies_for_full_review(events, traj.outcome, deps.review_min_events)
    if not qualifies:
        summary = ReviewSummary(kind=kind.scope, skipped=why, local=local, credit=credit)
        return deps.trajectories.save_review(
            tenant_id, trajectory_id, TrajectoryStatus.REVIEWED.value, traj.experience_ids, summary.as_dict(), deps.clock.now()
        )
    review = deps.reviewer.review(traj, events, kind.scope)
    _meter_llm(deps, traj.tenant_id, review)
    _contrast_across_runs(deps, traj, events, review, vectors)
    return DraftedReview(traj, kind, review, lesson_texts(traj, review, deps.clock.now()), local=local, credit=credit)


def _contrast_across_runs(deps: Deps, traj: Trajectory, events: list[Event], review: Review,
                          vectors: dict[str, Any] | None) -> None:
    """A failed run without any tool error: the lesson of where it left the way that successful
    runs of similar tasks in its scope took (``services.contrast``), beside the reviewer's."""
    drafts, found = contrast_drafts(deps, traj, events, vectors)
    if found:
        review.extra["across_runs"] = found
    known = {d.fingerprint for d in review.lessons}
    review.lessons.extend(d for d in drafts if d.fingerprint not in known)


def _draft_locally(deps: Deps, traj: Trajectory, kind: ReviewKind, triggers: Sequence[str]) -> Trajectory | DraftedReview:
    """Reads only the windows of the triggers (``anomaly.WINDOW`` events before each)."""
    wanted = list(dict.fromkeys([kind.trigger or "", *triggers]))
    if traj.events_expired(deps.clock.now()):
        return traj  # its events are gone (retention): nothing to review
    events = deps.trajectories.events_around(traj.tenant_id, traj.trajectory_id, wanted, WINDOW)
    if not any(e.event_id == kind.trigger for e in events):
        return traj
    review = deps.reviewer.review(traj, without_recalls(events), kind.scope)
    _meter_llm(deps, traj.tenant_id, review)
    return DraftedReview(traj, kind, review, lesson_texts(traj, review, deps.clock.now()), triggers=wanted)


def _meter_llm(deps: Deps, tenant_id: str, review: Review) -> None:
    """The language model's tokens go on the tenant's usage, whatever became of its answer."""
    if deps.meter is not None and review.llm_lessons is not None and review.llm_lessons.tokens:
        deps.meter.record(tenant_id, {usage.LLM_TOKENS: review.llm_lessons.tokens})
