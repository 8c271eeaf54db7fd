"""Contract of ``ports.ReviewQueue``: leased review jobs that survive crashed workers."""
from __future__ import annotations

from datetime import datetime, timedelta

from chalicelib.ports import DeadJob, ReviewJob

from .conftest import T0

LEASE = 60.0


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def keys(jobs: list[ReviewJob]) -> list[tuple[str, str, str]]:
    return [(j.tenant_id, j.trajectory_id, j.kind) for j in jobs]


def test_an_enqueued_job_is_claimed_with_its_first_attempt(review_queue):
    review_queue.enqueue("t1", "tr1", "full", at(0))
    assert review_queue.claim(at(0), LEASE) == [ReviewJob("t1", "tr1", "full", 1)]


def test_an_empty_queue_has_nothing_to_claim(review_queue):
    assert review_queue.claim(at(0), LEASE) == []
    assert review_queue.pending() == 0


def test_a_job_is_not_claimed_before_it_is_due(review_queue):
    review_queue.enqueue("t1", "tr1", "full", at(10))
    assert review_queue.claim(at(9), LEASE) == []
    assert len(review_queue.claim(at(10), LEASE)) == 1


def test_enqueue_is_idempotent_while_the_job_is_pending(review_queue):
    review_queue.enqueue("t1", "tr1", "full", at(0))
    review_queue.enqueue("t1", "tr1", "full", at(1))
    assert review_queue.pending() == 1
    assert keys(review_queue.claim(at(5), LEASE, limit=10)) == [("t1", "tr1", "full")]


def test_jobs_differ_by_tenant_trajectory_and_kind(review_queue):
    review_queue.enqueue("t1", "tr1", "full", at(0))
    review_queue.enqueue("t1", "tr1", "quick", at(0))
    review_queue.enqueue("t1", "tr2", "full", at(0))
    review_queue.enqueue("t2", "tr1", "full", at(0))
    assert review_queue.pending() == 4
    claimed = review_queue.claim(at(0), LEASE)
    assert sorted(keys(claimed)) == [("t1", "tr1", "full"), ("t1", "tr1", "quick"), ("t1", "tr2", "full"), ("t2", "tr1", "full")]


def test_claim_takes_at_most_limit_jobs_and_leaves_the_rest_for_later(review_queue):
    for i in range(5):
        review_queue.enqueue("t1", f"tr{i}", "full", at(i))
    first = review_queue.claim(at(10), LEASE, limit=2)
    second = review_queue.claim(at(10), LEASE, limit=10)
    assert len(first) == 2 and len(second) == 3
    assert sorted(keys(first + second)) == [("t1", f"tr{i}", "full") for i in range(5)]


def test_claim_takes_the_longest_due_jobs_first(review_queue):
    review_queue.enqueue("t1", "late", "full", at(3))
    review_queue.enqueue("t1", "early", "full", at(1))
    review_queue.enqueue("t1", "middle", "full", at(2))
    assert keys(review_queue.claim(at(5), LEASE, limit=2)) == [("t1", "early", "full"), ("t1", "middle", "full")]


def test_a_leased_job_is_not_claimed_again_before_the_lease_runs_out(review_queue):
    review_queue.enqueue("t1", "tr1", "full", at(0))
    assert len(review_queue.claim(at(0), LEASE)) == 1
    assert review_queue.claim(at(1), LEASE) == []
    assert review_queue.claim(at(LEASE - 1), LEASE) == []


def test_a_job_whose_lease_ran_out_is_claimed_again_with_one_more_attempt(review_queue):
    review_queue.enqueue("t1", "tr1", "full", at(0))
    review_queue.claim(at(0), LEASE)  # the worker crashes
    assert review_queue.claim(at(LEASE + 1), LEASE) == [ReviewJob("t1", "tr1", "full", 2)]
    assert review_queue.claim(at(LEASE + 2), LEASE) == []
    assert review_queue.claim(at(2 * LEASE + 2), LEASE) == [ReviewJob("t1", "tr1", "full", 3)]


def test_enqueue_of_a_leased_job_does_not_hand_it_out_twice(review_queue):
    review_queue.enqueue("t1", "tr1", "full", at(0))
    review_queue.claim(at(0), LEASE)
    review_queue.enqueue("t1", "tr1", "full", at(1))
    assert review_queue.claim(at(2), LEASE) == []


def test_a_completed_job_is_never_claimed_again(review_queue):
    review_queue.enqueue("t1", "tr1", "full", at(0))
    (job,) = review_queue.claim(at(0), LEASE)
    review_queue.complete(job)
    assert review_queue.claim(at(LEASE * 10), LEASE) == []
    assert review_queue.pending() == 0


def test_retry_later_delays_the_job_and_counts_the_next_attempt(review_queue):
    review_queue.enqueue("t1", "tr1", "full", at(0))
    (job,) = review_queue.claim(at(0), LEASE)
    review_queue.retry_later(job, "embedder down", at(1), delay_seconds=30)
    assert review_queue.pending() == 1
    assert review_queue.claim(at(30), LEASE) == []
    assert review_queue.claim(at(31), LEASE) == [ReviewJob("t1", "tr1", "full", 2)]


def test_retry_later_can_make_a_job_due_before_its_lease_would_end(review_queue):
    review_queue.enqueue("t1", "tr1", "full", at(0))
    (job,) = review_queue.claim(at(0), LEASE)
    review_queue.retry_later(job, "transient", at(1), delay_seconds=2)
    assert review_queue.claim(at(3), LEASE) == [ReviewJob("t1", "tr1", "full", 2)]


def test_a_dead_job_is_kept_out_of_the_queue(review_queue):
    review_queue.enqueue("t1", "tr1", "full", at(0))
    (job,) = review_queue.claim(at(0), LEASE)
    review_queue.dead(job, "gave up")
    assert review_queue.pending() == 0
    assert review_queue.claim(at(LEASE * 10), LEASE) == []


def test_pending_counts_jobs_not_yet_finished_leased_ones_included(review_queue):
    for i in range(4):
        review_queue.enqueue("t1", f"tr{i}", "full", at(0))
    assert review_queue.pending() == 4
    a, b, c = review_queue.claim(at(0), LEASE, limit=3)
    assert review_queue.pending() == 4  # one pending, three leased
    review_queue.complete(a)
    review_queue.dead(b, "no")
    review_queue.retry_later(c, "later", at(1), 10)
    assert review_queue.pending() == 2


def test_enqueue_of_a_done_job_makes_it_pending_again(review_queue):
    review_queue.enqueue("t1", "tr1", "full", at(0))
    (job,) = review_queue.claim(at(0), LEASE)
    review_queue.complete(job)
    review_queue.enqueue("t1", "tr1", "full", at(100))
    assert review_queue.pending() == 1
    assert review_queue.claim(at(99), LEASE) == []
    assert keys(review_queue.claim(at(100), LEASE)) == [("t1", "tr1", "full")]


def test_enqueue_of_a_dead_job_redrives_it(review_queue):
    review_queue.enqueue("t1", "tr1", "full", at(0))
    (job,) = review_queue.claim(at(0), LEASE)
    review_queue.dead(job, "gave up")
    review_queue.enqueue("t1", "tr1", "full", at(5))
    assert review_queue.pending() == 1
    assert keys(review_queue.claim(at(5), LEASE)) == [("t1", "tr1", "full")]


def test_a_new_queue_instance_on_the_same_storage_sees_the_jobs(durable_backend):
    first = durable_backend.queue()
    first.enqueue("t1", "tr1", "full", at(0))
    first.enqueue("t1", "tr2", "full", at(0))
    first.claim(at(0), LEASE, limit=1)
    again = durable_backend.reopen().queue()
    assert again.pending() == 2
    assert len(again.claim(at(1), LEASE)) == 1
    assert keys(again.claim(at(LEASE + 0.5), LEASE)) == [("t1", "tr1", "full")]  # its first lease ran out


def test_released_leases_make_leased_jobs_due_at_once(review_queue):
    for i in range(3):
        review_queue.enqueue("t1", f"tr{i}", "full", at(0))
    held, finished = review_queue.claim(at(0), LEASE, limit=2)
    review_queue.complete(finished)
    (never_claimed,) = {"tr0", "tr1", "tr2"} - {held.trajectory_id, finished.trajectory_id}
    # a restart: the previous process died holding ``held``, long before its lease would run out
    assert review_queue.release_leases(at(1)) == 1
    assert review_queue.pending() == 2
    again = {j.trajectory_id: j.attempts for j in review_queue.claim(at(1), LEASE)}
    assert again == {held.trajectory_id: 2, never_claimed: 1}


def test_releasing_leases_with_none_held_releases_nothing(review_queue):
    review_queue.enqueue("t1", "tr1", "full", at(10))
    assert review_queue.release_leases(at(0)) == 0
    assert review_queue.claim(at(5), LEASE) == []  # still not due


def test_a_dead_job_sent_back_by_an_operator_starts_a_fresh_set_of_attempts(review_queue):
    review_queue.enqueue("t1", "tr1", "full", at(0))
    for i in range(3):
        (job,) = review_queue.claim(at(i * 100), LEASE)
        review_queue.retry_later(job, "boom", at(i * 100), 1)
    (job,) = review_queue.claim(at(1000), LEASE)
    review_queue.dead(job, "gave up")
    review_queue.enqueue("t1", "tr1", "full", at(2000))
    assert review_queue.claim(at(2000), LEASE) == [ReviewJob("t1", "tr1", "full", 1)]


# --- dead jobs: what an operator sees and sends round again ----------------------------------


def _kill(queue, tenant_id: str, trajectory_id: str, kind: str, failed_at: float, error: str = "gave up") -> None:
    queue.enqueue(tenant_id, trajectory_id, kind, at(failed_at))
    (job,) = [j for j in queue.claim(at(failed_at), LEASE, limit=50) if (j.trajectory_id, j.kind) == (trajectory_id, kind)]
    queue.dead(job, error, at(failed_at))


def test_dead_jobs_show_the_error_the_attempts_and_when_they_were_given_up(review_queue):
    review_queue.enqueue("t1", "tr1", "full", at(0))
    (job,) = review_queue.claim(at(0), LEASE)
    review_queue.retry_later(job, "timeout", at(1), 1)
    (job,) = review_queue.claim(at(2), LEASE)
    review_queue.dead(job, "APITimeoutError: Request timed out.", at(3))
    assert review_queue.dead_jobs() == [DeadJob("t1", "tr1", "full", 2, "APITimeoutError: Request timed out.", at(3))]


def test_dead_jobs_are_listed_oldest_failure_first_per_tenant_or_for_all(review_queue):
    _kill(review_queue, "t1", "late", "full", 30)
    _kill(review_queue, "t2", "other", "full", 20)
    _kill(review_queue, "t1", "early", "local:e1", 10)
    review_queue.enqueue("t1", "alive", "full", at(0))  # pending: not dead
    assert keys(review_queue.dead_jobs()) == [("t1", "early", "local:e1"), ("t2", "other", "full"), ("t1", "late", "full")]
    assert keys(review_queue.dead_jobs(tenant_id="t1")) == [("t1", "early", "local:e1"), ("t1", "late", "full")]
    assert keys(review_queue.dead_jobs(limit=1)) == [("t1", "early", "local:e1")]
    assert review_queue.dead_jobs(tenant_id="nobody") == []


def test_dead_jobs_never_count_as_pending_nor_get_claimed(review_queue):
    _kill(review_queue, "t1", "tr1", "full", 0)
    assert review_queue.pending() == 0
    assert review_queue.claim(at(10_000), LEASE) == []
    assert review_queue.release_leases(at(10_000)) == 0


def test_a_redriven_job_is_due_at_once_with_a_fresh_set_of_attempts_and_no_longer_dead(review_queue):
    _kill(review_queue, "t1", "tr1", "full", 0)
    _kill(review_queue, "t1", "tr2", "full", 1)
    (first, second) = review_queue.dead_jobs()
    assert review_queue.redrive([first], at(50)) == 1
    assert keys(review_queue.dead_jobs()) == [("t1", "tr2", "full")]
    assert review_queue.pending() == 1
    assert review_queue.claim(at(49), LEASE) == []
    assert review_queue.claim(at(50), LEASE) == [ReviewJob("t1", "tr1", "full", 1)]


def test_redrive_leaves_jobs_that_are_not_dead_alone(review_queue):
    _kill(review_queue, "t1", "tr1", "full", 0)
    (dead,) = review_queue.dead_jobs()
    assert review_queue.redrive([dead], at(5)) == 1
    (job,) = review_queue.claim(at(5), LEASE)
    # redriven twice (two operators, or a retried request): the leased job is not reset
    assert review_queue.redrive([dead], at(6)) == 0
    assert review_queue.claim(at(6), LEASE) == []
    review_queue.complete(job)
    assert review_queue.redrive([dead, DeadJob("t9", "unknown", "full", 1, None, None)], at(7)) == 0
    assert review_queue.pending() == 0 and review_queue.dead_jobs() == []


def test_dead_jobs_survive_a_restart(durable_backend):
    _kill(durable_backend.queue(), "t1", "tr1", "full", 0, "boom")
    again = durable_backend.reopen().queue()
    (dead,) = again.dead_jobs()
    assert (dead.trajectory_id, dead.error, dead.attempts) == ("tr1", "boom", 1)
    assert again.redrive([dead], at(1)) == 1
    assert keys(again.claim(at(1), LEASE)) == [("t1", "tr1", "full")]


def test_local_reviews_coalesce_while_one_is_pending_and_stop_at_the_cap(review_queue):
    assert review_queue.enqueue_local("t1", "tr1", ["e2"], at(0), max_jobs=2)
    assert review_queue.enqueue_local("t1", "tr1", ["e4", "e2"], at(1), max_jobs=2)  # joins the pending one
    assert not review_queue.enqueue_local("t1", "tr1", ["e4"], at(1), max_jobs=2)  # nothing new
    assert review_queue.pending() == 1
    (first,) = review_queue.claim(at(2), LEASE)
    assert (first.kind, first.triggers) == ("local:e2", ("e2", "e4"))
    assert review_queue.enqueue_local("t1", "tr1", ["e9"], at(3), max_jobs=2)  # the first is leased: a new job
    assert review_queue.enqueue_local("t1", "tr2", ["e1"], at(3), max_jobs=2)  # another trajectory, its own count
    review_queue.complete(first)
    (second, other) = sorted(review_queue.claim(at(4), LEASE), key=lambda j: j.trajectory_id)
    assert (second.kind, second.triggers) == ("local:e9", ("e9",)) and other.trajectory_id == "tr2"
    review_queue.complete(second)
    assert not review_queue.enqueue_local("t1", "tr1", ["e20"], at(5), max_jobs=2)  # two had: the cap
    assert review_queue.claim(at(6), LEASE) == []


def test_a_local_job_keeps_at_most_max_triggers(review_queue):
    review_queue.enqueue_local("t1", "tr1", [f"e{i}" for i in range(10)], at(0), max_jobs=5, max_triggers=4)
    review_queue.enqueue_local("t1", "tr1", ["e99"], at(0), max_jobs=5, max_triggers=4)
    (job,) = review_queue.claim(at(1), LEASE)
    assert job.triggers == ("e0", "e1", "e2", "e3")


def test_a_retried_local_job_keeps_its_triggers(review_queue):
    review_queue.enqueue_local("t1", "tr1", ["e1", "e2"], at(0), max_jobs=5)
    (job,) = review_queue.claim(at(0), LEASE)
    review_queue.retry_later(job, "boom", at(1), delay_seconds=5)
    (again,) = review_queue.claim(at(10), LEASE)
    assert (again.kind, again.triggers, again.attempts) == ("local:e1", ("e1", "e2"), 2)


def test_tenants_take_turns_whatever_one_tenant_queued_before(review_queue):
    for i in range(30):
        review_queue.enqueue("flood", f"tr{i:02d}", "full", at(i))
    review_queue.enqueue("quiet", "tr1", "full", at(100))
    review_queue.enqueue("other", "tr1", "full", at(101))
    first = review_queue.claim(at(200), LEASE, limit=1)
    second = review_queue.claim(at(200), LEASE, limit=1)
    third = review_queue.claim(at(200), LEASE, limit=1)
    # each of the three tenants is served once before any is served twice, the oldest due first
    assert sorted(j.tenant_id for j in first + second + third) == ["flood", "other", "quiet"]
    assert [j.trajectory_id for j in first + second + third if j.tenant_id == "flood"] == ["tr00"]
    batch = review_queue.claim(at(200), LEASE, limit=4)
    assert [j.tenant_id for j in batch] == ["flood"] * 4  # only one tenant left with due jobs
    review_queue.enqueue("quiet", "tr2", "full", at(200))
    nxt = review_queue.claim(at(200), LEASE, limit=2)
    assert [j.tenant_id for j in nxt] == ["quiet", "flood"]  # served less recently than the flood
    assert review_queue.pending() == 33


def test_a_claim_of_several_interleaves_the_tenants(review_queue):
    for i in range(5):
        review_queue.enqueue("a", f"tr{i}", "full", at(i))
    review_queue.enqueue("b", "tr1", "full", at(50))
    review_queue.enqueue("b", "tr2", "full", at(51))
    claimed = review_queue.claim(at(60), LEASE, limit=4)
    assert sorted(j.tenant_id for j in claimed) == ["a", "a", "b", "b"]
