"""Cold start of the Lambda functions against the code before, in the same run: import of app.py,
import plus the first authenticated ingest, the review worker's import plus its first stream batch.

Usage: .venv/bin/python -m bench.cold_start [--before main] [--runs 15] [--first-runs 9]
       [--review-runs 5] [--importtime-runs 3] [--timeline N [--profile-lines K]] [--no-first] [--no-review]
       [--no-package] [--opensearch-service none|es|aoss] [--secrets]

"before" is the app.py and chalicelib/ of a git ref (``--before``, default ``main``), exported with
``git archive`` into a temporary directory; "after" is the work tree. Every sample is a fresh
interpreter; the samples of every configuration are interleaved round-robin, so the load of this
shared machine hits them alike, and the load averages are printed with the figures.

1. ``import app`` with HINDSIGHT_BACKEND=aws (in-process time), before and after, beside the
   process wall time of ``python -c pass``; also from the unzipped package as infra/ ships it
   (devtools.lambda_package: bytecode inside), and the same without its .pyc files
   (PYTHONDONTWRITEBYTECODE: Lambda's /var/task is read-only, so a zip without bytecode compiles
   every module on every cold start). ``-X importtime`` (after) gives the direct imports of app.py and the self time
   per top-level package.
2. Import plus the first authenticated ingest: ``app.app(api_gateway_event, context)`` as Lambda
   calls it, ``POST /v1/trajectories`` with a tenant's key (it builds the Deps: botocore, pynamodb,
   the DynamoDB stores), then the same call warm. DynamoDB is a moto server in server mode in this
   process (devtools.moto_server): a real HTTP round trip, but on the loopback, not to AWS.
3. The review worker: the import of the handler infra/ deploys for it (each side's
   infra/hindsight_infra/stack.py: ``REVIEW_WORKER_HANDLER``, else app.py's ``review_worker``), then
   ``handler(stream_event, context)`` with the first batch Lambda would deliver after a trajectory
   is finalized: its records are read from the review-jobs table's stream (moto) by
   devtools.stream_poller. The batch runs the job: the LLM
   reviewer against the OpenAI-compatible stub (devtools.openai_stub), embeddings from the stub, the
   lesson written to DynamoDB and to an OpenSearch index (devtools.opensearch_node: OPENSEARCH_URL
   or a node of its own), Powertools idempotency on the record. Each sample gets a trajectory of
   its own; the bench checks that every one ended reviewed. Also the CPU time of the child over the
   import and the batch: the handler's own work, without the servers' (other processes) and without
   the wait for a core that the machine's load adds to the wall times.
   Both (2 and 3) run a third side when the package is built: the unzipped package as shipped
   (bytecode in, botocore trimmed) first on the path, boto3 from the venv (the Lambda runtime's).

4. ``--timeline N``: N more review samples per side with every HTTP request of the child timed at
   urllib3 (count and ms by service and DynamoDB operation, the batch's time outside requests), and
   moto's share of a DynamoDB request: two reads sent again warm after the batch, each timed whole
   and inside urlopen (the rest is botocore's client side, which Lambda pays against DynamoDB too).
   Then the samples' import + first batch split into the time waiting inside requests to moto, to
   the OpenSearch node and to the stub, and the rest (the handler's own). The headline stays the
   measured total of 3.

``--opensearch-service es`` (or aoss) signs the index's requests with SigV4 as in the cloud, with
the dummy credentials (the local node ignores the signature): the default, ``none``, leaves out
the credential look-up a deployed function pays. ``--secrets`` gives the functions the admin key and
the OpenAI key as Secrets Manager ARNs (secrets stored in moto), as infra/ does: the first
``get_settings()`` then reads them, a client and two round trips the default leaves out.

Every child gets the environment its side's infra/ gives every function beside the HINDSIGHT_*
settings (``RUNTIME_ENVIRONMENT`` of stack.py, e.g. PYDANTIC_DISABLE_PLUGINS), the before side's
read from the ref with ``git show``.

Targets printed beside: import <= 150 ms, import + first ingest <= 500 ms, review import + first
batch <= 500 ms. Prints numbers only.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import tempfile
import uuid
import zipfile
from collections import defaultdict
from pathlib import Path
from urllib.parse import urlsplit

from bench._harness import ROOT, export_ref, load_avg, run_child

TARGETS = {"import": 150.0, "first": 500.0, "review": 500.0}
DUMMY_AWS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1",
             "AWS_REGION": "us-east-1", "AWS_ACCOUNT_ID_ENDPOINT_MODE": "disabled"}

IMPORT_ONLY = r"""
import json, resource, sys, time
t0 = time.perf_counter()
import app
t1 = time.perf_counter()
print("RESULT " + json.dumps({"import_ms": (t1 - t0) * 1000, "modules": len(sys.modules),
                              "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""

CONTEXT = r"""
class Context:
    function_name = "hindsight-dev"; memory_limit_in_mb = 1024; aws_request_id = "req"
    invoked_function_arn = "arn:aws:lambda:us-east-1:000000000000:function:hindsight-dev"
    def get_remaining_time_in_millis(self): return 300000
"""

# The API function's cold start: import, then API Gateway proxy events handed to the app object.
FIRST_INGEST = r"""
import json, os, resource, sys, time, uuid
t0 = time.perf_counter()
import app
t1 = time.perf_counter()
""" + CONTEXT + r"""
def event(method, path, body):
    headers = {"content-type": "application/json", "host": "bench.execute-api.us-east-1.amazonaws.com",
               "authorization": "Bearer " + os.environ["BENCH_TENANT_KEY"]}
    return {"resource": path, "path": path, "httpMethod": method, "headers": headers,
            "multiValueHeaders": {k: [v] for k, v in headers.items()}, "queryStringParameters": None,
            "multiValueQueryStringParameters": None, "pathParameters": None, "stageVariables": None,
            "requestContext": {"resourcePath": path, "httpMethod": method, "path": "/v1" + path, "stage": "v1",
                               "requestId": uuid.uuid4().hex, "identity": {"sourceIp": "127.0.0.1"}},
            "body": json.dumps(body), "isBase64Encoded": False}

out = {"import_ms": (t1 - t0) * 1000}
for name in ("first", "warm"):
    ev = event("POST", "/v1/trajectories", {"trajectory_id": "traj_" + uuid.uuid4().hex, "agent_id": "bench",
                                            "goal": "cold start"})
    t = time.perf_counter()
    response = app.app(ev, Context())
    out[name + "_ms"] = (time.perf_counter() - t) * 1000
    out[name + "_status"] = response["statusCode"]
out["total_ms"] = out["import_ms"] + out["first_ms"]
out["rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
out["modules"] = len(sys.modules)
print("RESULT " + json.dumps(out))
"""

# The review worker's cold start: import, then the first DynamoDB stream batch, as Lambda hands it over.
REVIEW_BATCH = r"""
import importlib, json, os, resource, sys, time
with open(os.environ["BENCH_EVENT"]) as f:
    event = json.load(f)
c0, t0 = time.process_time(), time.perf_counter()
handler = getattr(importlib.import_module(os.environ["BENCH_MODULE"]), os.environ["BENCH_HANDLER"])
t1 = time.perf_counter()
""" + CONTEXT + r"""
result = handler(event, Context())
t2, c2 = time.perf_counter(), time.process_time()
print("RESULT " + json.dumps({"import_ms": (t1 - t0) * 1000, "batch_ms": (t2 - t1) * 1000, "total_ms": (t2 - t0) * 1000,
                              "cpu_ms": (c2 - c0) * 1000,
                              "failures": len((result or {}).get("batchItemFailures", [])),
                              "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                              "modules": len(sys.modules)}))
"""

# The same batch with every HTTP request of the child timed at urllib3 (botocore, opensearch-py and
# the OpenAI-compatible client all go through HTTPConnectionPool.urlopen), and the batch profiled.
REVIEW_TIMELINE = r"""
import cProfile, importlib, io, json, os, pstats, sys, time
import urllib3.connectionpool as cp
with open(os.environ["BENCH_EVENT"]) as f:
    event = json.load(f)
calls = []
real_urlopen = cp.HTTPConnectionPool.urlopen
def urlopen(self, method, url, *args, **kwargs):
    headers = kwargs.get("headers") if "headers" in kwargs else (args[1] if len(args) > 1 else None)
    t = time.perf_counter()
    try:
        return real_urlopen(self, method, url, *args, **kwargs)
    finally:
        target = str((headers or {}).get("X-Amz-Target", "")).rsplit(".", 1)[-1]
        calls.append([t, time.perf_counter() - t, self.port, method, url.split("?")[0], target])
cp.HTTPConnectionPool.urlopen = urlopen
t0 = time.perf_counter()
handler = getattr(importlib.import_module(os.environ["BENCH_MODULE"]), os.environ["BENCH_HANDLER"])
t1 = time.perf_counter()
""" + CONTEXT + r"""
lines = int(os.environ.get("BENCH_PROFILE_LINES", "0"))
profile = cProfile.Profile() if lines else None
if profile:
    profile.enable()
result = handler(event, Context())
if profile:
    profile.disable()
t2 = time.perf_counter()
out = io.StringIO()
if profile:
    pstats.Stats(profile, stream=out).sort_stats("cumulative").print_stats(lines)
# moto's share of a DynamoDB request: the same read requests again, warm, each timed whole (botocore
# builds, signs, sends, parses) and inside urlopen (the round trip to moto on the loopback)
from chalicelib.container import get_deps
ddb = get_deps().queue.tables.connection.client
table = os.environ["HINDSIGHT_TABLE_PREFIX"] + "review-jobs"
reads = {"GetItem": lambda: ddb.get_item(TableName=table, Key={"tenant_id": {"S": "t"}, "job": {"S": "j"}}, ConsistentRead=True),
         "Query": lambda: ddb.query(TableName=table, IndexName="due", KeyConditionExpression="due_shard = :s",
                                    ExpressionAttributeValues={":s": {"S": "turns#0"}})}
replay = {}
for name, call in reads.items():
    rows = []
    for _ in range(15):
        n = len(calls)
        t = time.perf_counter()
        call()
        rows.append([(time.perf_counter() - t) * 1000, sum(c[1] for c in calls[n:]) * 1000])
    replay[name] = rows
print("RESULT " + json.dumps({"import_ms": (t1 - t0) * 1000, "batch_ms": (t2 - t1) * 1000,
                              "calls": [[(c[0] - t1) * 1000, c[1] * 1000, *c[2:]] for c in calls if t1 <= c[0] < t2],
                              "replay": replay, "profile": out.getvalue(), "modules": len(sys.modules)}))
"""

# A trajectory whose finalize queues a review that yields a lesson (a failed call, then the fix).
EVENTS = [
    {"event_id": "e1", "type": "user_input", "content": {"text": "Fly me from Paris to Rome on Friday"}},
    {"event_id": "e2", "type": "tool_call", "content": {"tool": "search_flights", "params": {"from": "Paris", "to": "Rome"},
                                                        "status": "error", "error": "InvalidAirport: expected an IATA code"}},
    {"event_id": "e3", "type": "tool_call", "content": {"tool": "lookup_airport", "params": {"city": "Paris"}, "result": "CDG"}},
    {"event_id": "e4", "type": "tool_call", "content": {"tool": "search_flights", "params": {"from": "CDG", "to": "FCO"},
                                                        "result": ["AZ1"]}},
]


def base_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HINDSIGHT_", "AWS_", "PYTHON"))}
    env.update(extra or {})
    return env


def med(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


# --- the code before -------------------------------------------------------------------------------


def export_before(ref: str, dest: Path) -> str:
    """app.py and chalicelib/ of ``ref`` into ``dest``, compiled; returns a label with the commit."""
    label = export_ref(ref, dest, ("app.py", "chalicelib"))
    for code in (IMPORT_ONLY,):  # compiled once, as the venv's copy is: both sides run from .pyc
        run_child(code, base_env({"HINDSIGHT_BACKEND": "aws", **DUMMY_AWS}), str(dest))
    return label


def deployed(stack_source: str) -> tuple[str, str, dict[str, str]]:
    """What infra/hindsight_infra/stack.py (its source, of a side) deploys: the review worker's
    handler (module, attribute; app.py's ``review_worker`` where the stack names none) and the
    environment every function gets beside the app's HINDSIGHT_* settings (none where it names none)."""
    import ast

    values: dict[str, object] = {}
    for node in ast.parse(stack_source).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            if node.targets[0].id in ("REVIEW_WORKER_HANDLER", "RUNTIME_ENVIRONMENT"):
                values[node.targets[0].id] = ast.literal_eval(node.value)
    module, _, attr = str(values.get("REVIEW_WORKER_HANDLER", "app.review_worker")).rpartition(".")
    return module, attr, dict(values.get("RUNTIME_ENVIRONMENT", {}))


def stack_source(ref: str | None) -> str:
    """infra/hindsight_infra/stack.py of ``ref``, or of the work tree."""
    path = "infra/hindsight_infra/stack.py"
    if ref is None:
        return (ROOT / path).read_text()
    return subprocess.run(["git", "show", f"{ref}:{path}"], cwd=ROOT, capture_output=True, text=True, check=True).stdout


# --- importtime -----------------------------------------------------------------------------------

_IMPORTTIME = re.compile(r"^import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)$")


def parse_importtime(stderr: str) -> list[tuple[str, int, int, int]]:
    """(module, self us, cumulative us, depth) per line of ``-X importtime``."""
    out = []
    for line in stderr.splitlines():
        m = _IMPORTTIME.match(line)
        if m:
            out.append((m[4], int(m[1]), int(m[2]), (len(m[3]) - 1) // 2))
    return out


def by_package(selfs: dict[str, list[int]]) -> list[tuple[str, float]]:
    totals: dict[str, float] = defaultdict(float)
    for name, xs in selfs.items():
        totals[name.split(".")[0]] += med(xs) / 1000
    return sorted(totals.items(), key=lambda x: -x[1])


def importtime_breakdown(env: dict[str, str], cwd: str, runs: int) -> dict:
    selfs: dict[str, list[int]] = defaultdict(list)
    cums: dict[str, list[int]] = defaultdict(list)
    direct: set[str] = set()
    totals = []
    for _ in range(runs):
        _, _, err = run_child("import app", env, cwd, ("-X", "importtime"))
        rows = parse_importtime(err)
        top = next((i for i, r in enumerate(rows) if r[0] == "app" and r[3] == 0), None)
        if top is None:
            raise RuntimeError("no 'app' line in the -X importtime output")
        totals.append(rows[top][2])
        j = top - 1  # the direct imports of app: the depth-1 lines printed before its own line
        while j >= 0 and rows[j][3] >= 1:
            if rows[j][3] == 1:
                direct.add(rows[j][0])
            j -= 1
        for name, self_us, cum_us, _ in rows:
            selfs[name].append(self_us)
            cums[name].append(cum_us)
    return {"total_ms": med(totals) / 1000, "modules": len(selfs), "by_pkg": by_package(selfs),
            "direct": sorted(((n, med(cums[n]) / 1000) for n in direct), key=lambda x: -x[1])}


def first_ingest_imports(env: dict[str, str], cwd: str, runs: int) -> dict:
    """What the first ingest imports after ``import app`` (the Deps built on the first request)."""
    selfs: dict[str, list[int]] = defaultdict(list)
    tops: dict[str, list[int]] = defaultdict(list)
    totals = []
    for _ in range(runs):
        _, _, err = run_child(FIRST_INGEST, env, cwd, ("-X", "importtime"))
        rows = parse_importtime(err)
        start = next(i for i, r in enumerate(rows) if r[0] == "app" and r[3] == 0) + 1
        after = rows[start:]
        totals.append(sum(cum for _, _, cum, depth in after if depth == 0))
        for name, self_us, cum_us, depth in after:
            selfs[name].append(self_us)
            if depth == 0:
                tops[name].append(cum_us)
    return {"total_ms": med(totals) / 1000, "modules": len(selfs), "by_pkg": by_package(selfs),
            "tops": sorted(((n, med(xs) / 1000) for n, xs in tops.items()), key=lambda x: -x[1])}


def two_columns(left: list[tuple[str, float]], right: list[tuple[str, float]]) -> None:
    lines_l = [f"  {n:<40} {ms:9.1f}" for n, ms in left]
    lines_r = [f"{n:<30} {ms:7.1f}" for n, ms in right]
    for i in range(max(len(lines_l), len(lines_r))):
        print(f"{lines_l[i] if i < len(lines_l) else ' ' * 52}  |  {lines_r[i] if i < len(lines_r) else ''}")


# --- the local AWS stack ----------------------------------------------------------------------------


class AwsStack:
    """moto (DynamoDB, server mode) with the tables, the idempotency table and one tenant, the OpenAI
    stub, and with ``review`` an OpenSearch index; ``env`` is what a Lambda function would be given."""

    def __init__(self, review: bool, opensearch_service: str = "none", secrets: bool = False) -> None:
        self.review = review
        self.opensearch_service = opensearch_service
        self.secrets = secrets
        self.prefix = f"cold{uuid.uuid4().hex[:8]}-"
        self.stub = None
        self.index_client = None
        self.index_name = f"{self.prefix}experiences"

    def __enter__(self) -> "AwsStack":
        os.environ.update(DUMMY_AWS)
        import boto3

        from chalicelib import container
        from chalicelib.services.tenants import create_tenant
        from chalicelib.settings import Settings
        from devtools.moto_server import moto_endpoint
        from devtools.openai_stub import OpenAIStub

        self.stub = OpenAIStub().__enter__()
        self.moto = moto_endpoint()
        url = "http://127.0.0.1:9"  # never contacted by ingest
        if self.review:
            from devtools.opensearch_node import node_url

            url = node_url()
        self.admin = "hsadmin_bench_" + uuid.uuid4().hex
        self.settings = Settings(backend="aws", table_prefix=self.prefix, dynamodb_endpoint=self.moto, create_tables=True,
                                 opensearch_endpoint=url, opensearch_service=self.opensearch_service, opensearch_index=self.index_name,
                                 embedder="openai", embedding_dim=64, openai_base_url=self.stub.base_url,
                                 admin_key=self.admin)
        self.ddb = boto3.client("dynamodb", endpoint_url=self.moto, region_name="us-east-1")
        self.ddb.create_table(TableName=f"{self.prefix}idempotency", BillingMode="PAY_PER_REQUEST",
                              AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
                              KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}])
        self.deps = container.build(self.settings)
        container.set_deps(self.deps, self.settings)
        tenant, self.key = create_tenant(self.deps, "cold-start")
        self.tenant_id = tenant.tenant_id
        if self.review:
            self.deps.index.ensure_index()  # created here, not in the timed first batch
            self.index_client = self.deps.index.client
        self.env = {**DUMMY_AWS, "HINDSIGHT_BACKEND": "aws", "HINDSIGHT_TABLE_PREFIX": self.prefix,
                    "HINDSIGHT_DYNAMODB_ENDPOINT": self.moto, "HINDSIGHT_OPENSEARCH_ENDPOINT": url,
                    "HINDSIGHT_OPENSEARCH_SERVICE": self.opensearch_service, "HINDSIGHT_OPENSEARCH_INDEX": self.index_name,
                    "HINDSIGHT_EMBEDDER": "openai", "HINDSIGHT_EMBEDDING_DIM": "64",
                    "HINDSIGHT_OPENAI_BASE_URL": self.stub.base_url, "HINDSIGHT_ADMIN_KEY": self.admin,
                    "HINDSIGHT_WORKER": "false", "BENCH_TENANT_KEY": self.key, "NO_PROXY": "127.0.0.1,localhost"}
        if self.secrets:  # as infra/ configures the functions: the keys' secret ARNs, never their values
            sm = boto3.client("secretsmanager", endpoint_url=self.moto, region_name="us-east-1")
            names = {"ADMIN_KEY": self.admin, "OPENAI_API_KEY": "sk-bench-" + uuid.uuid4().hex}
            for name, value in names.items():
                arn = sm.create_secret(Name=f"{self.prefix}{name.lower()}", SecretString=value)["ARN"]
                self.env[f"HINDSIGHT_{name}_SECRET"] = arn
            del self.env["HINDSIGHT_ADMIN_KEY"]
            self.env["AWS_ENDPOINT_URL_SECRETS_MANAGER"] = self.moto
        return self

    def review_batch(self) -> tuple[dict, str]:
        """A finalized trajectory, and the stream batch its review job makes: (event, trajectory id)."""
        import boto3

        from chalicelib.services import ingest
        from devtools.stream_poller import StreamPoller

        if not hasattr(self, "poller"):
            streams = boto3.client("dynamodbstreams", endpoint_url=self.moto, region_name="us-east-1")
            arn = self.ddb.describe_table(TableName=f"{self.prefix}review-jobs")["Table"]["LatestStreamArn"]
            self.batches: list[dict] = []
            self.poller = StreamPoller(streams, arn, lambda event: self.batches.append(event))
        self.poller.poll_once()  # what earlier samples left on the stream (their jobs' leases and completions)
        self.batches.clear()
        tid = "traj_" + uuid.uuid4().hex
        ingest.start_trajectory(self.deps, self.tenant_id, agent_id="travel", goal="Fly from Paris to Rome",
                                trajectory_id=tid, task_type="query", tools=["search_flights", "lookup_airport"])
        ingest.append_events(self.deps, self.tenant_id, tid, EVENTS)
        ingest.finalize(self.deps, self.tenant_id, tid, "success", None)
        self.poller.poll_once()
        records = [r for batch in self.batches for r in batch["Records"]]
        if not records:
            raise RuntimeError("the finalized trajectory put no record on the review-jobs stream")
        return {"Records": records[:10]}, tid

    def reviewed(self, tid: str) -> bool:
        return self.deps.trajectories.get(self.tenant_id, tid).status.value == "reviewed"

    def __exit__(self, *exc) -> None:
        from chalicelib import container

        container.set_deps(None)
        if self.index_client is not None:
            try:
                self.index_client.indices.delete(index=self.index_name, ignore_unavailable=True)
            except Exception:  # noqa: BLE001 -- a private node goes away at exit anyway
                pass
        if self.stub is not None:
            self.stub.__exit__(None, None, None)


# --- main -----------------------------------------------------------------------------------------


def _service(stack: AwsStack, port: int, target: str) -> str:
    ports = {urlsplit(stack.moto).port: "dynamodb", urlsplit(stack.stub.base_url).port: "llm/embed",
             urlsplit(stack.settings.opensearch_endpoint).port: "opensearch"}
    name = ports.get(port, f"port {port}")
    return f"{name} {target}" if target else name


def timeline(stack: AwsStack, runs: list[str], dirs: dict[str, str], env_of, work: Path, samples: int,
             profile_lines: int) -> None:
    """Every HTTP request of the review batch, by service and operation: count and ms (median of
    ``samples`` fresh interpreters per side), and the time of the batch outside them."""
    per: dict[str, list[dict]] = defaultdict(list)
    event_file = work / "timeline-event.json"
    for i in range(samples):
        for side in runs:
            event, tid = stack.review_batch()
            event_file.write_text(json.dumps(event))
            lines = profile_lines if side == "after" and i == samples - 1 else 0
            res, _, _ = run_child(REVIEW_TIMELINE, {**env_of(side), "BENCH_EVENT": str(event_file),
                                                    "BENCH_PROFILE_LINES": str(lines)}, dirs[side])
            if not stack.reviewed(tid):
                raise RuntimeError(f"timeline sample of {side}: the trajectory was not reviewed")
            per[side].append(res)
    print(f"\nload {load_avg()} after the timeline runs")
    print(f"Review batch, every HTTP request timed at urllib3: median over {samples} fresh interpreters per side"
          f" of the count and the ms spent, by service and operation")
    ops = sorted({_service(stack, c[2], c[5]) for side in runs for r in per[side] for c in r["calls"]})
    print(f"{'':<44} | " + " | ".join(f"{s:>17}" for s in runs))
    for op in ops:
        cells = []
        for side in runs:
            counts = [sum(1 for c in r["calls"] if _service(stack, c[2], c[5]) == op) for r in per[side]]
            ms = [sum(c[1] for c in r["calls"] if _service(stack, c[2], c[5]) == op) for r in per[side]]
            cells.append(f"{med(counts):4.0f} x {med(ms):8.1f} ms")
        print(f"{op:<44} | " + " | ".join(cells))
    for label, fn in (("requests", lambda r: len(r["calls"])), ("ms in requests", lambda r: sum(c[1] for c in r["calls"])),
                      ("batch ms", lambda r: r["batch_ms"]),
                      ("batch ms outside requests", lambda r: r["batch_ms"] - sum(c[1] for c in r["calls"])),
                      ("modules after the batch", lambda r: r["modules"])):
        print(f"{label:<44} | " + " | ".join(f"{med([fn(r) for r in per[side]]):17.1f}" for side in runs))
    # the headline is the review table's measured total; this only says how much of it the local
    # servers took, so the handler's own cost can be read apart from moto's
    def waited(r: dict, service: str) -> float:
        return sum(c[1] for c in r["calls"] if _service(stack, c[2], c[5]).startswith(service))

    print(f"\nimport + first batch of these samples, split: time waiting inside requests to the local servers"
          f" (urllib3's urlopen, on the loopback) and the rest, the handler's own (imports, clients, Python,"
          f" botocore's client side); median per side, each line on its own")
    split = [("import + first batch (measured)", lambda r: r["import_ms"] + r["batch_ms"]),
             ("  waiting on moto (DynamoDB requests)", lambda r: waited(r, "dynamodb")),
             ("  waiting on the OpenSearch node", lambda r: waited(r, "opensearch")),
             ("  waiting on the LLM/embedding stub", lambda r: waited(r, "llm/embed")),
             ("  the rest: the handler's own", lambda r: r["import_ms"] + r["batch_ms"] - sum(c[1] for c in r["calls"]))]
    for label, fn in split:
        print(f"{label:<44} | " + " | ".join(f"{med([fn(r) for r in per[side]]):17.1f}" for side in runs))
    print("\nmoto's share of a DynamoDB request (the same read sent 15 times warm after the batch, median per"
          " request and side): whole call (botocore) | inside the request (moto on the loopback) | client side")
    for op in ("GetItem", "Query"):
        for side in runs:
            whole = med([med([r[0] for r in res["replay"][op]]) for res in per[side]])
            wire = med([med([r[1] for r in res["replay"][op]]) for res in per[side]])
            print(f"  {op:<9} {side:<8} {whole:7.2f} ms | {wire:7.2f} ms | {whole - wire:7.2f} ms")
    sample = sorted(per["after"], key=lambda r: r["batch_ms"])[len(per["after"]) // 2]
    print("\nthe median sample of after, request by request (start ms after the import, ms):")
    for start, ms, port, method, path, target in sample["calls"]:
        print(f"  {start:8.1f} {ms:7.1f}  {_service(stack, port, target):<40} {method} {path[:60]}")
    if profile_lines:
        print(per["after"][-1]["profile"])


def cell(xs: list[float]) -> str:
    return f"{med(xs):7.1f} [{min(xs):6.0f}-{max(xs):6.0f}]" if xs else f"{'':>23}"


def table(title: str, rows: list[tuple[str, dict[str, list[float]], str | None]], sides: list[str], base: float) -> None:
    """rows: (label, {side: samples}, target key or None)."""
    print(f"\n{title}")
    head = " | ".join(f"{s:>23}" for s in sides)
    print(f"{'':<34} | {head} | {'after/before':>12} | {'after/pass':>10} | target")
    for label, per, target in rows:
        ratio = med(per.get("after", [])) / med(per["before"]) if per.get("before") and per.get("after") else float("nan")
        over = med(per.get("after", [])) / base if per.get("after") else float("nan")
        verdict = ""
        if target:
            limit = TARGETS[target]
            verdict = f"<= {limit:.0f}: " + " ".join(f"{s} {'yes' if med(per[s]) <= limit else 'NO'}" for s in sides if per.get(s))
        print(f"{label:<34} | " + " | ".join(f"{cell(per.get(s, [])):>23}" for s in sides)
              + f" | {ratio:12.2f} | {over:10.1f} | {verdict}")


def package_dirs(work: Path) -> tuple[object, Path, Path]:
    """The package as infra/ ships it (bytecode inside, devtools.lambda_package.build), unzipped;
    and the same without its ``__pycache__`` directories (what a zip without bytecode gives)."""
    from devtools import lambda_package

    pkg = lambda_package.build(work / "package")
    shipped = work / "unzipped-pyc"
    for zpath in pkg.zips:
        with zipfile.ZipFile(zpath) as zf:
            for info in zf.infolist():
                name = info.filename
                if name.startswith("python/lib/"):  # a layer's python/lib/pythonX.Y/site-packages/
                    name = name.split("/site-packages/", 1)[-1]
                if not info.is_dir():
                    dest = shipped / name
                    dest.parent.mkdir(parents=True, exist_ok=True)
                    dest.write_bytes(zf.read(info))
    sources = work / "unzipped"
    shutil.copytree(shipped, sources, ignore=shutil.ignore_patterns("__pycache__"))
    return pkg, sources, shipped


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.cold_start", description=__doc__.splitlines()[0])
    parser.add_argument("--before", default="main", help="git ref of the code before (default main)")
    parser.add_argument("--runs", type=int, default=15, help="fresh interpreters per import configuration")
    parser.add_argument("--first-runs", type=int, default=9, help="fresh interpreters per side for import + first ingest")
    parser.add_argument("--review-runs", type=int, default=5, help="fresh interpreters per side for the review worker")
    parser.add_argument("--importtime-runs", type=int, default=3)
    parser.add_argument("--timeline", type=int, default=0, metavar="N",
                        help="N more review samples per side with every HTTP request timed (count and ms by service)")
    parser.add_argument("--profile-lines", type=int, default=0, help="with --timeline: cProfile the after side's batch")
    parser.add_argument("--no-first", dest="first", action="store_false", help="skip import + first ingest")
    parser.add_argument("--no-review", dest="review", action="store_false", help="skip the review worker (no OpenSearch node)")
    parser.add_argument("--no-package", dest="package", action="store_false", help="skip chalice package")
    parser.add_argument("--opensearch-service", default="none", choices=("none", "es", "aoss"),
                        help="sign the index's requests with SigV4 as in the cloud (the local node ignores the signature)")
    parser.add_argument("--secrets", action="store_true",
                        help="the admin and OpenAI keys from Secrets Manager (moto) by ARN, as infra/ configures the functions")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="hindsight-bench-cold-"))
    try:
        print(f"start: load {load_avg()} (2 shared cores)", flush=True)
        before_dir = work / "before"
        before = export_before(args.before, before_dir)
        dirs = {"before": str(before_dir), "after": str(ROOT)}
        print(f"before = {before} (app.py + chalicelib/), after = the work tree {ROOT}", flush=True)
        # each side as its infra/ deploys it: the review worker's handler, the functions' environment
        deploy = {"before": deployed(stack_source(args.before)), "after": deployed(stack_source(None))}
        deploy["package"] = deploy["after"]
        for side in ("before", "after"):
            module, attr, extra = deploy[side]
            print(f"{side}: review worker handler {module}.{attr}; environment beside the settings {extra or 'none'}")
        pkg = None
        if args.package:
            print("chalice package of the work tree (pip fetches the Lambda wheels) ...", flush=True)
            pkg, unzipped, compiled = package_dirs(work)

        aws = base_env({"HINDSIGHT_BACKEND": "aws", **DUMMY_AWS})
        configs: dict[str, tuple[str, dict[str, str], str]] = {
            "python -c pass": ("pass", base_env(), str(ROOT)),
            "before": (IMPORT_ONLY, {**aws, **deploy["before"][2]}, dirs["before"]),
            "after": (IMPORT_ONLY, {**aws, **deploy["after"][2]}, dirs["after"]),
        }
        if pkg is not None:
            for name, d in (("pkg, no .pyc", unzipped), ("pkg, .pyc", compiled)):
                configs[name] = (IMPORT_ONLY, base_env({"HINDSIGHT_BACKEND": "aws", **DUMMY_AWS, **deploy["after"][2],
                                                        "PYTHONPATH": str(d), "PYTHONDONTWRITEBYTECODE": "1"}), str(d))
        for code, env, cwd in configs.values():  # the OS page cache, and the .pyc of the venv
            run_child(code, env, cwd)
        imp: dict[str, list[float]] = defaultdict(list)
        wall: dict[str, list[float]] = defaultdict(list)
        info: dict[str, dict] = {}
        for _ in range(args.runs):
            for name, (code, env, cwd) in configs.items():
                res, ms, _ = run_child(code, env, cwd)
                wall[name].append(ms)
                if res:
                    imp[name].append(res["import_ms"])
                    info[name] = res
        base = med(wall["python -c pass"])
        sides = ["before", "after"]
        print(f"\nload {load_avg()} after the import runs")
        table(f"Cold import, ms: median [min-max] of {args.runs} fresh interpreters per cell, interleaved;"
              f" `python -c pass` wall {base:.1f} ms [{min(wall['python -c pass']):.0f}-{max(wall['python -c pass']):.0f}]",
              [("import app (aws)", {s: imp[s] for s in sides}, "import"),
               ("process wall (aws)", {s: wall[s] for s in sides}, None)], sides, base)
        if pkg is not None:
            print(f"{'package (after), import app':<34} | no .pyc {cell(imp['pkg, no .pyc'])} | .pyc {cell(imp['pkg, .pyc'])}"
                  f" | /pass {med(imp['pkg, no .pyc']) / base:.1f} and {med(imp['pkg, .pyc']) / base:.1f}")
        print("modules loaded / max RSS after import: " + ", ".join(
            f"{n} {info[n]['modules']} / {info[n]['rss_mb']:.0f} MB" for n in info))

        bd = importtime_breakdown(aws, dirs["after"], args.importtime_runs)
        print(f"\n-X importtime of import app (after, aws, .pyc cached): median of {args.importtime_runs} runs,"
              f" {bd['total_ms']:.0f} ms under -X importtime, {bd['modules']} modules")
        print(f"  {'direct imports of app.py':<40} {'cumul. ms':>9}  |  {'self time by top-level package':<30} {'ms':>7}")
        two_columns(bd["direct"][:12], bd["by_pkg"][:12])

        # the ingest and the review also run from the unzipped package as shipped (bytecode in,
        # its botocore trimmed), with the venv behind it for boto3, which the Lambda runtime provides
        runs = sides + (["package"] if pkg is not None else [])
        if pkg is not None:
            dirs["package"] = str(compiled)

        def side_env(side: str, env: dict[str, str]) -> dict[str, str]:
            module, attr, extra = deploy[side]
            env = {**env, **extra, "BENCH_MODULE": module, "BENCH_HANDLER": attr}
            return {**env, "PYTHONPATH": str(compiled), "PYTHONDONTWRITEBYTECODE": "1"} if side == "package" else env

        if args.first or args.review:
            with AwsStack(review=args.review, opensearch_service=args.opensearch_service, secrets=args.secrets) as stack:
                env = base_env(stack.env)
                if args.first:
                    for side in runs:  # moto's first requests, the page cache
                        run_child(FIRST_INGEST, side_env(side, env), dirs[side])
                    first: dict[str, dict[str, list[float]]] = {s: defaultdict(list) for s in runs}
                    statuses: set[int] = set()
                    for _ in range(args.first_runs):
                        for side in runs:
                            res, ms, _ = run_child(FIRST_INGEST, side_env(side, env), dirs[side])
                            first[side]["wall"].append(ms)
                            statuses |= {res["first_status"], res["warm_status"]}
                            for k in ("import_ms", "first_ms", "warm_ms", "total_ms"):
                                first[side][k].append(res[k])
                    print(f"\nload {load_avg()} after the ingest runs")
                    table(f"Import + first authenticated ingest (POST /v1/trajectories, status {sorted(statuses)}), ms,"
                          f" {args.first_runs} fresh interpreters per side, interleaved; DynamoDB: moto server on the"
                          f" loopback (local network)",
                          [("import app", {s: first[s]["import_ms"] for s in runs}, None),
                           ("first ingest (builds the Deps)", {s: first[s]["first_ms"] for s in runs}, None),
                           ("second ingest (warm)", {s: first[s]["warm_ms"] for s in runs}, None),
                           ("import + first ingest", {s: first[s]["total_ms"] for s in runs}, "first"),
                           ("process wall", {s: first[s]["wall"] for s in runs}, None)], runs, base)
                    fc = first_ingest_imports(env, dirs["after"], args.importtime_runs)
                    print(f"\n-X importtime of the first ingest after import app (after): {fc['total_ms']:.0f} ms of"
                          f" imports, {fc['modules']} modules")
                    print(f"  {'imported by the first ingest':<40} {'cumul. ms':>9}  |  {'self time by top-level package':<30} {'ms':>7}")
                    two_columns(fc["tops"][:10], fc["by_pkg"][:10])
                if args.review:
                    review: dict[str, dict[str, list[float]]] = {s: defaultdict(list) for s in runs}
                    done: dict[str, int] = defaultdict(int)
                    records: list[int] = []
                    failures = 0
                    event_file = work / "event.json"
                    for i in range(args.review_runs + 1):  # the first round warms moto, the node and the page cache
                        for side in runs:
                            event, tid = stack.review_batch()
                            records.append(len(event["Records"]))
                            event_file.write_text(json.dumps(event))
                            res, ms, _ = run_child(REVIEW_BATCH, side_env(side, {**env, "BENCH_EVENT": str(event_file)}), dirs[side])
                            failures += res["failures"]
                            done[side] += stack.reviewed(tid)
                            if i == 0:
                                continue
                            review[side]["wall"].append(ms)
                            for k in ("import_ms", "batch_ms", "total_ms", "cpu_ms"):
                                review[side][k].append(res[k])
                    print(f"\nload {load_avg()} after the review runs")
                    table(f"Review worker: import of the handler's module + handler(first stream batch, context), ms,"
                          f" {args.review_runs} fresh interpreters per side, interleaved; {min(records)}-{max(records)}"
                          f" records per batch; reviewed: " + ", ".join(f"{s} {done[s]}/{args.review_runs + 1}" for s in runs)
                          + f"; batch item failures {failures}; moto, the stub and the OpenSearch node on the loopback",
                          [("import (the handler's module)", {s: review[s]["import_ms"] for s in runs}, None),
                           ("first batch (one review job)", {s: review[s]["batch_ms"] for s in runs}, None),
                           ("import + first batch", {s: review[s]["total_ms"] for s in runs}, "review"),
                           ("process wall", {s: review[s]["wall"] for s in runs}, None),
                           ("CPU of the handler's process", {s: review[s]["cpu_ms"] for s in runs}, None)], runs, base)
                    print("(CPU: import + first batch in the child, user + system; moto, the node and the stub run in"
                          " other processes, and the time waiting for a core on this shared machine is not in it)")

                if args.review and args.timeline:
                    timeline(stack, runs, dirs, lambda side: side_env(side, env), work, args.timeline, args.profile_lines)

        if pkg is not None:
            from devtools import lambda_package

            print()
            print(lambda_package.describe(pkg, "Deployment package (after; chalice package, stage dev)", top=8))
        print(f"\nend: load {load_avg()}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
