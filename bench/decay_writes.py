"""What a decay pass writes, and a pass over many tenants spread over runs within their budget.

    python -m bench.decay_writes                      # both backends, default sizes
    python -m bench.decay_writes --backend dynamo --tenants 200 --per-tenant 20 --stale 0.1

For each backend (``dynamo``: the DynamoDB stores on a local moto server, every request counted
by botocore's event hooks; ``embedded``: SQLite, every statement counted by its trace callback),
the same lessons are seeded twice: ``--tenants`` x ``--per-tenant`` lessons created 120 days
ago, a ``--stale`` share of them never renewed since (they are due for archiving), the others
renewed yesterday. On one copy runs the decay as it was (a put of every active lesson whose
freshness changed: every one of them, every run), on the other the decay as it is (a conditional
write per archive, nothing else). It prints the lesson writes of each against the archives.

Then the scheduled pass (``services.maintenance.run_decay_pass``) runs on the second copy's
lessons seeded again with ``--budget`` seconds per invocation (its remaining time going down
with the wall clock, ``--reserve`` kept back), until the pass completes: the invocations it took,
each one's time against its budget, and whether every tenant was reached.

With ``--fan-out`` (DynamoDB on moto, and moto's SQS), the pass as the cloud runs it: the
schedule sends one message per tenant to a queue (``fan_out_decay_pass``), and the decay worker
(``lambda_handlers.decay_worker``, fed ten messages at a time as the event source mapping would)
decays each tenant from its own checkpoint within ``--budget`` seconds per invocation and
``--tenant-seconds`` per tenant; ``--big`` lessons go to one more tenant, which must span
invocations. It prints the invocations, the SQS and DynamoDB requests, and whether every lesson
was read once and every tenant with lessons due archived in:

    python -m bench.decay_writes --backend dynamo --fan-out --pass-tenants 200 --big 400
"""
from __future__ import annotations

import argparse
import sqlite3
import tempfile
import time
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, Callable

from chalicelib.domain.models import Experience, ExperienceStatus
from chalicelib.domain.scoring import decay
from chalicelib.services import maintenance
from tests.support.fakes import FakeClock, InMemoryVectorIndex, fake_deps

NOW = datetime(2026, 6, 1, tzinfo=timezone.utc)
WRITES = {"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems"}


def lesson(tenant: int, i: int, stale: bool) -> Experience:
    created = NOW - timedelta(days=120)
    return Experience(
        tenant_id=f"t{tenant:05d}", experience_id=f"x{i:05d}", situation="A weather question without a city.",
        action="called get_weather", result="MissingParameter: city", lesson="Ask for the city first.",
        advice="Call `ask_user` before `get_weather` and pass what it returns as `city`.",
        created_at=created, updated_at=created, renewed_at=created if stale else NOW - timedelta(days=1),
        tools=["get_weather", "ask_user"], task_type="query", fingerprint=f"fp{i}", situation_key=f"sk{i}",
    )


def seed(store: Any, tenants: int, per_tenant: int, stale: float) -> tuple[int, set[int]]:
    """The lessons; how many are due for archiving, and the tenants that have some."""
    every = max(1, round(1 / stale)) if stale > 0 else 0
    due, batch, due_tenants = 0, [], set()
    for t in range(tenants):
        for i in range(per_tenant):
            is_stale = every > 0 and (t * per_tenant + i) % every == 0
            due += is_stale
            if is_stale:
                due_tenants.add(t)
            batch.append(lesson(t, i, is_stale))
            if len(batch) == 25:
                store.put_all(batch)
                batch = []
    if batch:
        store.put_all(batch)
    return due, due_tenants


@dataclass
class Counter:
    lesson_writes: int = 0
    other_writes: int = 0
    reads: int = 0


class Backend:
    name: str
    counter: Counter

    def store(self) -> Any: ...
    def checkpoints(self) -> Any: ...
    def close(self) -> None: ...


class DynamoBackend(Backend):
    name = "dynamo (moto)"

    def __init__(self) -> None:
        from chalicelib.adapters.dynamo.models import DynamoConfig, DynamoTables
        from devtools.moto_server import CREDENTIALS, REGION, moto_endpoint

        self.tables = DynamoTables(DynamoConfig(prefix=f"b{uuid.uuid4().hex[:8]}-", region=REGION, host=moto_endpoint(),
                                                **CREDENTIALS))
        self.tables.create("experiences", "checkpoints")
        self.counter = Counter()
        experiences = self.tables.config.prefix + "experiences"

        def count(model: Any, params: dict, **_: Any) -> None:
            op = model.name
            if op in WRITES:
                tables = [i for item in params.get("TransactItems", []) for i in item.values()]
                names = {t["TableName"] for t in tables} if tables else {params.get("TableName")}
                if experiences in names:
                    self.counter.lesson_writes += 1
                else:
                    self.counter.other_writes += 1
            elif op in ("Query", "GetItem", "BatchGetItem"):
                self.counter.reads += 1

        self.tables.connection.client.meta.events.register("before-parameter-build.dynamodb", count)

    def store(self) -> Any:
        from chalicelib.adapters.dynamo.stores import DynamoExperienceStore

        return DynamoExperienceStore(self.tables)

    def checkpoints(self) -> Any:
        from chalicelib.adapters.dynamo.stores import DynamoCheckpoints

        return DynamoCheckpoints(self.tables)

    def close(self) -> None:
        self.tables.delete()


class EmbeddedBackend(Backend):
    name = "embedded (SQLite)"

    def __init__(self) -> None:
        from chalicelib.adapters.embedded.db import SqliteDatabase

        self.dir = tempfile.TemporaryDirectory()
        self.db = SqliteDatabase(f"{self.dir.name}/hindsight.db")
        self.counter = Counter()

        def trace(sql: str) -> None:
            head = sql.lstrip().split(None, 3)
            if head and head[0].upper() in ("INSERT", "UPDATE", "DELETE", "REPLACE"):
                if "experiences" in sql.split("(")[0] or "INTO experiences" in sql:
                    self.counter.lesson_writes += 1
                else:
                    self.counter.other_writes += 1

        self._trace = trace
        self._traced: set[int] = set()

    def _connection(self) -> sqlite3.Connection:
        conn = self.db.connection()
        if id(conn) not in self._traced:
            conn.set_trace_callback(self._trace)
            self._traced.add(id(conn))
        return conn

    def store(self) -> Any:
        from chalicelib.adapters.embedded.stores import SqliteExperienceStore

        self._connection()  # one thread: the writes go through this connection
        return SqliteExperienceStore(self.db)

    def checkpoints(self) -> Any:
        from chalicelib.adapters.embedded.checkpoints import SqliteCheckpoints

        return SqliteCheckpoints(self.db)

    def close(self) -> None:
        self.dir.cleanup()


def decay_before(deps: Any, page_size: int = 500) -> int:
    """The decay as it was: every active lesson whose freshness changed written back whole."""
    cursor, archived = None, 0
    while True:
        page = deps.experiences.scan_active(limit=page_size, cursor=cursor)
        for exp in page.items:
            updated = decay(exp, deps.clock.now(), deps.decay)
            if updated != exp:
                deps.experiences.put(updated)
                archived += updated.status is ExperienceStatus.ARCHIVED
        if page.cursor is None:
            return archived
        cursor = page.cursor


def deps_on(backend: Backend) -> Any:
    return fake_deps(FakeClock(NOW), experiences=backend.store(), index=InMemoryVectorIndex(8), checkpoints=backend.checkpoints())


def compare(make: Callable[[], Backend], args: argparse.Namespace) -> None:
    rows = []
    for label, run in (("before: every changed lesson put", decay_before),
                       ("after: conditional archives only", lambda d: maintenance.run_decay(d).archived)):
        backend = make()
        try:
            due, _ = seed(backend.store(), args.tenants, args.per_tenant, args.stale)
            backend.counter = Counter()
            deps = deps_on(backend)
            started = time.perf_counter()
            archived = run(deps)
            took = time.perf_counter() - started
            rows.append((label, args.tenants * args.per_tenant, due, archived, backend.counter.lesson_writes, took))
        finally:
            backend.close()
    print(f"{'':34} {'active':>7} {'due':>6} {'archived':>9} {'lesson writes':>14} {'writes/archive':>15} {'seconds':>8}")
    for label, active, due, archived, writes, took in rows:
        print(f"{label:34} {active:7d} {due:6d} {archived:9d} {writes:14d} {writes / max(1, archived):15.2f} {took:8.2f}")
    print(f"writes before / after: {rows[0][4] / max(1, rows[1][4]):.1f}x")


def spread(make: Callable[[], Backend], args: argparse.Namespace) -> None:
    backend = make()
    try:
        due, due_tenants = seed(backend.store(), args.pass_tenants, args.pass_per_tenant, args.stale)
        backend.counter = Counter()
        deps = deps_on(backend)
        runs = []
        while len(runs) < 1000:
            deadline = time.monotonic() + args.budget
            started = time.monotonic()
            report = maintenance.run_decay_pass(deps, lambda: deadline - time.monotonic(), reserve_seconds=args.reserve,
                                                page_size=args.page_size)
            runs.append((time.monotonic() - started, report))
            if report.complete:
                break
        state = deps.checkpoints.load(maintenance.DECAY_CHECKPOINT)
        reads = backend.counter.reads
        archived_tenants = {t for t in range(args.pass_tenants)
                            if deps.experiences.list(f"t{t:05d}", status=ExperienceStatus.ARCHIVED, limit=1).items}
        backend.counter.reads = reads
        worst = max(t for t, _ in runs)
        print(f"pass over {args.pass_tenants} tenants x {args.pass_per_tenant} lessons, {args.budget:.1f} s per invocation"
              f" ({args.reserve:.1f} s kept back), pages of {args.page_size}:")
        print(f"  invocations {len(runs)}, complete {runs[-1][1].complete}, longest {worst:.2f} s (budget {args.budget:.1f} s,"
              f" within: {worst <= args.budget})")
        print(f"  examined {sum(r.examined for _, r in runs)} (each lesson once: {sum(r.examined for _, r in runs) == args.pass_tenants * args.pass_per_tenant}),"
              f" archived {sum(r.archived for _, r in runs)} of {due} due, lesson writes {backend.counter.lesson_writes},"
              f" checkpoint writes {backend.counter.other_writes}")
        print(f"  tenants archived in: {len(archived_tenants)} of the {len(due_tenants)} with lessons due"
              f" (the same ones: {archived_tenants == due_tenants}, the last: t{max(due_tenants):05d});"
              f" checkpoint: {state['runs']} runs, cursor {state['cursor']}")
    finally:
        backend.close()


def fan_out(args: argparse.Namespace) -> None:
    """The fanned-out pass on moto: DynamoDB stores and an SQS queue."""
    import json

    import boto3

    from chalicelib import lambda_handlers
    from chalicelib.adapters.dynamo.stores import DynamoTenantStore
    from chalicelib.adapters.sqs_queue import SqsWorkQueue
    from chalicelib.domain.models import Tenant
    from chalicelib.settings import Settings
    from devtools.moto_server import CREDENTIALS, REGION, moto_endpoint
    from tests.support.container import installed

    backend = DynamoBackend()
    backend.tables.create("tenants")
    sqs = boto3.client("sqs", region_name=REGION, endpoint_url=moto_endpoint(), **CREDENTIALS)
    url = sqs.create_queue(QueueName=f"bench-decay-{uuid.uuid4().hex[:8]}")["QueueUrl"]
    sqs_requests: dict[str, int] = {}
    sqs.meta.events.register("before-parameter-build.sqs",
                             lambda model, **_: sqs_requests.__setitem__(model.name, sqs_requests.get(model.name, 0) + 1))
    maintenance.CONTINUE_DELAY_SECONDS = 0  # the local queue's delay would only stretch the run
    try:
        due, due_tenants = seed(backend.store(), args.pass_tenants, args.pass_per_tenant, args.stale)
        big = args.pass_tenants  # one more tenant, of --big lessons, every fifth due
        for start in range(0, args.big, 25):
            backend.store().put_all([lesson(big, i, i % 5 == 0) for i in range(start, min(args.big, start + 25))])
        due += len(range(0, args.big, 5))
        due_tenants |= {big} if args.big else set()
        tenants = DynamoTenantStore(backend.tables)
        for t in range(args.pass_tenants + (1 if args.big else 0)):
            tenants.create_tenant(Tenant(f"t{t:05d}", f"t{t:05d}", NOW - timedelta(days=300)), f"hash-{t}")
        backend.counter = Counter()
        deps = fake_deps(FakeClock(NOW), experiences=backend.store(), tenants=tenants, index=InMemoryVectorIndex(8),
                         checkpoints=backend.checkpoints())
        deps.decay_queue = SqsWorkQueue(sqs, url)
        settings = Settings(decay_page_size=args.page_size, decay_reserve_seconds=args.reserve,
                            decay_tenant_seconds=args.tenant_seconds, decay_budget_seconds=args.budget, decay_queue_url=url)
        with installed(deps, settings):
            schedule_runs = 0

            class ScheduleContext:  # the schedule's own 300 s, not the worker's budget
                deadline = time.monotonic() + 300

                def get_remaining_time_in_millis(self) -> int:
                    return int((self.deadline - time.monotonic()) * 1000)

            while True:
                schedule_runs += 1
                if lambda_handlers.decay(ScheduleContext())["complete"]:
                    break
            invocations, longest, examined, archived, continued = 0, 0.0, 0, 0, 0
            while True:
                got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", [])
                if not got:
                    break
                started = time.monotonic()
                answer = lambda_handlers.decay_worker({"Records": [{"messageId": m["MessageId"], "body": m["Body"]}
                                                                   for m in got]})
                longest = max(longest, time.monotonic() - started)
                invocations += 1
                examined, archived, continued = (examined + answer["examined"], archived + answer["archived"],
                                                 continued + answer["continued"])
                failed = {f["itemIdentifier"] for f in answer["batchItemFailures"]}
                sqs.delete_message_batch(QueueUrl=url, Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]}
                                                                for i, m in enumerate(got) if m["MessageId"] not in failed])
        lessons = args.pass_tenants * args.pass_per_tenant + args.big
        steps = {t: json.loads(json.dumps(deps.checkpoints.load(maintenance.TENANT_CHECKPOINT.format(tenant_id=f"t{t:05d}"))))
                 for t in (0, big)}
        archived_tenants = {t for t in range(args.pass_tenants + (1 if args.big else 0))
                            if deps.experiences.list(f"t{t:05d}", status=ExperienceStatus.ARCHIVED, limit=1).items}
        print(f"fan-out over {args.pass_tenants} tenants x {args.pass_per_tenant} lessons + one of {args.big}, "
              f"{args.budget:.1f} s per invocation, {args.tenant_seconds:.1f} s per tenant, pages of {args.page_size}:")
        print(f"  schedule runs {schedule_runs}; worker invocations {invocations} (longest {longest:.2f} s, budget "
              f"{args.budget:.1f} s), continuations {continued}; the big tenant's steps {steps[big]['step'] if args.big else 0}")
        print(f"  examined {examined} (each lesson once: {examined == lessons}), archived {archived} of {due} due; tenants "
              f"archived in {len(archived_tenants)} of {len(due_tenants)} with lessons due (the same: {archived_tenants == due_tenants})")
        print(f"  SQS requests {sum(sqs_requests.values())} ({dict(sorted(sqs_requests.items()))}; the mapping's receives "
              f"and deletes included); DynamoDB reads {backend.counter.reads}, lesson writes {backend.counter.lesson_writes}, "
              f"checkpoint writes {backend.counter.other_writes}")
    finally:
        sqs.delete_queue(QueueUrl=url)
        backend.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--backend", choices=("dynamo", "embedded", "both"), default="both")
    ap.add_argument("--tenants", type=int, default=20)
    ap.add_argument("--per-tenant", type=int, default=50)
    ap.add_argument("--stale", type=float, default=0.05, help="share of the lessons due for archiving")
    ap.add_argument("--pass-tenants", type=int, default=200)
    ap.add_argument("--pass-per-tenant", type=int, default=10)
    ap.add_argument("--budget", type=float, default=10.0, help="seconds per invocation of the pass")
    ap.add_argument("--reserve", type=float, default=1.0)
    ap.add_argument("--page-size", type=int, default=50)
    ap.add_argument("--fan-out", action="store_true", help="also the pass fanned out over an SQS queue (moto)")
    ap.add_argument("--big", type=int, default=400, help="lessons of one more tenant in the fan-out")
    ap.add_argument("--tenant-seconds", type=float, default=1.0, help="seconds per tenant per invocation in the fan-out")
    args = ap.parse_args()
    if args.fan_out:
        print("\n== dynamo (moto) + SQS (moto), fanned out")
        fan_out(args)
        return
    makers: dict[str, Callable[[], Backend]] = {"dynamo": DynamoBackend, "embedded": EmbeddedBackend}
    for name in (("dynamo", "embedded") if args.backend == "both" else (args.backend,)):
        print(f"\n== {makers[name].name}")
        compare(makers[name], args)
        spread(makers[name], args)


if __name__ == "__main__":
    main()
