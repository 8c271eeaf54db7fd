"""The deploy-time custom resource that makes the OpenSearch index (``chalicelib/index_setup_lambda``):
it answers CloudFormation at the event's ResponseURL whatever happens (a custom resource that never
answers holds the stack for an hour), retries while a new collection still refuses requests, and
never touches the index on Delete."""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from chalicelib import index_setup_lambda as setup


class ResponseURL:
    """A local stand-in for CloudFormation's pre-signed S3 URL: keeps what was PUT to it."""

    def __init__(self) -> None:
        seen = self.seen = []

        class Handler(BaseHTTPRequestHandler):
            def do_PUT(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers["Content-Length"]))
                seen.append((self.headers.get("Content-Type"), json.loads(body)))
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/cfn-response?X-Amz-Signature=abc"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture()
def response_url():
    url = ResponseURL()
    yield url
    url.close()


class FlakyIndex:
    """Refuses ``failures`` times (a collection whose access policy is not in effect yet)."""

    def __init__(self, failures: int = 0) -> None:
        self.failures, self.calls = failures, []

    def ensure_index(self, force: bool = False) -> None:
        self.calls.append(force)
        if len(self.calls) <= self.failures:
            raise RuntimeError("OpenSearch creating index hindsight-experiences failed: 403 Forbidden")


class Context:
    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def get_remaining_time_in_millis(self) -> int:
        return int(self.seconds * 1000)


def event(kind: str, url: str, **extra) -> dict:
    return {"RequestType": kind, "ResponseURL": url, "StackId": "arn:aws:cloudformation:us-east-1:1:stack/hindsight-prod/x",
            "RequestId": "req-1", "LogicalResourceId": "OpenSearchIndex", "ResourceType": "Custom::OpenSearchIndex",
            "ResourceProperties": {"ServiceToken": "arn:aws:lambda:...", "IndexName": "hindsight-experiences"}, **extra}


@pytest.mark.parametrize("kind", ["Create", "Update"])
def test_create_and_update_make_the_index_and_answer_success(response_url, kind, monkeypatch):
    monkeypatch.setattr(setup.time, "sleep", lambda s: None)
    index = FlakyIndex(failures=2)
    setup.handler(event(kind, response_url.url, PhysicalResourceId="hindsight-experiences"), Context(300), index=index)
    assert index.calls == [True, True, True]  # forced: the functions' own adapter never creates it
    ((content_type, doc),) = response_url.seen
    assert content_type == ""  # what the URL was signed for
    assert doc["Status"] == "SUCCESS" and doc["PhysicalResourceId"] == "hindsight-experiences"
    assert (doc["StackId"], doc["RequestId"], doc["LogicalResourceId"]) == (
        "arn:aws:cloudformation:us-east-1:1:stack/hindsight-prod/x", "req-1", "OpenSearchIndex")


def test_a_failure_past_the_time_budget_is_reported_so_the_deployment_rolls_back(response_url, monkeypatch):
    monkeypatch.setattr(setup.time, "sleep", lambda s: None)
    index = FlakyIndex(failures=10_000)
    # 31 s left: 1 s of budget past the answer's safety margin, less than the first wait
    setup.handler(event("Create", response_url.url), Context(31), index=index)
    ((_, doc),) = response_url.seen
    assert doc["Status"] == "FAILED" and "403 Forbidden" in doc["Reason"] and len(index.calls) == 1


def test_delete_answers_without_touching_the_index(response_url):
    index = FlakyIndex()
    setup.handler(event("Delete", response_url.url, PhysicalResourceId="hindsight-experiences"), Context(300), index=index)
    assert index.calls == [] and response_url.seen[0][1]["Status"] == "SUCCESS"


def test_retries_wait_longer_each_time_up_to_a_cap():
    waits, now = [], [0.0]
    index = FlakyIndex(failures=6)

    def sleep(s: float) -> None:
        waits.append(s)
        now[0] += s

    assert setup.ensure_index(deadline=1000.0, clock=lambda: now[0], sleep=sleep, index=index) == 7
    assert waits == [2.0, 4.0, 8.0, 16.0, 20.0, 20.0]
