"""X-Ray tracing of the Lambda event handlers, in fresh interpreters (the tracer patches boto3 for
the whole process): with HINDSIGHT_TRACING on, each handler sends its subsegment; off, the X-Ray
SDK (~200 ms of import) is never loaded."""
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Runs the sweep and decay handlers on in-memory ports and prints what X-Ray would have been sent.
SCRIPT = """
import json, sys
from chalicelib import container, lambda_handlers, observability
from tests.support.fakes import fake_deps

container.set_deps(fake_deps())
sent = []
if observability.tracer() is not None:
    from aws_xray_sdk.core import xray_recorder

    class Capture:  # the recorder's emitter, in place of the UDP one that talks to the X-Ray daemon
        def send_entity(self, entity):
            sent.append(entity.to_dict())

        def set_daemon_address(self, address):
            pass

    xray_recorder._emitter = Capture()
results = [lambda_handlers.sweep(), lambda_handlers.decay()]
print(json.dumps({"sent": [e["name"] for e in sent], "trace_ids": sorted({e["trace_id"] for e in sent}),
                  "xray_imported": "aws_xray_sdk" in sys.modules, "results": results}))
"""

# What the Lambda runtime gives a function with active tracing.
LAMBDA_ENV = {
    "LAMBDA_TASK_ROOT": ROOT,
    "AWS_LAMBDA_FUNCTION_NAME": "hindsight-dev-decay",
    "_X_AMZN_TRACE_ID": "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1",
}


def run(**env: str) -> dict:
    base = {k: v for k, v in os.environ.items() if not k.startswith("HINDSIGHT_")}
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, check=True, cwd=ROOT,
                         env={**base, "AWS_DEFAULT_REGION": "us-east-1", "POWERTOOLS_METRICS_NAMESPACE": "t", **env})
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_with_tracing_on_each_handler_sends_its_subsegment_in_the_functions_trace():
    got = run(HINDSIGHT_TRACING="true", **LAMBDA_ENV)
    assert got["sent"] == ["## review_sweep", "## decay"]
    assert got["trace_ids"] == ["1-5759e988-bd862e3fe1be46a994272793"]
    assert got["results"] == [{"requeued": 0, "ran": 0}, {"examined": 0, "archived": 0, "written": 0, "conflicts": 0, "complete": 1}]


def test_with_tracing_off_the_xray_sdk_is_never_imported():
    got = run(**LAMBDA_ENV)
    assert got == {"sent": [], "trace_ids": [], "xray_imported": False,
                   "results": [{"requeued": 0, "ran": 0}, {"examined": 0, "archived": 0, "written": 0, "conflicts": 0, "complete": 1}]}
