"""Tracing on (``HINDSIGHT_TRACING=true``, what prod sets): the handlers import and run under X-Ray
as Lambda runs them, and their subsegments reach the X-Ray daemon.

In a fresh interpreter, with Lambda's variables (``LAMBDA_TASK_ROOT``, the invocation's
``_X_AMZN_TRACE_ID``) and ``AWS_XRAY_DAEMON_ADDRESS`` pointing at a UDP socket of the test: the
app, the review worker's module and the handlers are imported, the sweep, the decay and a stream
batch run (on the embedded backend in a temporary directory), and the socket receives their
subsegments under the invocation's trace. Without aws-xray-sdk installed the import itself fails,
which is what the stack used to deploy with ``tracing: true``.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.infra.conftest import ROOT

TRACE_ROOT = "1-5759e988-bd862e3fe1be46a994272793"

CODE = r"""
import json, os, socket, sys, tempfile
daemon = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
daemon.bind(("127.0.0.1", 0))
daemon.settimeout(5)
os.environ["AWS_XRAY_DAEMON_ADDRESS"] = "127.0.0.1:%d" % daemon.getsockname()[1]

import app  # what Lambda imports for the API, the authorizer, the sweeper and the decay
from chalicelib import container, lambda_handlers, observability, review_worker_lambda
from chalicelib.settings import Settings

settings = Settings(data_dir=tempfile.mkdtemp(), embedder="hash", tracing=True, worker=False)
container.set_deps(container.build_embedded(settings), settings)
assert observability.tracer() is not None, "tracing is on but no tracer was built"
lambda_handlers.sweep()
lambda_handlers.decay()
review_worker_lambda.handler({"Records": []}, None)

names, traces = set(), set()
try:
    while True:
        header, _, body = daemon.recv(65536).decode().partition("\n")
        doc = json.loads(body)
        names.add(doc["name"])
        traces.add(doc.get("trace_id"))
except socket.timeout:
    pass
print(json.dumps({"names": sorted(names), "traces": sorted(t for t in traces if t)}))
"""


def test_the_handlers_run_under_xray_and_their_subsegments_reach_the_daemon(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HINDSIGHT_", "AWS_LAMBDA_", "_X_AMZN", "AWS_XRAY"))}
    env.update(
        HINDSIGHT_TRACING="true",
        LAMBDA_TASK_ROOT=str(tmp_path),  # Lambda's: X-Ray and Powertools trace only in Lambda
        _X_AMZN_TRACE_ID=f"Root={TRACE_ROOT};Parent=53995c3f42cd8ad8;Sampled=1",
        AWS_DEFAULT_REGION="us-east-1", AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing",
        POWERTOOLS_METRICS_NAMESPACE="hindsight",
    )
    proc = subprocess.run([sys.executable, "-c", CODE], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-4000:]
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    assert {"## review_sweep", "## decay", "## review_stream"} <= set(seen["names"]), seen
    assert seen["traces"] == [TRACE_ROOT]  # under the invocation's own trace


def test_aws_xray_sdk_is_a_lambda_requirement_pinned_as_installed():
    from importlib.metadata import version

    from infra.hindsight_infra.lambda_package import pinned_requirements

    pins = pinned_requirements(ROOT / "requirements.txt")
    assert pins["aws-xray-sdk"] == version("aws-xray-sdk")
