"""Faults of the serverless pipeline, on the local stack of ``test_aws_stack``: a stream record
whose processing fails in the middle of a batch, and an LLM that times out until an operator
redrives the review. Nothing is lost, nothing is reviewed or stored twice.
"""
from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from chalicelib import lambda_handlers
from chalicelib.adapters.dynamo.errors import StoreUnavailable

from .test_aws_stack import ADMIN, QUERY, local_stack, record, scheduled, status

pytestmark = [pytest.mark.e2e, pytest.mark.opensearch]


def chat_requests(stub) -> int:
    with stub.state.lock:
        return sum(1 for r in stub.state.requests if "messages" in r)


def only_tenant(api) -> str:
    (tenant,) = api.call("GET", "/v1/tenants", ADMIN).json_body["tenants"]
    return tenant["tenant_id"]


def test_a_record_failing_mid_batch_is_the_only_one_retried_and_nothing_is_reviewed_twice(monkeypatch):
    with local_stack(monkeypatch) as (api, poller, stub, deps):
        key = api.tenant()
        for tid in ("t1", "t2", "t3"):
            record(api, key, tid)  # three jobs inserted: three records in one batch

        runs, real_run = [], lambda_handlers.run_due_jobs

        def second_record_fails(*args, **kwargs):
            runs.append(len(runs) + 1)
            if len(runs) == 2:  # the queue is unreachable while the second record is processed
                raise StoreUnavailable("DynamoDB claim failed: ProvisionedThroughputExceededException")
            return real_run(*args, **kwargs)

        monkeypatch.setattr(lambda_handlers, "run_due_jobs", second_record_fails)
        deliveries = []
        real_handler = poller.handler
        poller.handler = lambda event: deliveries.append((event, real_handler(event))) or deliveries[-1][1]
        poller.poll_once()

        (first, response), (retried, retry_response) = deliveries[0], deliveries[1]
        seqs = [r["dynamodb"]["SequenceNumber"] for r in first["Records"]]
        waking = [r["dynamodb"]["SequenceNumber"] for r in first["Records"] if lambda_handlers._wakes_reviewer(r)]
        assert len(waking) == 3  # one per job made pending (moto adds records that wake nothing)
        assert response == {"batchItemFailures": [{"itemIdentifier": waking[1]}]}  # that record only
        # Lambda retries from the failed record on; the one after it was done and is recognised
        assert [r["dynamodb"]["SequenceNumber"] for r in retried["Records"]] == seqs[seqs.index(waking[1]):]
        assert retry_response == {"batchItemFailures": []}
        assert runs == [1, 2, 3, 4]  # three first deliveries, then only the failed record ran again
        assert poller.dead_letters == []

        assert {status(api, key, t)["status"] for t in ("t1", "t2", "t3")} == {"reviewed"}
        assert chat_requests(stub) == 3  # one LLM review per trajectory, none repeated
        (exp,) = api.call("GET", "/v1/experiences", key).json_body["items"]  # the same lesson, merged
        assert sorted(exp["sources"]) == ["t1", "t2", "t3"] and exp["support"] == 3
        assert deps.index.count(only_tenant(api)) == 1


def test_an_llm_timing_out_fails_the_review_visibly_and_a_redrive_after_the_fix_reviews_it_once(monkeypatch):
    with local_stack(monkeypatch, llm_timeout_seconds=0.5) as (api, poller, stub, deps):
        assert deps.reviewer.client.timeout == 0.5  # the setting reaches the client
        key = api.tenant()
        stub.faults(delay=2.0)  # every answer comes after the client stopped waiting
        record(api, key, "t1")
        poller.poll_once()
        assert status(api, key, "t1")["status"] == "finalized"  # attempt 1 timed out; a retry is scheduled

        real_now = deps.clock.now
        for minutes in (10, 30):  # the sweeper runs attempts 2 and 3 when they come due
            deps.clock.now = lambda m=minutes: real_now() + timedelta(minutes=m)
            scheduled(api, "review_sweeper")
        deps.clock.now = real_now
        assert chat_requests(stub) == 3

        traj = status(api, key, "t1")
        assert traj["status"] == "review_failed" and traj["experience_ids"] == []
        assert traj["review"]["attempts"] == 3 and "APITimeoutError" in traj["review"]["error"]
        tenant_id = only_tenant(api)
        (failed,) = api.call("GET", "/v1/maintenance/failed-reviews", ADMIN).json_body["failed"]
        assert (failed["tenant_id"], failed["trajectory_id"], failed["attempts"]) == (tenant_id, "t1", 3)
        assert datetime.fromisoformat(failed["failed_at"]) == datetime.fromisoformat(traj["review"]["failed_at"])
        assert api.call("GET", "/v1/experiences", key).json_body["items"] == []

        stub.faults()  # the LLM is back
        assert api.call("POST", "/v1/maintenance/redrive", ADMIN, {"trajectory_ids": ["t1"]}).json_body == {"redriven": 1}
        assert status(api, key, "t1")["status"] == "finalized"
        poller.poll_once()  # the job's change back to pending wakes the review function
        traj = status(api, key, "t1")
        assert traj["status"] == "reviewed" and traj["review"]["reviewer"].startswith("llm:")
        assert chat_requests(stub) == 4
        (exp,) = api.call("GET", "/v1/experiences", key).json_body["items"]
        assert traj["experience_ids"] == [exp["experience_id"]] and exp["sources"] == ["t1"] and exp["support"] == 1
        hits = api.call("POST", "/v1/recall", key, QUERY).json_body["hits"]
        assert [h["experience"]["experience_id"] for h in hits] == [exp["experience_id"]]
        assert deps.index.count(tenant_id) == 1

        # a second redrive, and the sweeper, find nothing left to do
        assert api.call("POST", "/v1/maintenance/redrive", ADMIN, {}).json_body == {"redriven": 0}
        assert scheduled(api, "review_sweeper") == {"requeued": 0, "ran": 0}
        assert chat_requests(stub) == 4 and poller.dead_letters == []


def test_a_batch_whose_every_record_fails_raises_so_lambda_retries_it_whole(monkeypatch):
    with local_stack(monkeypatch) as (api, poller, stub, deps):
        key = api.tenant()
        for tid in ("t1", "t2"):
            record(api, key, tid)
        batches = []
        poller.handler = lambda event: batches.append(event) or {"batchItemFailures": []}
        poller.poll_once()
        waking = [r for event in batches for r in event["Records"] if lambda_handlers._wakes_reviewer(r)]
        assert len(waking) == 2

        def unreachable(*args, **kwargs):
            raise StoreUnavailable("DynamoDB claim failed: ProvisionedThroughputExceededException")

        real_run = lambda_handlers.run_due_jobs
        monkeypatch.setattr(lambda_handlers, "run_due_jobs", unreachable)
        with pytest.raises(lambda_handlers.StreamBatchFailed, match="all 2 records"):
            lambda_handlers.review_stream({"Records": waking}, None)
        assert {status(api, key, t)["status"] for t in ("t1", "t2")} == {"finalized"}

        monkeypatch.setattr(lambda_handlers, "run_due_jobs", real_run)  # the queue is back: the same batch, delivered again, runs both reviews
        assert lambda_handlers.review_stream({"Records": waking}, None) == {"batchItemFailures": []}
        assert {status(api, key, t)["status"] for t in ("t1", "t2")} == {"reviewed"}
        assert chat_requests(stub) == 2
