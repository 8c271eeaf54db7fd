"""gc_pause.loading(): the collector is off inside the block, on again after it, and what the block
left alive is frozen (never scanned again); the Lambda entry points load their code that way."""
import gc
import subprocess
import sys

from chalicelib import gc_pause


class Node:
    def __init__(self) -> None:
        self.me = self  # a cycle: only the collector could free it


def test_the_collector_is_off_inside_the_block_and_on_after_it_with_what_the_block_made_frozen():
    assert gc.isenabled()
    before = gc.get_freeze_count()
    try:
        with gc_pause.loading():
            assert not gc.isenabled()
            kept = Node()
        assert gc.isenabled()
        assert gc.get_freeze_count() > before
        assert not any(o is kept for o in gc.get_objects())  # out of every collected generation
    finally:
        gc.unfreeze()  # the test process's other objects back where the collector sees them


def test_a_collector_turned_off_on_purpose_stays_off_and_nothing_is_frozen():
    gc.disable()
    try:
        before = gc.get_freeze_count()
        with gc_pause.loading():
            Node()
        assert not gc.isenabled()
        assert gc.get_freeze_count() == before
    finally:
        gc.enable()


def test_a_nested_block_leaves_the_collector_off_until_the_outer_one_ends():
    try:
        with gc_pause.loading():
            with gc_pause.loading():
                pass
            assert not gc.isenabled()
        assert gc.isenabled()
    finally:
        gc.unfreeze()


def test_the_collector_is_on_again_when_the_block_raises():
    try:
        try:
            with gc_pause.loading():
                raise KeyError("x")
        except KeyError:
            pass
        assert gc.isenabled()
    finally:
        gc.unfreeze()


def test_importing_the_review_workers_handler_freezes_its_modules_and_leaves_the_collector_on():
    code = ("import gc; from chalicelib import review_worker_lambda as h; "
            "print(gc.isenabled(), gc.get_freeze_count() > 20_000, any(o is h.review_stream for o in gc.get_objects()))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"HINDSIGHT_BACKEND": "aws", "AWS_DEFAULT_REGION": "us-east-1", "PATH": "/usr/bin:/bin"})
    assert out.stdout.split() == ["True", "True", "False"]


def test_the_review_workers_first_batch_builds_its_idempotency_and_client_frozen():
    """Powertools, boto3, the Deps and the DynamoDB client are loaded at the first batch (nothing is
    contacted to build them)."""
    code = ("import gc; from chalicelib import review_worker_lambda, lambda_handlers as lh; "
            "n = gc.get_freeze_count(); run, config = lh._idempotent_runner(); "
            "print(gc.isenabled(), gc.get_freeze_count() - n > 20_000, "
            "any(o is lh._dynamodb_client() or o is config for o in gc.get_objects()))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"HINDSIGHT_BACKEND": "aws", "AWS_DEFAULT_REGION": "us-east-1", "PATH": "/usr/bin:/bin",
                              "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"})
    assert out.stdout.split() == ["True", "True", "False"]


API_REQUESTS = """
import gc
freezes = []
real_freeze = gc.freeze
gc.freeze = lambda: (freezes.append(gc.isenabled()), real_freeze())
import app
event = {"resource": "/v1/health", "path": "/v1/health", "httpMethod": "GET", "headers": {}, "multiValueHeaders": {},
         "queryStringParameters": None, "multiValueQueryStringParameters": None, "pathParameters": None,
         "stageVariables": None, "body": None, "isBase64Encoded": False,
         "requestContext": {"resourcePath": "/v1/health", "httpMethod": "GET", "path": "/v1/v1/health", "stage": "v1",
                            "requestId": "r", "identity": {"sourceIp": "127.0.0.1"}}}
after_import = len(freezes)
statuses = [app.app(event, None)["statusCode"] for _ in range(3)]  # as Lambda calls it
print(statuses, after_import, freezes, gc.isenabled())
"""


def test_the_apis_imports_and_its_first_request_alone_run_paused_and_are_frozen():
    out = subprocess.run([sys.executable, "-c", API_REQUESTS], capture_output=True, text=True, check=True,
                         env={"HINDSIGHT_BACKEND": "aws", "AWS_DEFAULT_REGION": "us-east-1", "PATH": "/usr/bin:/bin"})
    # one freeze at the end of the imports, one after the first request, none after the others
    assert out.stdout.strip() == "[200, 200, 200] 1 [False, False] True"
