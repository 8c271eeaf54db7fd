"""Cold start of the Lambda API function: import time of app.py, the first handler calls, the package size.

Usage: .venv/bin/python bench/cold_start.py [--runs 15] [--importtime-runs 5] [--first-call-runs 5]
       [--no-first-call] [--recall] [--no-package]

1. Import of ``app.py`` in a fresh interpreter per sample (median of ``--runs``), samples of every
   configuration interleaved round-robin so that noise on this shared machine hits them alike:
     python -c pass           the baseline: interpreter start-up alone (process wall time)
     aws / embedded           ``import app`` with HINDSIGHT_BACKEND=aws / embedded (in-process time,
                              and the process wall time)
     pkg, no .pyc             ``import app`` from the unzipped ``chalice package`` output, with
                              PYTHONDONTWRITEBYTECODE=1: what a Lambda container does when the zip
                              ships no bytecode (its /var/task is read-only, so nothing is cached)
     pkg, .pyc                the same directory after ``compileall``: what shipping bytecode saves
   ``python -X importtime`` (median of ``--importtime-runs``) gives the breakdown: the modules app.py
   imports directly, and the self time summed per top-level package.
2. First handler calls with the aws backend against moto (DynamoDB) in a fresh interpreter: the API
   Gateway proxy event goes to ``app.app(event, context)`` as Lambda calls it. GET /v1/health,
   then the first authenticated call (POST /v1/trajectories: builds the Deps -- boto3/pynamodb,
   opensearch-py and openai clients -- and reads and writes DynamoDB), then the same call warm.
   With ``--recall`` the first authenticated calls are two POST /v1/recall instead (before the
   trajectories), which needs an OpenSearch node (OPENSEARCH_URL or one started by
   devtools.opensearch_node.node_url) and embeds through the OpenAI-compatible stub
   (devtools.openai_stub), as the Lambda's openai embedder would. The same runs also start from the
   unzipped package without .pyc (when packaged).
3. The deployment package: ``chalice package`` (no AWS call) of a copy of the project (app.py,
   chalicelib/, requirements.txt, .chalice/config.json) in a temporary directory, so nothing is
   written into the work tree; pip fetches the Lambda platform's wheels. Dummy AWS credentials.
   Reports the zip size, the unzipped size, and the 10 largest top-level entries.

Target printed beside: cold start (import + first request) < 400 ms. Prints numbers only.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
import zipfile
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

PY = sys.executable
TARGET_MS = 400.0
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

# The API function's Lambda cold start: import, then API Gateway proxy events handed to the app object.
FIRST_CALLS = r"""
import json, os, resource, sys, time, uuid
t0 = time.perf_counter()
import app
t1 = time.perf_counter()
key = os.environ["BENCH_TENANT_KEY"]

class Context:
    function_name = "hindsight-dev"; memory_limit_in_mb = 1024; aws_request_id = "req"
    invoked_function_arn = "arn:aws:lambda:us-east-1:000000000000:function:hindsight-dev"
    def get_remaining_time_in_millis(self): return 30000

def event(method, path, body=None, auth=True):
    headers = {"content-type": "application/json", "host": "bench.execute-api.us-east-1.amazonaws.com"}
    if auth:
        headers["authorization"] = "Bearer " + key
    return {"resource": path, "path": path, "httpMethod": method, "headers": headers,
            "multiValueHeaders": {k: [v] for k, v in headers.items()}, "queryStringParameters": None,
            "multiValueQueryStringParameters": None, "pathParameters": None, "stageVariables": None,
            "requestContext": {"resourcePath": path, "httpMethod": method, "path": "/v1" + path, "stage": "v1",
                               "requestId": uuid.uuid4().hex, "identity": {"sourceIp": "127.0.0.1"}},
            "body": json.dumps(body) if body is not None else None, "isBase64Encoded": False}

calls = [("health", event("GET", "/v1/health", auth=False))]
if os.environ.get("BENCH_RECALL") == "1":  # the first authenticated call is then a recall
    for name in ("recall 1st", "recall 2nd"):
        calls.append((name, event("POST", "/v1/recall", {"query": "refund a duplicate card charge", "top_k": 5})))
for name in ("trajectory 1st", "trajectory 2nd"):
    calls.append((name, event("POST", "/v1/trajectories", {"trajectory_id": "traj_" + uuid.uuid4().hex,
                                                           "agent_id": "bench", "goal": "cold start"})))
out = {"import_ms": (t1 - t0) * 1000}
ctx = Context()
for name, ev in calls:
    t = time.perf_counter()
    response = app.app(ev, ctx)
    out[name] = (time.perf_counter() - t) * 1000
    out[name + " status"] = response["statusCode"]
out["rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
out["modules"] = len(sys.modules)
print("RESULT " + json.dumps(out))
"""


def base_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HINDSIGHT_", "AWS_", "PYTHON"))}
    env.update(extra or {})
    return env


def run_child(code: str, env: dict[str, str], cwd: str, args: tuple[str, ...] = (), timeout: float = 120.0) -> tuple[dict, float, str]:
    """One fresh interpreter; returns (RESULT json or {}, wall ms, stderr)."""
    t0 = time.perf_counter()
    proc = subprocess.run([PY, *args, "-c", code], env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    wall = (time.perf_counter() - t0) * 1000
    if proc.returncode != 0:
        raise RuntimeError(f"child failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")), None)
    return (json.loads(line[7:]) if line else {}), wall, proc.stderr


def med(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


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


def importtime_breakdown(env: dict[str, str], cwd: str, runs: int) -> dict:
    selfs: dict[str, list[int]] = defaultdict(list)
    cums: dict[str, list[int]] = defaultdict(list)
    direct: set[str] = set()
    totals = []
    for _ in range(runs):
        _, _, err = run_child("import app", env, cwd, ("-X", "importtime"))
        rows = parse_importtime(err)
        in_app = False
        for name, self_us, cum_us, depth in rows:
            selfs[name].append(self_us)
            cums[name].append(cum_us)
            if name == "app" and depth == 0:
                totals.append(cum_us)
        # direct imports of app: the depth-1 lines printed before app's own line (children print first)
        for i, (name, *_rest) in enumerate(rows):
            if name == "app":
                j = i - 1
                while j >= 0 and rows[j][3] >= 1:
                    if rows[j][3] == 1:
                        direct.add(rows[j][0])
                    j -= 1
                in_app = True
        if not in_app:
            raise RuntimeError("no 'app' line in the -X importtime output")
    by_pkg: dict[str, float] = defaultdict(float)
    for name, xs in selfs.items():
        by_pkg[name.split(".")[0]] += med(xs) / 1000
    return {"total_ms": med(totals) / 1000,
            "direct": sorted(((n, med(cums[n]) / 1000) for n in direct), key=lambda x: -x[1]),
            "by_pkg": sorted(by_pkg.items(), key=lambda x: -x[1]),
            "by_self": sorted(((n, med(xs) / 1000) for n, xs in selfs.items()), key=lambda x: -x[1]),
            "modules": len(selfs)}


def first_call_imports(env: dict[str, str], cwd: str, runs: int) -> dict:
    """What the handler calls import after ``import app`` (deps built on the first request)."""
    tops: dict[str, list[int]] = defaultdict(list)
    selfs: dict[str, list[int]] = defaultdict(list)
    totals, calls = [], []
    for _ in range(runs):
        res, _, err = run_child(FIRST_CALLS, env, cwd, ("-X", "importtime"))
        rows = parse_importtime(err)
        start = next(i for i, r in enumerate(rows) if r[0] == "app" and r[3] == 0) + 1
        after = rows[start:]
        totals.append(sum(cum for _, _, cum, depth in after if depth == 0))
        calls.append(sum(v for k, v in res.items() if k.endswith(("1st", "health")) and isinstance(v, (int, float))))
        for name, self_us, cum_us, depth in after:
            selfs[name].append(self_us)
            if depth == 0:
                tops[name].append(cum_us)
    by_pkg: dict[str, float] = defaultdict(float)
    for name, xs in selfs.items():
        by_pkg[name.split(".")[0]] += med(xs) / 1000
    return {"total_ms": med(totals) / 1000, "calls_ms": med(calls), "modules": len(selfs),
            "tops": sorted(((n, med(xs) / 1000) for n, xs in tops.items()), key=lambda x: -x[1]),
            "by_pkg": sorted(by_pkg.items(), key=lambda x: -x[1])}


# --- chalice package ------------------------------------------------------------------------------


def _req_name(line: str) -> str | None:
    line = line.split("#", 1)[0].strip()
    m = re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*)", line)
    return re.sub(r"[-_.]+", "_", m[1]).lower() if m and not line.startswith("-") else None


def package(work: Path, timeout: float, overrides: list[str], stage: str = "dev") -> dict:
    """``chalice package`` of a copy of the project; returns the zip path, sizes and timing."""
    proj = work / "project"
    proj.mkdir()
    shutil.copy2(ROOT / "app.py", proj / "app.py")
    lines = (ROOT / "requirements.txt").read_text().splitlines()
    for o in overrides:  # e.g. numpy==2.2.6: replaces the pin of that package in the copy only
        lines = [o if _req_name(ln) == _req_name(o) else ln for ln in lines]
    (proj / "requirements.txt").write_text("\n".join(lines) + "\n")
    shutil.copytree(ROOT / "chalicelib", proj / "chalicelib", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    shutil.copytree(ROOT / ".chalice", proj / ".chalice", ignore=shutil.ignore_patterns("deployments", "venv"))
    if (ROOT / "vendor").is_dir():
        shutil.copytree(ROOT / "vendor", proj / "vendor")
    notes = []
    config = json.loads((proj / ".chalice" / "config.json").read_text())
    policy = proj / ".chalice" / f"policy-{stage}.json"
    if config.get("autogen_policy") is False and not policy.exists():
        # chalice package refuses to run without it; IAM comes from infra/ (CDK), not from here
        policy.write_text(json.dumps({"Version": "2012-10-17", "Statement": []}))
        notes.append(f".chalice/policy-{stage}.json is missing (autogen_policy false): an empty one was used in the copy")
    out = work / "out"
    chalice = Path(PY).with_name("chalice")
    env = base_env(DUMMY_AWS)
    env["PATH"] = f"{Path(PY).parent}:{env.get('PATH', '')}"  # chalice runs pip from the venv
    t0 = time.perf_counter()
    proc = subprocess.run([str(chalice), "--project-dir", str(proj), "package", "--stage", stage, str(out)],
                          env=env, cwd=str(proj), capture_output=True, text=True, timeout=timeout)
    seconds = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"chalice package failed ({proc.returncode}):\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}")
    zips = sorted(out.glob("*.zip"))  # deployment.zip, and layer-deployment.zip with automatic_layer
    sizes: dict[str, int] = defaultdict(int)
    files = pyc = unzipped = zipped = 0
    dists: set[str] = set()
    target = work / "unzipped"
    for zpath in zips:
        zipped += zpath.stat().st_size
        with zipfile.ZipFile(zpath) as zf:
            for info in zf.infolist():
                if info.is_dir():
                    continue
                name = info.filename
                if name.startswith("python/lib/"):  # a layer's python/lib/pythonX.Y/site-packages/
                    name = name.split("/site-packages/", 1)[-1]
                files += 1
                pyc += name.endswith(".pyc")
                unzipped += info.file_size
                top = name.split("/", 1)[0]
                sizes[top] += info.file_size
                if top.endswith(".dist-info"):
                    dists.add(re.sub(r"[-_.]+", "_", top[: -len(".dist-info")].rsplit("-", 1)[0]).lower())
                dest = target / name
                dest.parent.mkdir(parents=True, exist_ok=True)
                dest.write_bytes(zf.read(info))
    wanted = {n for n in (_req_name(ln) for ln in (proj / "requirements.txt").read_text().splitlines()) if n}
    missing = sorted(wanted - dists)
    if missing:
        notes.append("MISSING from the package (chalice found no wheel for the Lambda runtime, and only warned): "
                     + ", ".join(missing))
    return {"zip": zipped, "zips": [z.name for z in zips], "unzipped": unzipped, "files": files, "pyc": pyc,
            "seconds": seconds, "top": sorted(sizes.items(), key=lambda x: -x[1]), "dir": target,
            "notes": notes, "overrides": overrides}


# --- moto + tenant for the first calls --------------------------------------------------------------


class AwsStack:
    """moto (DynamoDB) with the tables and one tenant, the OpenAI stub, optionally an OpenSearch index."""

    def __init__(self, recall: bool) -> None:
        self.recall = recall
        self.prefix = f"cold{uuid.uuid4().hex[:8]}-"
        self.stub = None
        self.index_client = None
        self.index_name = f"{self.prefix}experiences"

    def __enter__(self) -> "AwsStack":
        os.environ.update(DUMMY_AWS)
        from chalicelib import container
        from chalicelib.services.tenants import create_tenant
        from chalicelib.settings import Settings
        from devtools.openai_stub import OpenAIStub
        from devtools.moto_server import moto_endpoint

        self.stub = OpenAIStub().__enter__()
        self.moto = moto_endpoint()
        url = "http://127.0.0.1:9"  # never contacted unless --recall
        if self.recall:
            from devtools.opensearch_node import node_url

            url = node_url()
        self.admin = "hsadmin_bench_" + secrets.token_hex(8)
        self.settings = Settings(backend="aws", table_prefix=self.prefix, dynamodb_endpoint=self.moto, create_tables=True,
                                 opensearch_endpoint=url, opensearch_service="none", opensearch_index=self.index_name,
                                 embedder="openai", openai_base_url=self.stub.base_url, admin_key=self.admin)
        deps = container.build(self.settings)
        _, self.key = create_tenant(deps, "cold-start")
        if self.recall:
            deps.index.ensure_index()  # created here, not in the timed first recall
            self.index_client = deps.index.client
        self.env = {**DUMMY_AWS, "HINDSIGHT_BACKEND": "aws", "HINDSIGHT_TABLE_PREFIX": self.prefix,
                    "HINDSIGHT_DYNAMODB_ENDPOINT": self.moto, "HINDSIGHT_OPENSEARCH_ENDPOINT": url,
                    "HINDSIGHT_OPENSEARCH_SERVICE": "none", "HINDSIGHT_OPENSEARCH_INDEX": self.index_name,
                    "HINDSIGHT_EMBEDDER": "openai", "HINDSIGHT_OPENAI_BASE_URL": self.stub.base_url,
                    "HINDSIGHT_ADMIN_KEY": self.admin, "HINDSIGHT_WORKER": "false", "BENCH_TENANT_KEY": self.key,
                    "BENCH_RECALL": "1" if self.recall else "0", "NO_PROXY": "127.0.0.1,localhost"}
        return self

    def __exit__(self, *exc) -> None:
        if self.index_client is not None:
            try:
                self.index_client.indices.delete(index=self.index_name, ignore_unavailable=True)
            except Exception:  # noqa: BLE001 -- a private node goes away at exit anyway
                pass
        if self.stub is not None:
            self.stub.__exit__(None, None, None)


# --- main -----------------------------------------------------------------------------------------


def fmt_row(label: str, xs: list[float], base: float | None, target: bool = False) -> str:
    ratio = f"{med(xs) / base:6.2f}" if base else f"{'':>6}"
    verdict = ("under" if med(xs) < TARGET_MS else "OVER") if target else ""
    return (f"{label:<34} | {med(xs):8.1f} | {min(xs):8.1f} | {max(xs):8.1f} | {ratio} | {verdict:>9}")


def two_columns(left: list[tuple[str, float]], right: list[tuple[str, float]]) -> None:
    lines_l = [f"  {n:<40} {ms:9.1f}" for n, ms in left]
    lines_r = [f"{n:<30} {ms:7.1f}" for n, ms in right]
    for i in range(max(len(lines_l), len(lines_r))):
        print(f"{lines_l[i] if i < len(lines_l) else ' ' * 52}  |  {lines_r[i] if i < len(lines_r) else ''}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="fresh interpreters per configuration")
    parser.add_argument("--importtime-runs", type=int, default=5)
    parser.add_argument("--first-call-runs", type=int, default=5, help="fresh interpreters for the first handler calls")
    parser.add_argument("--no-first-call", dest="first_call", action="store_false", help="skip the moto first calls")
    parser.add_argument("--recall", action="store_true", help="also the first recall (needs an OpenSearch node)")
    parser.add_argument("--no-package", dest="package", action="store_false", help="skip chalice package")
    parser.add_argument("--package-timeout", type=float, default=900.0)
    parser.add_argument("--override", action="append", default=[], metavar="PIN",
                        help="replace a pin of requirements.txt in the packaged copy (repeatable), e.g. numpy==2.2.6")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="hindsight-bench-cold-"))
    try:
        pkg = None
        if args.package:
            print("chalice package (pip fetches the Lambda wheels) ...", flush=True)
            pkg = package(work, args.package_timeout, args.override)
            print(f"  packaged in {pkg['seconds']:.0f} s", flush=True)
            compiled = work / "unzipped-pyc"
            shutil.copytree(pkg["dir"], compiled)
            subprocess.run([PY, "-m", "compileall", "-q", "-j", "0", str(compiled)], check=True, capture_output=True)

        configs: dict[str, tuple[str, dict[str, str], str, tuple[str, ...]]] = {
            "python -c pass": ("pass", base_env(), str(ROOT), ()),
            "aws": (IMPORT_ONLY, base_env({"HINDSIGHT_BACKEND": "aws", **DUMMY_AWS}), str(ROOT), ()),
            "embedded": (IMPORT_ONLY, base_env({"HINDSIGHT_BACKEND": "embedded"}), str(ROOT), ()),
        }
        if pkg is not None:
            for name, d in (("pkg, no .pyc", pkg["dir"]), ("pkg, .pyc", compiled)):
                env = base_env({"HINDSIGHT_BACKEND": "aws", **DUMMY_AWS, "PYTHONPATH": str(d),
                                "PYTHONDONTWRITEBYTECODE": "1"})
                configs[name] = (IMPORT_ONLY, env, str(d), ())
        for code, env, cwd, _ in configs.values():  # a first run fills the OS page cache for every config
            run_child(code, env, cwd)
        imp: dict[str, list[float]] = defaultdict(list)
        wall: dict[str, list[float]] = defaultdict(list)
        info: dict[str, dict] = {}
        for _ in range(args.runs):
            for name, (code, env, cwd, extra) in configs.items():
                res, ms, _ = run_child(code, env, cwd, extra)
                wall[name].append(ms)
                if res:
                    imp[name].append(res["import_ms"])
                    info[name] = res
        base = med(wall["python -c pass"])

        print(f"\nCold import of app.py, ms over {args.runs} fresh interpreters per row (interleaved);"
              f" ratio = / median `python -c pass` wall ({base:.1f} ms); target {TARGET_MS:.0f} ms")
        print(f"{'':<34} | {'median':>8} | {'min':>8} | {'max':>8} | {'ratio':>6} | {'< target':>9}")
        print(fmt_row("python -c pass (process wall)", wall["python -c pass"], base))
        for name in [n for n in configs if n != "python -c pass"]:
            print(fmt_row(f"{name}: import app", imp[name], base, target=True))
            print(fmt_row(f"{name}: process wall", wall[name], base, target=True))
        print(f"{'':<34}   modules loaded / max RSS after import: " + ", ".join(
            f"{n} {info[n]['modules']} / {info[n]['rss_mb']:.0f} MB" for n in info))

        for label, name in (("aws, venv (.pyc cached)", "aws"), ("aws, package without .pyc", "pkg, no .pyc")):
            if name not in configs:
                continue
            code, env, cwd, _ = configs[name]
            bd = importtime_breakdown(env, cwd, args.importtime_runs)
            print(f"\n-X importtime, {label}: median of {args.importtime_runs} runs; import app = {bd['total_ms']:.0f} ms"
                  f" under -X importtime ({bd['modules']} modules)")
            print(f"  {'direct imports of app.py':<40} {'cumul. ms':>9}  |  {'self time by top-level package':<30} {'ms':>7}")
            two_columns(bd["direct"][:12], bd["by_pkg"][:12])
            print(f"  slowest modules by self time (ms): " + ", ".join(f"{n} {ms:.0f}" for n, ms in bd["by_self"][:8]))

        if args.first_call:
            with AwsStack(args.recall) as stack:
                fconfigs = {"venv": (base_env(stack.env), str(ROOT))}
                if pkg is not None:  # the package's own modules, compiled on every cold start as on Lambda
                    fconfigs["pkg, no .pyc"] = (base_env({**stack.env, "PYTHONPATH": str(pkg["dir"]),
                                                          "PYTHONDONTWRITEBYTECODE": "1"}), str(pkg["dir"]))
                for env, cwd in fconfigs.values():
                    run_child(FIRST_CALLS, env, cwd)  # page cache; moto's first requests
                rows: dict[str, dict[str, list[float]]] = {c: defaultdict(list) for c in fconfigs}
                statuses: dict[str, set] = defaultdict(set)
                for _ in range(args.first_call_runs):
                    for c, (env, cwd) in fconfigs.items():
                        res, ms, _ = run_child(FIRST_CALLS, env, cwd)
                        rows[c]["process wall"].append(ms)
                        for k, v in res.items():
                            if k.endswith(" status"):
                                statuses[k[:-7]].add(v)
                            elif isinstance(v, (int, float)):
                                rows[c][k].append(v)
                fc = first_call_imports(fconfigs["venv"][0], str(ROOT), max(1, min(3, args.importtime_runs)))
            first = ["recall 1st" if args.recall else "trajectory 1st"]  # the first authenticated call
            print(f"\nFirst handler calls, aws backend on moto (DynamoDB){' + OpenSearch' if args.recall else ''},"
                  f" ms, median [min-max] of {args.first_call_runs} fresh interpreters; app.app(api_gateway_event, context)")
            print(f"{'':<36} | " + " | ".join(f"{c:>23}" for c in fconfigs) + f" | {'status':>7}")

            def line(label: str, per: dict[str, list[float]], extra: str = "") -> None:
                cells = [f"{med(per[c]):8.1f} [{min(per[c]):5.0f}-{max(per[c]):5.0f}]" if per.get(c) else f"{'':>23}"
                         for c in fconfigs]
                print(f"{label:<36} | " + " | ".join(f"{x:>23}" for x in cells) + extra)

            for k in ("import_ms", "health", "recall 1st", "recall 2nd", "trajectory 1st", "trajectory 2nd"):
                if k in rows["venv"]:
                    st = ",".join(str(x) for x in sorted(statuses.get(k, ())))
                    line("import app" if k == "import_ms" else k, {c: rows[c][k] for c in fconfigs}, f" | {st:>7}")
            for f in first:
                totals = {c: [a + b + x for a, b, x in zip(rows[c]["import_ms"], rows[c]["health"], rows[c][f])]
                          for c in fconfigs}
                verdict = " ".join("under" if med(t) < TARGET_MS else "OVER" for t in totals.values())
                line(f"import + health + {f}", totals, f" | {verdict}  (target {TARGET_MS:.0f} ms)")
                warm = f.replace("1st", "2nd")
                line(f"  {f} - {warm}", {c: [med(rows[c][f]) - med(rows[c][warm])] for c in fconfigs})
            line("max RSS MB", {c: rows[c]["rss_mb"] for c in fconfigs})
            line("modules loaded", {c: rows[c]["modules"] for c in fconfigs})
            print(f"\n-X importtime of the handler calls after import app (venv): {fc['total_ms']:.0f} ms of imports,"
                  f" {fc['modules']} modules, in {fc['calls_ms']:.0f} ms of first calls (both under -X importtime)")
            print(f"  {'imported by the first calls':<40} {'cumul. ms':>9}  |  {'self time by top-level package':<30} {'ms':>7}")
            two_columns(fc["tops"][:12], fc["by_pkg"][:12])

        if pkg is not None:
            mib = 2**20
            print(f"\nDeployment package (chalice package, stage dev; {' + '.join(pkg['zips'])}; {pkg['files']} files,"
                  f" {pkg['pyc']} .pyc){'; overrides: ' + ', '.join(pkg['overrides']) if pkg['overrides'] else ''}")
            for note in pkg["notes"]:
                print(f"  NOTE: {note}")
            print(f"  zipped         {pkg['zip'] / mib:7.1f} MiB   (Lambda direct upload limit 50 MiB)")
            print(f"  unzipped       {pkg['unzipped'] / mib:7.1f} MiB   (Lambda limit 250 MiB, layers included)")
            print(f"  {'top-level entry':<36} {'MiB':>7} {'share':>6}")
            for name, size in pkg["top"][:10]:
                print(f"  {name:<36} {size / mib:7.1f} {size / pkg['unzipped']:6.0%}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
