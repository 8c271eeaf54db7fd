"""What one GET /v1/stats reads on DynamoDB, before and after it became a bounded job.

    python -m bench.stats_reads                        # tenants of 500, 2,000 and 5,000 lessons
    python -m bench.stats_reads --sizes 1000,4000 --budget 1000

For each size, one tenant on a local moto server gets that many lessons (half active, a quarter
archived, a quarter forgotten) and a quarter as many trajectories. Then the stats are asked for
as they were computed (a COUNT query per status of lessons and of trajectories, then every active
lesson for the freshness histogram) and as they are (``services.maintenance.tenant_stats``: the
checkpoint, then at most ``--budget`` lessons and trajectories). Every DynamoDB request is counted
by botocore's event hooks, and the items each one examined (``ScannedCount``; 1 per ``GetItem``):
what DynamoDB bills a read by. The job's first requests over a large tenant and the number of
requests its pass takes are printed too.
"""
from __future__ import annotations

import argparse
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

from chalicelib.domain.models import Experience, ExperienceStatus, Trajectory
from chalicelib.domain.scoring import current_freshness
from chalicelib.services import maintenance
from tests.support.fakes import FakeClock, fake_deps

NOW = datetime(2026, 6, 1, tzinfo=timezone.utc)
STATUSES = [ExperienceStatus.ACTIVE, ExperienceStatus.ACTIVE, ExperienceStatus.ARCHIVED, ExperienceStatus.FORGOTTEN]


@dataclass
class Tally:
    requests: int = 0
    items: int = 0


def lesson(i: int) -> Experience:
    created = NOW - timedelta(days=i % 60)
    return Experience(
        tenant_id="t1", experience_id=f"x{i:06d}", situation="A weather question without a city.",
        action="called get_weather", result="MissingParameter: city", lesson="Ask for the city first.",
        advice="Call `ask_user` before `get_weather` and pass what it returns as `city`.",
        created_at=created, updated_at=created, renewed_at=created, tools=["get_weather", "ask_user"], task_type="query",
        status=STATUSES[i % 4],
    )


def stats_before(deps: Any, tenant_id: str, page_size: int = 500) -> dict:
    """The stats as they were computed: whole-tenant counts and every active lesson read."""
    now, histogram, cursor = deps.clock.now(), [0] * maintenance.HISTOGRAM_BUCKETS, None
    while True:
        page = deps.experiences.list(tenant_id, status=ExperienceStatus.ACTIVE, limit=page_size, cursor=cursor)
        for exp in page.items:
            f = current_freshness(exp, now, deps.decay.half_life_days)
            histogram[min(maintenance.HISTOGRAM_BUCKETS - 1, int(f * maintenance.HISTOGRAM_BUCKETS))] += 1
        if page.cursor is None:
            break
        cursor = page.cursor
    return {"experiences": deps.experiences.count_by_status(tenant_id), "trajectories": deps.trajectories.count_by_status(tenant_id),
            "histogram": histogram}


def run(size: int, budget: int) -> None:
    from chalicelib.adapters.dynamo.models import DynamoConfig, DynamoTables
    from chalicelib.adapters.dynamo.stores import DynamoCheckpoints, DynamoExperienceStore, DynamoTrajectoryStore
    from devtools.moto_server import CREDENTIALS, REGION, moto_endpoint

    tables = DynamoTables(DynamoConfig(prefix=f"s{uuid.uuid4().hex[:8]}-", region=REGION, host=moto_endpoint(), **CREDENTIALS))
    tables.create("experiences", "trajectories", "checkpoints")
    try:
        experiences, trajectories = DynamoExperienceStore(tables), DynamoTrajectoryStore(tables)
        lessons = [lesson(i) for i in range(size)]
        for start in range(0, size, 100):
            experiences.put_all(lessons[start:start + 100])
        for i in range(size // 4):
            trajectories.create(Trajectory("t1", f"tr{i:06d}", "agent", "goal", NOW, NOW))
        clock = FakeClock(NOW)
        deps = fake_deps(clock=clock, experiences=experiences, trajectories=trajectories, checkpoints=DynamoCheckpoints(tables),
                         stats_items_per_request=budget)
        tally = Tally()

        def after(parsed: dict, model: Any, **_: Any) -> None:
            tally.requests += 1
            tally.items += int(parsed.get("ScannedCount", 1 if model.name == "GetItem" and parsed.get("Item") else 0))

        tables.connection.client.meta.events.register("after-call.dynamodb", after)
        before = stats_before(deps, "t1")
        old = (tally.requests, tally.items)
        tally.requests = tally.items = 0
        answers = [maintenance.tenant_stats(deps, "t1")]
        first = (tally.requests, tally.items)
        while not answers[-1]["complete"]:
            answers.append(maintenance.tenant_stats(deps, "t1"))
        tally.requests = tally.items = 0
        maintenance.tenant_stats(deps, "t1")  # a request after a complete pass: a new pass under way
        steady = (tally.requests, tally.items)
        done = answers[-1]
        assert {k: v for k, v in done["experiences"].items() if v} == before["experiences"]
        assert {k: v for k, v in done["trajectories"].items() if v} == before["trajectories"]
        assert [b["count"] for b in done["freshness_histogram"]] == before["histogram"]
        print(f"{size:>8,} {size // 4:>7,} | {old[0]:>9} {old[1]:>10,} | {first[0]:>9} {first[1]:>10,} | {steady[0]:>9} {steady[1]:>10,}"
              f" | {len(answers):>6} | {old[1] / max(1, steady[1]):>6.1f}x")
    finally:
        tables.delete()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="500,2000,5000", help="lessons of the tenant, comma-separated")
    parser.add_argument("--budget", type=int, default=1000, help="HINDSIGHT_STATS_ITEMS_PER_REQUEST")
    args = parser.parse_args()
    print(f"stats on DynamoDB (moto): requests and items examined per GET /v1/stats; budget {args.budget} items a request")
    print(f"{'lessons':>8} {'trajs':>7} | {'before:req':>9} {'items':>10} | {'first:req':>9} {'items':>10} |"
          f" {'next:req':>9} {'items':>10} | {'to all':>6} | {'ratio':>7}")
    for size in (int(s) for s in args.sizes.split(",")):
        run(size, args.budget)


if __name__ == "__main__":
    main()
