"""Use cases on in-memory fakes: what the services promise, independent of any backend."""
from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from types import SimpleNamespace

import pytest

from chalicelib.domain.errors import Conflict, InvalidInput, NotFound, Unauthorized
from chalicelib.domain.models import ExperienceStatus
from chalicelib.services import experiences, ingest, maintenance, recall, review_jobs, tenants


def new_traj(tid="tr1", tenant="t1", **kw) -> dict:
    """The arguments of ``ingest.start_trajectory``."""
    base = dict(tenant_id=tenant, trajectory_id=tid, agent_id="a1", goal="Find a flight from Paris to Rome",
                task_type="query", tools=["search_flights", "lookup_airport"])
    return base | kw


def tool(eid, name, params, ok=True, error=None, clock=None, result=None) -> dict:
    content = {"tool": name, "params": params, "status": "ok" if ok else "error"}
    if error:
        content["error"] = error
    if result is not None:
        content["result"] = result
    return dict(event_id=eid, type="tool_call", timestamp=clock.now(), content=content)


def record_flight_lesson(deps, clock, tid="tr1", tenant="t1", **kw):
    ingest.start_trajectory(deps, **new_traj(tid, tenant, **kw))
    ingest.append_events(deps, tenant, tid, [
        tool("1", "search_flights", {"from": "Paris"}, ok=False, error="InvalidAirport: IATA code expected", clock=clock),
        tool("2", "lookup_airport", {"city": "Paris"}, clock=clock, result={"code": "CDG"}),
        tool("3", "search_flights", {"from": "CDG"}, clock=clock),
    ])
    ingest.finalize(deps, tenant, tid, "success", None)
    while review_jobs.process_review_jobs(deps):
        pass
    return ingest.get_trajectory(deps, tenant, tid)


def test_finalize_queues_a_review_and_wakes_the_worker(deps, clock):
    woken = []
    deps.review_notifier = SimpleNamespace(notify=lambda: woken.append(True))
    ingest.start_trajectory(deps, **new_traj())
    ingest.finalize(deps, "t1", "tr1", "success", None)
    assert deps.queue.pending() == 1 and woken == [True]


def test_ingest_never_reviews_by_itself(deps, clock):
    ingest.start_trajectory(deps, **new_traj())
    ingest.append_events(deps, "t1", "tr1", [tool("1", "x", {}, ok=False, error="E: e", clock=clock)])
    assert deps.queue.pending() == 0
    assert ingest.get_trajectory(deps, "t1", "tr1").status.value == "open"


def test_a_reviewed_trajectory_lists_the_experiences_it_produced(deps, clock):
    traj = record_flight_lesson(deps, clock)
    assert traj.status.value == "reviewed" and len(traj.experience_ids) == 1
    exp = experiences.get_experience(deps, "t1", traj.experience_ids[0])
    assert exp.sources == ["tr1"] and "lookup_airport" in exp.advice and deps.index.count("t1") == 1


def test_a_failing_dependency_is_retried_then_dead_lettered_with_the_reason(deps, clock):
    calls = {"n": 0}
    real_embed = deps.embedder.embed

    def flaky(texts):
        calls["n"] += 1
        raise ConnectionError("embedding service down")

    deps.embedder.embed = flaky
    deps.review_max_attempts = 3
    ingest.start_trajectory(deps, **new_traj())
    ingest.append_events(deps, "t1", "tr1", [
        tool("1", "search_flights", {"from": "Paris"}, ok=False, error="InvalidAirport: x", clock=clock),
        tool("2", "search_flights", {"from": "CDG"}, clock=clock),
    ])
    ingest.finalize(deps, "t1", "tr1", "success", None)
    for _ in range(3):
        review_jobs.process_review_jobs(deps)
        clock.advance(minutes=10)
    traj = ingest.get_trajectory(deps, "t1", "tr1")
    assert traj.status.value == "review_failed" and traj.review["error"] == "review failed: ConnectionError"
    assert "embedding service down" in review_jobs.failed_reviews(deps)[0].error  # the operator sees the text
    assert calls["n"] == 3
    # the experience row was written before the index failed: the store stays the truth, and a
    # redrive by an operator finishes the job without a second experience
    deps.embedder.embed = real_embed
    assert review_jobs.redrive_failed(deps) == 1
    review_jobs.process_review_jobs(deps)
    traj = ingest.get_trajectory(deps, "t1", "tr1")
    assert traj.status.value == "reviewed"
    assert len(experiences.list_experiences(deps, "t1", None, None, 50, None).items) == 1
    assert deps.index.count("t1") == 1


def test_a_transient_failure_succeeds_on_retry(deps, clock):
    real = deps.embedder.embed
    state = {"fail": True}

    def once(texts):
        if state.pop("fail", False):
            raise TimeoutError("slow")
        return real(texts)

    deps.embedder.embed = once
    ingest.start_trajectory(deps, **new_traj())
    ingest.append_events(deps, "t1", "tr1", [
        tool("1", "search_flights", {"from": "Paris"}, ok=False, error="InvalidAirport: x", clock=clock),
        tool("2", "search_flights", {"from": "CDG"}, clock=clock),
    ])
    ingest.finalize(deps, "t1", "tr1", "success", None)
    review_jobs.process_review_jobs(deps)
    assert ingest.get_trajectory(deps, "t1", "tr1").status.value == "finalized"
    clock.advance(seconds=5)
    review_jobs.process_review_jobs(deps)
    assert ingest.get_trajectory(deps, "t1", "tr1").status.value == "reviewed"


def test_a_job_of_an_unknown_kind_is_dead_lettered_at_once_and_the_trajectory_left_alone(deps, clock):
    ingest.start_trajectory(deps, **new_traj())
    deps.queue.enqueue("t1", "tr1", "quick", clock.now())
    assert review_jobs.process_review_jobs(deps) == 1
    (dead,) = review_jobs.failed_reviews(deps)
    assert (dead.kind, dead.attempts, dead.error) == ("quick", 1, "unknown review kind 'quick'")
    assert ingest.get_trajectory(deps, "t1", "tr1").status.value == "open"


def test_requeue_finds_finalized_trajectories_whose_job_was_lost(deps, clock):
    ingest.start_trajectory(deps, **new_traj())
    deps.trajectories.finalize("t1", "tr1", "success", None, clock.now())  # crash before enqueue
    assert review_jobs.requeue_unreviewed(deps) == 1
    assert review_jobs.process_review_jobs(deps) == 1


def test_recall_ranks_the_closest_lesson_first_and_renders_advice(deps, clock):
    record_flight_lesson(deps, clock)
    experiences.write_experience(
        deps, "t1", "Sending invoices by email", lesson="Attach the PDF",
        advice="Attach the invoice PDF before calling send_email.", tools=["send_email"], source="agent", confidence=0.5,
    )
    hits, advice = recall.recall(deps, "t1", "search flights from Paris airport", agent_id="a1")
    assert "lookup_airport" in hits[0].experience.advice
    assert advice.startswith("<hindsight>") and "lookup_airport" in advice


def test_recall_never_returns_what_the_store_says_is_gone(deps, clock):
    traj = record_flight_lesson(deps, clock)
    exp = deps.experiences.get("t1", traj.experience_ids[0])
    deps.experiences.put(replace(exp, status=ExperienceStatus.ARCHIVED))  # index not told (a crash)
    hits, _ = recall.recall(deps, "t1", "search flights", agent_id="a1")
    assert hits == []


def test_recall_is_scoped_to_the_tenant(deps, clock):
    record_flight_lesson(deps, clock, tenant="t1")
    hits, advice = recall.recall(deps, "t2", "search flights from Paris", agent_id="a1")
    assert hits == [] and advice == ""


def test_feedback_that_keeps_failing_archives_and_unindexes(deps, clock):
    traj = record_flight_lesson(deps, clock)
    eid = traj.experience_ids[0]
    for _ in range(8):
        exp = experiences.feedback(deps, "t1", eid, "failed")
    assert exp.status is ExperienceStatus.ARCHIVED and deps.index.count("t1") == 0
    with pytest.raises(NotFound):
        experiences.feedback(deps, "t2", eid, "adopted")


def test_forget_is_final_and_idempotent(deps, clock):
    traj = record_flight_lesson(deps, clock)
    eid = traj.experience_ids[0]
    experiences.forget(deps, "t1", eid, "wrong")
    again = experiences.forget(deps, "t1", eid, "again")
    # the first reason stays first; a new one is recorded after it, a repeated one adds nothing
    assert again.status is ExperienceStatus.FORGOTTEN and again.status_reason == "wrong; also: again"
    assert experiences.forget(deps, "t1", eid, "again").status_reason == "wrong; also: again"
    with pytest.raises(Conflict):
        experiences.feedback(deps, "t1", eid, "adopted")


def test_a_tombstone_keeps_the_first_reason_and_the_latest_ones_only(deps, clock):
    eid = record_flight_lesson(deps, clock).experience_ids[0]
    experiences.forget(deps, "t1", eid, "first")
    for n in range(1000):  # 1,000 forgets made a 1 MB reason
        last = experiences.forget(deps, "t1", eid, f"reason {n} " + "x" * 900)
    reasons = last.status_reason.split(experiences.ALSO)
    assert len(reasons) == experiences.MAX_REASONS and reasons[0] == "first"
    assert reasons[-1].startswith("reason 999 ") and reasons[1].startswith("reason 991 ")
    assert len(last.status_reason) < 10_000


def test_a_review_that_would_learn_a_forgotten_lesson_again_adds_its_support_to_the_tombstone(deps, clock):
    eid = record_flight_lesson(deps, clock, "tr1").experience_ids[0]
    experiences.forget(deps, "t1", eid, "wrong")
    again = record_flight_lesson(deps, clock, "tr2")  # the same failure, the same fix, the same scope
    tomb = deps.experiences.get("t1", eid)
    assert tomb.status is ExperienceStatus.FORGOTTEN and tomb.status_reason == "wrong"
    assert tomb.sources == ["tr1", "tr2"] and tomb.support == 2
    assert again.experience_ids == []
    assert any(r["reason"].startswith(f"forgotten as {eid}") for r in again.review["rejected"])
    assert deps.experiences.count_by_status("t1") == {"forgotten": 1}
    hits, _ = recall.recall(deps, "t1", "search flights from Paris", agent_id="a1", tools=["search_flights"])
    assert hits == []


def test_a_review_merging_into_a_lesson_forgotten_meanwhile_leaves_it_forgotten(deps, clock):
    """The merge read the lesson active; the forget came before its write. The merge is done
    again from a fresh read: the tombstone gets the support, nothing comes back."""
    eid = record_flight_lesson(deps, clock, "tr1").experience_ids[0]
    real = deps.experiences.find_active_by_fingerprint

    def forgotten_after_the_read(*args):
        found = real(*args)
        if found is not None and found.experience_id == eid:
            experiences.forget(deps, "t1", eid, "wrong")  # lands between the merge's read and its write
        return found

    deps.experiences.find_active_by_fingerprint = forgotten_after_the_read
    record_flight_lesson(deps, clock, "tr2")
    tomb = deps.experiences.get("t1", eid)
    assert tomb.status is ExperienceStatus.FORGOTTEN and tomb.support == 2
    assert deps.experiences.count_by_status("t1") == {"forgotten": 1}


def test_a_reindex_whose_page_was_read_before_a_forget_leaves_no_entry_of_it(deps, clock):
    eid = record_flight_lesson(deps, clock).experience_ids[0]
    real = deps.experiences.list

    def forgotten_after_the_read(*args, **kw):
        page = real(*args, **kw)
        if any(e.experience_id == eid for e in page.items):
            experiences.forget(deps, "t1", eid, "wrong")  # its index delete lands before the reindex's upsert
        return page

    deps.experiences.list = forgotten_after_the_read
    maintenance.reindex_tenant(deps, "t1")
    assert deps.index.count("t1") == 0


def test_decay_with_time_archives_unused_lessons_and_keeps_used_ones(deps, clock):
    a = record_flight_lesson(deps, clock, "tr1").experience_ids[0]
    b = record_flight_lesson(deps, clock, "tr2", agent_id="a2").experience_ids[0]
    clock.advance(days=50)
    for _ in range(4):
        experiences.feedback(deps, "t1", b, "succeeded")
    assert maintenance.run_decay(deps).archived == 0
    clock.advance(days=60)
    report = maintenance.run_decay(deps, page_size=1)  # paging must not skip anything
    assert (report.decayed, report.archived) == (2, 1)
    assert deps.experiences.get("t1", a).status is ExperienceStatus.ARCHIVED
    assert deps.experiences.get("t1", b).status is ExperienceStatus.ACTIVE
    assert maintenance.run_decay(deps).archived == 0  # safe to run twice


def test_decay_refuses_a_time_far_from_the_clock_and_a_dry_run_writes_nothing(deps, clock):
    a = record_flight_lesson(deps, clock, "tr1").experience_ids[0]
    b = record_flight_lesson(deps, clock, "tr2", tenant="t2").experience_ids[0]
    with pytest.raises(InvalidInput):
        maintenance.run_decay(deps, clock.now() + timedelta(days=367))
    with pytest.raises(InvalidInput):
        maintenance.run_decay(deps, clock.now() - timedelta(days=2))
    later = clock.now() + timedelta(days=200)
    rehearsal = maintenance.run_decay(deps, later, dry_run=True)
    assert (rehearsal.archived, sorted(rehearsal.archived_ids), rehearsal.dry_run) == (2, sorted([a, b]), True)
    assert deps.experiences.get("t1", a).status is ExperienceStatus.ACTIVE
    assert deps.index.count("t1") == 1
    report = maintenance.run_decay(deps, later, tenant_id="t2")
    assert report.archived_ids == (b,)
    assert deps.experiences.get("t2", b).status is ExperienceStatus.ARCHIVED
    assert deps.experiences.get("t1", a).status is ExperienceStatus.ACTIVE


def test_reindex_rebuilds_a_lost_index_from_the_store(deps, clock):
    record_flight_lesson(deps, clock)
    deps.index = type(deps.index)(deps.embedder.dim)  # the index is lost
    assert maintenance.reindex_tenant(deps, "t1") == 1
    hits, _ = recall.recall(deps, "t1", "search flights", agent_id="a1")
    assert len(hits) == 1


def test_keys_authenticate_their_tenant_and_rotation_revokes_the_old_one(deps):
    tenant, key = tenants.create_tenant(deps, "acme")
    assert tenants.authenticate(deps, f"Bearer {key}") == tenant.tenant_id
    new = tenants.rotate_key(deps, tenant.tenant_id)
    assert tenants.authenticate(deps, f"Bearer {new}") == tenant.tenant_id
    with pytest.raises(Unauthorized):
        tenants.authenticate(deps, f"Bearer {key}")
    with pytest.raises(Unauthorized):
        tenants.authenticate(deps, "Bearer admin-test-key")
    tenants.require_admin(deps, "Bearer admin-test-key")


def test_a_lesson_forgotten_after_a_local_review_stays_forgotten_when_the_full_review_learns_it_again(deps, clock):
    # Found by tests/http/test_isolation_properties.py: the full review derives the same id
    # (tenant, trajectory, fingerprint) as the local review did, and wrote it back as active.
    ingest.start_trajectory(deps, **new_traj())
    failing = {"from": "Paris"}
    ingest.append_events(deps, "t1", "tr1", [
        tool("1", "search_flights", failing, ok=False, error="InvalidAirport: IATA code expected", clock=clock),
        tool("2", "search_flights", failing, ok=False, error="InvalidAirport: IATA code expected", clock=clock),
    ])
    while review_jobs.process_review_jobs(deps):  # the local review of the two failures in a row
        pass
    (eid,) = ingest.get_trajectory(deps, "t1", "tr1").experience_ids
    experiences.forget(deps, "t1", eid, "wrong")
    ingest.finalize(deps, "t1", "tr1", "failure", None)
    while review_jobs.process_review_jobs(deps):
        pass
    assert deps.experiences.get("t1", eid).status is ExperienceStatus.FORGOTTEN
    hits, _ = recall.recall(deps, "t1", "search flights from Paris", agent_id="a1", top_k=50)
    assert eid not in [h.experience.experience_id for h in hits]
