"""GET /v1/stats as a bounded job (services.maintenance.tenant_stats): what one request reads does
not grow with the tenant; the counts of a large tenant come from a pass over several requests."""
from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from chalicelib.domain.models import ExperienceStatus
from chalicelib.services import ingest
from chalicelib.services.maintenance import agents, tenant_stats
from tests.support.builders import experience
from tests.support.fakes import FakeClock, fake_deps

BUDGET = 100


class Counting:
    """Wraps a store: counts the calls of each method and the items the listings return."""

    def __init__(self, inner) -> None:
        self.inner, self.calls, self.items = inner, {}, 0

    def __getattr__(self, name):
        method = getattr(self.inner, name)

        def counted(*args, **kwargs):
            self.calls[name] = self.calls.get(name, 0) + 1
            out = method(*args, **kwargs)
            if name == "list":
                self.items += len(out.items)
            elif name == "statuses_page":
                self.items += sum(out[0].values())
            return out

        return counted


def tenant_of(size: int, clock: FakeClock):
    deps = fake_deps(clock=clock, stats_items_per_request=BUDGET)
    statuses = [ExperienceStatus.ACTIVE, ExperienceStatus.ACTIVE, ExperienceStatus.ARCHIVED, ExperienceStatus.FORGOTTEN]
    for i in range(size):
        deps.experiences.put(replace(experience(), tenant_id="t1", experience_id=f"e{i:05d}", status=statuses[i % 4],
                                     created_at=clock.now() - timedelta(days=i % 40), agent_id=f"agent-{i % 3}" if i % 5 else None))
    for i in range(size // 4):
        ingest.start_trajectory(deps, "t1", "agent", "goal", trajectory_id=f"tr{i:05d}")
    deps.experiences, deps.trajectories = Counting(deps.experiences), Counting(deps.trajectories)
    return deps


def reads(deps) -> tuple[int, int, int]:
    return (sum(deps.experiences.calls.values()) + sum(deps.trajectories.calls.values()),
            deps.experiences.items + deps.trajectories.items,
            deps.experiences.calls.get("count_by_status", 0) + deps.trajectories.calls.get("count_by_status", 0))


@pytest.mark.parametrize("size", [1_000, 4_000])
def test_a_stats_request_reads_the_same_whatever_the_tenants_size(size):
    clock = FakeClock()
    deps = tenant_of(size, clock)
    tenant_stats(deps, "t1")
    calls, items, whole_tenant_counts = reads(deps)
    assert items <= BUDGET and calls <= 2 and whole_tenant_counts == 0


def test_a_large_tenant_is_counted_over_several_requests_and_then_exactly():
    clock = FakeClock()
    deps = tenant_of(1_000, clock)
    first = tenant_stats(deps, "t1")
    assert first["complete"] is False
    answers = [first]
    while not answers[-1]["complete"]:
        answers.append(tenant_stats(deps, "t1"))
        assert len(answers) < 50
    # 1,000 lessons and 250 trajectories, 100 items a request
    assert len(answers) == 13
    done = answers[-1]
    assert done["experiences"] == {"active": 500, "archived": 250, "forgotten": 250}
    assert done["trajectories"] == {"open": 250, "finalized": 0, "reviewed": 0, "review_failed": 0}
    assert sum(b["count"] for b in done["freshness_histogram"]) == 500
    assert done["as_of"] == first["as_of"] == clock.now().isoformat()
    # the next request starts a new pass and answers the complete one meanwhile
    clock.advance(minutes=5)
    deps.experiences.put(replace(experience(), tenant_id="t1", experience_id="new", status=ExperienceStatus.ACTIVE))
    again = tenant_stats(deps, "t1")
    assert again["complete"] is True and again["experiences"]["active"] == 500 and again["as_of"] == first["as_of"]


def test_a_tenant_within_the_budget_is_counted_afresh_by_every_request():
    clock = FakeClock()
    deps = tenant_of(40, clock)
    first = tenant_stats(deps, "t1")
    assert first["complete"] is True and first["experiences"]["active"] == 20
    deps.experiences.put(replace(experience(), tenant_id="t1", experience_id="new", status=ExperienceStatus.ACTIVE))
    assert tenant_stats(deps, "t1")["experiences"]["active"] == 21


@pytest.mark.parametrize("size", [1_000, 4_000])
def test_the_agents_listing_reads_the_same_whatever_the_tenants_size_and_then_counts_exactly(size):
    clock = FakeClock()
    deps = tenant_of(size, clock)
    agents(deps, "t1")
    calls, items, whole_tenant_counts = reads(deps)
    assert items <= BUDGET and calls <= 2 and whole_tenant_counts == 0
    for _ in range(100):  # the pass goes on a budget a request
        by_agent, shared = agents(deps, "t1")
    active = [i for i in range(size) if i % 4 in (0, 1)]
    expected = {f"agent-{k}": sum(1 for i in active if i % 5 and i % 3 == k) for k in range(3)}
    assert by_agent == dict(sorted(expected.items(), key=lambda kv: (-kv[1], kv[0])))
    assert shared == sum(1 for i in active if not i % 5)
