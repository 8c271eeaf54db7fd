"""The engine's promises: review triggers, local reviews on anomalies, merge and supersede."""
from __future__ import annotations

from dataclasses import replace

import pytest

from chalicelib.domain.errors import TrajectoryFull
from chalicelib.domain.models import ExperienceStatus
from chalicelib.domain.lesson import situation_key
from chalicelib.ports import IndexFilter
from chalicelib.services import experiences, ingest, review_jobs


def start(deps, tid="tr1", **kw):
    base = dict(tenant_id="t1", trajectory_id=tid, agent_id="a1", goal="Export the monthly report to PDF",
                task_type="operation", tools=["export_report", "render_pdf"])
    ingest.start_trajectory(deps, **(base | kw))


_n = iter(range(1, 10_000))


def call(clock, tool, params, ok=True, error=None) -> dict:
    content = {"tool": tool, "params": params, "status": "ok" if ok else "error"}
    if error:
        content["error"] = error
    return dict(event_id=f"e{next(_n)}", type="tool_call", timestamp=clock.now(), content=content)


def feedback(clock, text, sentiment="negative") -> dict:
    return dict(event_id=f"e{next(_n)}", type="feedback", timestamp=clock.now(), content={"text": text, "sentiment": sentiment})


def run_all(deps):
    while review_jobs.process_review_jobs(deps):
        pass


def test_a_small_clean_success_is_not_reviewed_but_marked_with_why(deps, clock):
    start(deps)
    ingest.append_events(deps, "t1", "tr1", [call(clock, "export_report", {"month": "may"})])
    ingest.finalize(deps, "t1", "tr1", "success", None)
    run_all(deps)
    traj = ingest.get_trajectory(deps, "t1", "tr1")
    assert traj.status.value == "reviewed" and traj.experience_ids == []
    assert traj.review["skipped"].startswith("only 1 event, ")


def test_a_small_failure_always_qualifies(deps, clock):
    start(deps)
    ingest.append_events(deps, "t1", "tr1", [call(clock, "export_report", {"month": "may"})])
    ingest.finalize(deps, "t1", "tr1", "failure", None)
    run_all(deps)
    assert "skipped" not in ingest.get_trajectory(deps, "t1", "tr1").review


def test_two_failed_calls_in_a_row_start_a_local_review_while_the_task_runs(deps, clock):
    start(deps)
    ingest.append_events(deps, "t1", "tr1", [
        call(clock, "render_pdf", {"doc": "r1"}, ok=False, error="FontError: missing font"),
        call(clock, "render_pdf", {"doc": "r1", "font": "DejaVu"}, ok=False, error="FontError: missing font"),
    ])
    assert deps.queue.pending() == 1
    ingest.append_events(deps, "t1", "tr1", [call(clock, "render_pdf", {"doc": "r1", "font": "embedded"})])
    run_all(deps)
    traj = ingest.get_trajectory(deps, "t1", "tr1")
    assert traj.status.value == "open"
    (local,) = traj.review["local"]
    assert local["kind"] == "local" and local["trigger"]
    # the local review saw only the two failures (no fix yet): a lesson not to retry blindly? no:
    # the calls differ, so nothing is learned until the fix arrives; the full review learns it.
    ingest.finalize(deps, "t1", "tr1", "success", None)
    run_all(deps)
    traj = ingest.get_trajectory(deps, "t1", "tr1")
    assert traj.status.value == "reviewed" and traj.review["local"] == [local]
    lessons = [experiences.get_experience(deps, "t1", i) for i in traj.experience_ids]
    assert any("`font`" in e.advice and "embedded" in e.advice for e in lessons)


def test_a_call_repeated_three_times_is_an_anomaly_once(deps, clock):
    start(deps)
    same = {"month": "may"}
    for _ in range(5):
        ingest.append_events(deps, "t1", "tr1", [call(clock, "export_report", same, ok=False, error="Timeout: slow")])
    # calls 2..5 each follow a failure (consecutive failures) and call 3 is also the third repeat:
    # four triggers, coalesced into the one local review queued while none was claimed
    (job,) = deps.queue.claim(clock.now(), 60, limit=100)
    assert job.kind == f"local:{job.triggers[0]}" and len(job.triggers) == 4


def test_anomalies_while_a_local_review_is_queued_join_it_and_a_trajectory_gets_at_most_the_cap(deps, clock):
    deps.max_local_reviews = 2
    start(deps)

    def two_failures():
        return [call(clock, "export_report", {"n": next(counter)}, ok=False, error="Timeout: slow") for _ in range(2)]

    counter = iter(range(1000))
    for _ in range(3):
        ingest.append_events(deps, "t1", "tr1", two_failures())
    (first,) = deps.queue.claim(clock.now(), 60, limit=100)  # one job, the later triggers in it
    assert len(first.triggers) == 5
    for _ in range(3):
        ingest.append_events(deps, "t1", "tr1", two_failures())
    (second,) = deps.queue.claim(clock.now(), 60, limit=100)  # the first is claimed: a second one
    assert second.kind != first.kind
    for _ in range(3):
        ingest.append_events(deps, "t1", "tr1", two_failures())
    assert deps.queue.claim(clock.now(), 60, limit=100) == []  # the cap: no third one
    assert deps.queue.pending() == 2


def test_a_flood_of_failures_queues_a_bounded_number_of_jobs(deps, clock):
    start(deps)
    for batch in range(20):
        ingest.append_events(deps, "t1", "tr1", [
            call(clock, f"tool_{i % 7}", {"n": batch * 100 + i}, ok=False, error=f"E{i}: no") for i in range(100)
        ])
    assert deps.queue.pending() == 1  # 2,000 failures, one coalesced local review pending
    run_all(deps)
    assert len(ingest.get_trajectory(deps, "t1", "tr1").review["local"]) == 1


def test_a_local_review_reads_only_the_windows_of_its_triggers(deps, clock):
    start(deps)
    ingest.append_events(deps, "t1", "tr1", [call(clock, "noop", {"n": i}) for i in range(500)])
    ingest.append_events(deps, "t1", "tr1", [
        call(clock, "render_pdf", {"doc": "r1"}, ok=False, error="FontError: missing font"),
        call(clock, "render_pdf", {"doc": "r1", "font": "x"}, ok=False, error="FontError: missing font"),
    ])
    seen = []
    review = deps.reviewer.review
    deps.reviewer.review = lambda traj, events, kind: seen.append(len(events)) or review(traj, events, kind)
    deps.trajectories.events = None  # reading the whole trajectory would fail
    run_all(deps)
    assert seen == [9]  # the trigger and the 8 events before it


def test_an_append_past_the_events_cap_is_refused_whole_and_duplicates_still_pass(deps, clock):
    deps.max_events_per_trajectory = 5
    start(deps)
    batch = [call(clock, "noop", {"n": i}) for i in range(4)]
    assert ingest.append_events(deps, "t1", "tr1", batch).accepted == 4
    with pytest.raises(TrajectoryFull, match="holds 4 events and may hold 5"):
        ingest.append_events(deps, "t1", "tr1", [call(clock, "noop", {"n": 9}), call(clock, "noop", {"n": 10})])
    assert ingest.get_trajectory(deps, "t1", "tr1").event_count == 4
    assert ingest.append_events(deps, "t1", "tr1", [*batch, call(clock, "noop", {"n": 11})]).accepted == 1


def test_negative_feedback_starts_a_local_review_that_learns_from_it(deps, clock):
    start(deps)
    ingest.append_events(deps, "t1", "tr1", [
        call(clock, "export_report", {"month": "may", "format": "xlsx"}),
        feedback(clock, "I asked for a PDF, not a spreadsheet"),
    ])
    run_all(deps)
    traj = ingest.get_trajectory(deps, "t1", "tr1")
    (eid,) = traj.experience_ids
    assert "not a spreadsheet" in experiences.get_experience(deps, "t1", eid).advice


def test_a_redelivered_batch_triggers_no_second_local_review(deps, clock):
    start(deps)
    batch = [call(clock, "render_pdf", {"a": 1}, ok=False, error="E: x"), call(clock, "render_pdf", {"a": 2}, ok=False, error="E: x")]
    ingest.append_events(deps, "t1", "tr1", batch)
    run_all(deps)
    ingest.append_events(deps, "t1", "tr1", batch)
    assert deps.queue.pending() == 0


def fix_trajectory(deps, clock, tid, font, **kw):
    start(deps, tid, **kw)
    ingest.append_events(deps, "t1", tid, [
        call(clock, "render_pdf", {"doc": tid}, ok=False, error="FontError: missing font"),
        call(clock, "render_pdf", {"doc": tid, "font": font}),
    ])
    ingest.finalize(deps, "t1", tid, "success", None)
    run_all(deps)
    return ingest.get_trajectory(deps, "t1", tid)


def install_fonts_trajectory(deps, clock, tid, **kw):
    """The same failure as ``fix_trajectory``, fixed another way: install fonts, then retry."""
    start(deps, tid, **kw)
    ingest.append_events(deps, "t1", tid, [
        call(clock, "render_pdf", {"doc": "x"}, ok=False, error="FontError: missing font"),
        call(clock, "install_fonts", {}),
        call(clock, "render_pdf", {"doc": "x"}),
    ])
    ingest.finalize(deps, "t1", tid, "success", None)
    run_all(deps)


def test_the_same_lesson_from_many_trajectories_is_one_experience_with_support(deps, clock):
    ids = {i for n in range(4) for i in fix_trajectory(deps, clock, f"tr{n}", "embedded").experience_ids}
    assert len(ids) == 1
    exp = experiences.get_experience(deps, "t1", ids.pop())
    assert exp.support == 4 and exp.confidence > 0.6 and len(exp.sources) == 4


def test_a_near_identical_lesson_is_merged_by_similarity(deps, clock):
    deps.merge_threshold = 0.5
    first = fix_trajectory(deps, clock, "tr1", "embedded").experience_ids
    other = fix_trajectory(deps, clock, "tr2", "embedded", goal="Export the monthly report as a PDF file")
    assert other.experience_ids == first


def test_a_lesson_with_another_fix_for_the_same_situation_supersedes_the_old_one(deps, clock):
    (old_id,) = fix_trajectory(deps, clock, "tr1", "embedded").experience_ids
    install_fonts_trajectory(deps, clock, "tr2")
    assert experiences.get_experience(deps, "t1", old_id).status is ExperienceStatus.ACTIVE  # one run each: a tie
    install_fonts_trajectory(deps, clock, "tr3")
    (new_id,) = ingest.get_trajectory(deps, "t1", "tr3").experience_ids
    old, new = experiences.get_experience(deps, "t1", old_id), experiences.get_experience(deps, "t1", new_id)
    assert old.status is ExperienceStatus.ARCHIVED and old.superseded_by == new_id
    assert new.supersedes == old_id and new.version == old.version + 1 and new.support == 2
    assert deps.index.count("t1") == 1


def test_one_contrary_run_leaves_both_fixes_as_alternatives(deps, clock):
    (old_id,) = fix_trajectory(deps, clock, "tr1", "embedded").experience_ids
    install_fonts_trajectory(deps, clock, "tr2")
    (new_id,) = ingest.get_trajectory(deps, "t1", "tr2").experience_ids
    assert experiences.get_experience(deps, "t1", old_id).status is ExperienceStatus.ACTIVE
    assert experiences.get_experience(deps, "t1", new_id).supersedes is None
    assert deps.index.count("t1") == 2


def test_a_well_supported_lesson_is_not_superseded_by_one_contrary_run(deps, clock):
    (old_id,) = {i for n in range(3) for i in fix_trajectory(deps, clock, f"tr{n}", "embedded").experience_ids}
    install_fonts_trajectory(deps, clock, "other")
    assert experiences.get_experience(deps, "t1", old_id).status is ExperienceStatus.ACTIVE
    assert deps.index.count("t1") == 2  # both fixes stay, as alternatives


def test_a_human_lesson_is_not_superseded_by_an_agent(deps, clock):
    written = experiences.write_experience(
        deps, "t1", "Rendering PDFs", lesson="l", advice="Pass `font` as `embedded` when you call `render_pdf`.",
        tools=["render_pdf"], agent_id="a1", source="human", confidence=0.5,
    ).experience
    # what a review would have keyed it by: the situation it fixes
    human = replace(written, situation_key=situation_key("render_pdf", "FontError"), fingerprint="human-fix")
    deps.experiences.put(human)
    (agent_id,) = fix_trajectory(deps, clock, "tr1", "system").experience_ids
    assert experiences.get_experience(deps, "t1", human.experience_id).status is ExperienceStatus.ACTIVE
    assert experiences.get_experience(deps, "t1", agent_id).supersedes is None


def test_the_same_tool_and_error_in_another_kind_of_task_does_not_supersede(deps, clock):
    (old_id,) = fix_trajectory(deps, clock, "tr1", "embedded").experience_ids
    for tid in ("tr2", "tr3"):  # more support than the old fix: only the task differs
        install_fonts_trajectory(deps, clock, tid, goal="Print shipping labels for the warehouse")
    (new_id,) = ingest.get_trajectory(deps, "t1", "tr3").experience_ids
    assert experiences.get_experience(deps, "t1", new_id).support == 2
    assert experiences.get_experience(deps, "t1", old_id).status is ExperienceStatus.ACTIVE


def test_a_do_not_retry_lesson_never_supersedes_a_fix(deps, clock):
    (fix_id,) = fix_trajectory(deps, clock, "tr1", "embedded").experience_ids
    for n in range(3):
        start(deps, f"retry{n}")
        ingest.append_events(deps, "t1", f"retry{n}", [
            call(clock, "render_pdf", {"doc": "tr1"}, ok=False, error="FontError: missing font") for _ in range(3)
        ])
        ingest.finalize(deps, "t1", f"retry{n}", "failure", None)
        run_all(deps)
    assert experiences.get_experience(deps, "t1", fix_id).status is ExperienceStatus.ACTIVE


def test_a_review_embeds_each_new_lesson_once(deps, clock):
    embedded: list[str] = []
    real = deps.embedder.embed
    deps.embedder.embed = lambda texts: (embedded.extend(texts), real(texts))[1]
    (exp_id,) = fix_trajectory(deps, clock, "tr1", "embedded").experience_ids
    assert embedded == list(experiences.get_experience(deps, "t1", exp_id).embedding_texts())
    assert deps.index.count("t1") == 1


def test_a_lessons_vector_is_the_prototype_of_its_situation_and_tasks(deps, clock):
    import numpy as np

    (exp_id,) = fix_trajectory(deps, clock, "tr1", "proto").experience_ids
    exp = experiences.get_experience(deps, "t1", exp_id)
    assert exp.examples == ["Export the monthly report to PDF"]
    vectors = deps.embedder.embed(list(exp.embedding_texts()))
    prototype = vectors.sum(axis=0) / np.linalg.norm(vectors.sum(axis=0))
    own = deps.index.similarities("t1", prototype, [exp_id])[exp_id]
    text_only = deps.index.similarities("t1", vectors[0], [exp_id])[exp_id]
    assert own > 0.999 and text_only < own


def test_a_failed_full_review_keeps_the_local_lessons_and_a_redrive_reviews_it_once(deps, clock):
    start(deps)
    for _ in range(3):  # the same failing call three times: local reviews learn while the task runs
        ingest.append_events(deps, "t1", "tr1", [call(clock, "export_report", {"month": "may"}, ok=False, error="Timeout: slow")])
    ingest.append_events(deps, "t1", "tr1", [call(clock, "export_report", {"month": "may", "async": True})])
    run_all(deps)
    local_ids = ingest.get_trajectory(deps, "t1", "tr1").experience_ids
    assert local_ids, "the local reviews learned something"

    real_review = deps.reviewer.review

    def full_fails(traj, events, kind):
        if kind == "full":
            raise ConnectionError("LLM endpoint down")
        return real_review(traj, events, kind)

    deps.reviewer.review = full_fails
    deps.review_max_attempts = 2
    ingest.finalize(deps, "t1", "tr1", "success", None)
    for _ in range(2):
        run_all(deps)
        clock.advance(minutes=10)
    traj = ingest.get_trajectory(deps, "t1", "tr1")
    assert traj.status.value == "review_failed"
    assert traj.review["error"] == "review failed: ConnectionError" and traj.review["attempts"] == 2
    assert traj.experience_ids == local_ids and len(traj.review["local"]) >= 1  # what the local reviews learned stays
    (dead,) = review_jobs.failed_reviews(deps)
    assert (dead.trajectory_id, dead.kind, dead.attempts) == ("tr1", "full", 2)
    assert review_jobs.failed_reviews(deps, tenant_id="t2") == []

    deps.reviewer.review = real_review
    assert review_jobs.redrive_failed(deps, trajectory_ids=["other"]) == 0
    assert review_jobs.redrive_failed(deps, tenant_id="t1") == 1
    assert ingest.get_trajectory(deps, "t1", "tr1").status.value == "finalized"
    run_all(deps)
    traj = ingest.get_trajectory(deps, "t1", "tr1")
    assert traj.status.value == "reviewed" and set(local_ids) <= set(traj.experience_ids)
    for exp_id in traj.experience_ids:  # each lesson counts this trajectory once
        assert experiences.get_experience(deps, "t1", exp_id).sources == ["tr1"]
    assert review_jobs.redrive_failed(deps) == 0 and review_jobs.failed_reviews(deps) == []


def push_trajectory(deps, clock, tid, goal, rejected, fixed):
    start(deps, tid, goal=goal, tools=["git_push"])
    ingest.append_events(deps, "t1", tid, [
        call(clock, "git_push", {"remote": "origin", "branch": rejected}, ok=False, error=f"Protected: branch '{rejected}' is protected"),
        call(clock, "git_push", {"remote": "origin", "branch": fixed}),
    ])
    ingest.finalize(deps, "t1", tid, "success", None)
    run_all(deps)
    return ingest.get_trajectory(deps, "t1", tid).experience_ids


def test_literals_every_task_shared_stay_in_the_lesson_and_the_varying_ones_are_abstracted(deps, clock):
    (first,) = push_trajectory(deps, clock, "tr1", "Push this hotfix straight to release/2.x", "release/2.x", "hotfix/login-500")
    one = experiences.get_experience(deps, "t1", first)
    assert "branch '<branch>' is protected" in one.situation  # one task cannot tell a constant from a literal
    assert push_trajectory(deps, clock, "tr2", "Get the footer fix onto release/2.x", "release/2.x", "fix/footer-link") == [first]
    push_trajectory(deps, clock, "tr3", "ship the version bump to release/2.x", "release/2.x", "chore/bump-1.8")
    exp = experiences.get_experience(deps, "t1", first)
    assert exp.support == 3 and "branch 'release/2.x' is protected" in exp.situation + exp.advice
    assert exp.examples[1:] == ["Get the footer fix onto release/2.x", "ship the version bump to release/2.x"]
    assert len(exp.literals) == 1 and "release" not in str(exp.literals)  # the branch, as a digest ("origin" is a word)
    lexical = deps.index.lexical_search("t1", "release/2.x", IndexFilter("a1", None, ()), 5)
    assert [i for i, _ in lexical] == [first]  # the index has the new wording


def test_a_literal_that_varies_between_tasks_stays_a_placeholder(deps, clock):
    (first,) = push_trajectory(deps, clock, "tr1", "Push feature/login to the remote", "feature/login", "feature/login-2")
    push_trajectory(deps, clock, "tr2", "Push fix/typo to the remote", "fix/typo", "fix/typo-2")
    exp = experiences.get_experience(deps, "t1", first)
    assert exp.support == 2 and "branch '<branch>' is protected" in exp.situation
    assert exp.examples == ["Push <branch> to the remote"]


def test_a_trajectory_reviewed_locally_then_fully_does_not_count_as_a_second_task(deps, clock):
    start(deps, goal="Export the report for ACME-7 again")
    for _ in range(2):  # two identical failures: a local review learns "do not retry" while it runs
        ingest.append_events(deps, "t1", "tr1", [call(clock, "export_report", {"client": "ACME-7"}, ok=False, error="Timeout: slow")])
    run_all(deps)
    ingest.finalize(deps, "t1", "tr1", "failure", None)
    run_all(deps)  # the full review finds the same lesson: every literal "recurs" in its own source
    (exp_id,) = ingest.get_trajectory(deps, "t1", "tr1").experience_ids
    exp = experiences.get_experience(deps, "t1", exp_id)
    assert exp.support == 1 and exp.examples == ["Export the report for <client> again"] and exp.anchors == []


def test_a_lesson_every_task_of_which_named_a_constant_is_anchored_to_it(deps, clock):
    (first,) = push_trajectory(deps, clock, "tr1", "Push this hotfix straight to release/2.x", "release/2.x", "hotfix/login-500")
    assert experiences.get_experience(deps, "t1", first).anchors == []
    push_trajectory(deps, clock, "tr2", "Get the footer fix onto release/2.x", "release/2.x", "fix/footer-link")
    exp = experiences.get_experience(deps, "t1", first)
    # the first task's example is written again with what the second showed to be constant
    assert exp.examples == ["Push this hotfix straight to release/2.x", "Get the footer fix onto release/2.x"]
    assert exp.anchors == ["release/2.x"]
    push_trajectory(deps, clock, "tr3", "Land the release commit on release/2.x, please", "release/2.x", "release/1.2")
    assert experiences.get_experience(deps, "t1", first).anchors == ["release/2.x"]
    push_trajectory(deps, clock, "tr4", "Ship the docs fix", "release/2.x", "docs/fix")  # a task that does not say it
    assert experiences.get_experience(deps, "t1", first).anchors == []


def _plate_read(deps, clock, tid, goal, mode, first, fix_params):
    run = {"reader": "SR-04", "plate_id": f"P-{tid}", "mode": mode}
    start(deps, tid, goal=goal, tools=["plate_reader_run", "plate_reader_blank", "plate_reader_set_chamber"])
    ingest.append_events(deps, "t1", tid, [
        call(clock, "plate_reader_run", run, ok=False, error="INSTRUMENT_NOT_READY: optical reference invalid"),
        call(clock, first, fix_params),
        call(clock, "plate_reader_run", run),
    ])
    ingest.finalize(deps, "t1", tid, "success", None)
    run_all(deps)
    (exp_id,) = ingest.get_trajectory(deps, "t1", tid).experience_ids
    return exp_id


def test_look_alike_tasks_with_the_same_tool_and_error_are_told_apart_by_the_kind_their_values_name(deps, clock):
    from chalicelib.services import recall

    warm = _plate_read(deps, clock, "tr1", "Kinetic read of the plate on the reader", "kinetic",
                       "plate_reader_set_chamber", {"reader": "SR-04", "temperature_c": 37})
    blank = _plate_read(deps, clock, "tr2", "Endpoint read of the plate on the reader", "endpoint",
                        "plate_reader_blank", {"reader": "SR-04", "plate_type": "96-flat"})
    assert "Kinetic read" in experiences.get_experience(deps, "t1", warm).situation
    tools = ["plate_reader_run", "plate_reader_blank", "plate_reader_set_chamber"]
    for query, first in (("kinetic read refused: optical reference invalid", warm),
                         ("endpoint read refused: optical reference invalid", blank)):
        hits, _ = recall.recall(deps, "t1", query, agent_id="a1", tools=tools)
        assert [h.experience.experience_id for h in hits][:2] == [first, blank if first == warm else warm]


def test_a_task_done_right_the_first_time_is_learned_from_the_rule_the_agent_stated(deps, clock):
    from chalicelib.services import recall

    tools = ["search_records", "check_legal_hold", "purge_records"]
    start(deps, "tr1", goal="Delete KYC files past retention for accounts closed before 2019", tools=tools)
    note = dict(event_id=f"e{next(_n)}", type="llm_reasoning", timestamp=clock.now(), content={
        "text": "Anything under a legal hold must survive, and one held record aborts the whole purge; check holds first and exclude them."})
    ingest.append_events(deps, "t1", "tr1", [
        note,
        call(clock, "search_records", {"type": "kyc", "closed_before": "2019-01-01"}),
        call(clock, "check_legal_hold", {"batch": "B-2230"}),
        call(clock, "purge_records", {"batch": "B-2230", "exclude_customers": ["CUST-440981"]}),
    ])
    ingest.finalize(deps, "t1", "tr1", "success", None)
    run_all(deps)
    (exp_id,) = ingest.get_trajectory(deps, "t1", "tr1").experience_ids
    hits, advice = recall.recall(deps, "t1", "run the retention clean-up on the old claims archive", agent_id="a1")
    assert hits and hits[0].experience.experience_id == exp_id
    assert "legal hold must survive" in advice and "`check_legal_hold`" in advice
