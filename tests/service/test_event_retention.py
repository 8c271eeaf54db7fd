"""Event retention in the services (fakes): a review after the expiry reads no events, whatever the
store still holds (DynamoDB's TTL deletes days late); a lesson whose source's events expired keeps
the example it was written with."""
from __future__ import annotations

from chalicelib.services import experiences, ingest, review_jobs
from tests.service.test_services import new_traj, record_flight_lesson, tool


def test_a_review_after_the_expiry_reads_no_events_even_those_a_store_still_holds(deps, clock):
    deps.event_retention_days = 1
    ingest.start_trajectory(deps, **new_traj("late"))
    ingest.append_events(deps, "t1", "late", [
        tool("1", "search_flights", {"from": "Paris"}, ok=False, error="InvalidAirport: IATA code expected", clock=clock),
        tool("2", "lookup_airport", {"city": "Paris"}, clock=clock, result={"code": "CDG"}),
        tool("3", "search_flights", {"from": "CDG"}, clock=clock),
    ])
    ingest.finalize(deps, "t1", "late", "success", None)
    clock.advance(days=1, seconds=1)  # the review ran late (a redrive): the events expired meanwhile
    assert len(deps.trajectories.events("t1", "late")) == 3  # not purged yet
    while review_jobs.process_review_jobs(deps):
        pass
    traj = ingest.get_trajectory(deps, "t1", "late")
    assert traj.status.value == "reviewed" and traj.experience_ids == [] and traj.review.get("skipped")
    page = ingest.trajectory_graph(deps, "t1", "late")
    assert page.expired and page.events == [] and page.cursor is None


def test_a_lesson_whose_first_sources_events_expired_keeps_its_example_when_it_merges(deps, clock):
    deps.event_retention_days = 1
    first = record_flight_lesson(deps, clock, "tr1")
    lesson = experiences.get_experience(deps, "t1", first.experience_ids[0])
    clock.advance(days=2)
    second = record_flight_lesson(deps, clock, "tr2")
    merged = experiences.get_experience(deps, "t1", lesson.experience_id)
    assert second.experience_ids == [lesson.experience_id] and merged.sources == ["tr1", "tr2"]
    assert lesson.examples[0] in merged.examples
