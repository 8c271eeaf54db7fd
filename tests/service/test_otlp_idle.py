"""A trace whose root span never arrives is finalized after an idle timeout, by the review queue's
worker (the embedded backend's worker, the aws backend's sweeper run the same ``process_review_jobs``):
on the in-memory fakes and on the embedded backend's SQLite stores."""
from __future__ import annotations

import dataclasses

import pytest

from chalicelib.domain.otlp import Span, assemble
from chalicelib.services import ingest, review_jobs
from chalicelib.services.otlp import record_traces
from chalicelib.services.tenants import create_tenant
from tests.support.fakes import FakeClock, fake_deps

TRACE = "5b8efff798038103d269b633813fc60c"
ROOT = "eee19b7ec3c1b174"


def tool_span(span_id: str, start: int, **attrs) -> Span:
    return Span(trace_id=TRACE, span_id=span_id, parent_span_id=ROOT, name="execute_tool get_weather", start_ns=start * 10**9,
                end_ns=(start + 1) * 10**9, attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather",
                                                        "gen_ai.tool.call.arguments": '{"city": "Lyon"}', **attrs})


ROOT_SPAN = Span(trace_id=TRACE, span_id=ROOT, parent_span_id="", name="invoke_agent weather-bot", start_ns=0, end_ns=9 * 10**9,
                 attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "weather-bot"}, status_code=2)


@pytest.fixture(params=["fakes", "embedded"])
def deps(request, tmp_path):
    clock = FakeClock()
    if request.param == "fakes":
        return fake_deps(clock, otlp_idle_seconds=600)
    from chalicelib.container import build_embedded
    from chalicelib.settings import Settings

    built = build_embedded(Settings(backend="embedded", data_dir=str(tmp_path), embedder="hash", worker=False))
    return dataclasses.replace(built, clock=clock, otlp_idle_seconds=600)


@pytest.fixture()
def tenant(deps):
    return create_tenant(deps, "otel")[0].tenant_id


def send(deps, tenant, *spans):
    return record_traces(deps, tenant, assemble(spans))


def run_jobs(deps) -> None:
    while review_jobs.process_review_jobs(deps, 10):
        pass


def status(deps, tenant):
    traj = ingest.get_trajectory(deps, tenant, TRACE)
    return traj.status.value, traj.outcome


def test_a_trace_without_its_root_is_finalized_once_idle_past_the_timeout(deps, tenant):
    send(deps, tenant, tool_span("0000000000000001", 1))
    deps.clock.advance(seconds=400)
    run_jobs(deps)
    assert status(deps, tenant) == ("open", None)  # not due yet
    send(deps, tenant, tool_span("0000000000000002", 2))  # activity: the timeout counts from here
    deps.clock.advance(seconds=300)
    run_jobs(deps)
    assert status(deps, tenant) == ("open", None)  # 700 s after the first batch, 300 after the last
    deps.clock.advance(seconds=301)
    run_jobs(deps)
    assert status(deps, tenant)[0] in ("finalized", "reviewed")
    assert status(deps, tenant)[1] == "partial"  # no root, no stated outcome
    assert ingest.get_trajectory(deps, tenant, TRACE).event_count == 2


def test_the_outcome_a_span_states_is_the_idle_outcome(deps, tenant):
    send(deps, tenant, tool_span("0000000000000001", 1, **{"hindsight.outcome": "failure"}))
    deps.clock.advance(seconds=601)
    run_jobs(deps)
    assert status(deps, tenant)[1] == "failure"


def test_a_trace_whose_root_arrives_keeps_the_root_status_outcome(deps, tenant):
    send(deps, tenant, tool_span("0000000000000001", 1))
    send(deps, tenant, ROOT_SPAN)
    deps.clock.advance(seconds=601)
    run_jobs(deps)
    assert status(deps, tenant)[1] == "failure"  # the root's ERROR status, untouched by the timeout
    assert deps.queue.pending() == 0


def test_a_trace_ended_in_its_first_batch_queues_no_timeout_and_zero_disables_it(deps, tenant):
    send(deps, tenant, tool_span("0000000000000001", 1), ROOT_SPAN)
    run_jobs(deps)
    assert deps.queue.pending() == 0
    off = dataclasses.replace(deps, otlp_idle_seconds=0)
    other = Span(**{**dataclasses.asdict(tool_span("0000000000000003", 1)), "trace_id": "6b8efff798038103d269b633813fc60c"})
    record_traces(off, tenant, assemble([other]))
    assert off.queue.pending() == 0
    off.clock.advance(days=30)
    run_jobs(off)
    assert ingest.get_trajectory(off, tenant, "6b8efff798038103d269b633813fc60c").status.value == "open"


def test_the_timeout_job_is_queued_once_per_trace(deps, tenant, monkeypatch):
    queued = []
    enqueue = deps.queue.enqueue
    monkeypatch.setattr(deps.queue, "enqueue", lambda *a: queued.append(a[2]) or enqueue(*a))
    for i in range(1, 5):
        send(deps, tenant, tool_span(f"000000000000000{i}", i))
    assert queued == ["otlp_idle"]  # the batches after the first write nothing to the queue
