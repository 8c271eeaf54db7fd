"""The local aws stack calls the app from several threads (the stream delivery beside the tenants'
requests): chalice's test client must leave ``os.environ`` as it found it."""
from __future__ import annotations

import os
import threading

from chalice.test import Client

import app
from devtools.aws_stack import _one_call_at_a_time


def test_concurrent_calls_leave_the_process_environment_as_it_was():
    _one_call_at_a_time()
    real, before = os.environ, dict(os.environ)
    with Client(app.app) as client:
        def calls() -> None:
            for _ in range(100):
                client.http.get("/v1/health")

        threads = [threading.Thread(target=calls) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert os.environ is real  # not a patched copy left behind by one of the threads
    assert dict(os.environ) == before  # the stage's variables (HINDSIGHT_WORKER=false) did not stay
