"""Waitress's warning that its task queue is deeper than its idle threads comes at most once per
interval, the next one counting those left out, rather than once per request queued."""
from __future__ import annotations

import logging
import time
from types import SimpleNamespace

from local import wsgi
from local.wsgi import create_server


class Task:
    def service(self) -> None:
        pass

    def cancel(self) -> None:
        pass


def queue_warnings(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "waitress.queue"]


def test_the_server_warns_of_a_deep_queue_once_per_interval(caplog):
    settings = SimpleNamespace(host="127.0.0.1", port=0, threads=1, connection_limit=10, channel_timeout_seconds=30,
                               max_body_bytes=1024)
    srv = create_server(lambda environ, start_response: [], settings)
    dispatcher = srv.task_dispatcher
    try:
        dispatcher.set_thread_count(0)  # no thread takes the tasks: each one queued deepens the queue
        deadline = time.monotonic() + 10
        while dispatcher.threads and time.monotonic() < deadline:
            time.sleep(0.01)
        assert not dispatcher.threads
        caplog.set_level(logging.WARNING, logger="waitress.queue")
        clock = [1000.0]
        dispatcher.queue_logger.clock = lambda: clock[0]
        for _ in range(50):
            dispatcher.add_task(Task())
        assert queue_warnings(caplog) == ["Task queue depth is 1"]
        clock[0] += wsgi.QUEUE_WARNING_SECONDS - 0.5
        dispatcher.add_task(Task())
        assert len(queue_warnings(caplog)) == 1
        clock[0] += 1.0
        dispatcher.add_task(Task())
        assert queue_warnings(caplog)[1:] == ["Task queue depth is 52 (50 more such warnings since the last one)"]
    finally:
        dispatcher.queue.clear()
        srv.close()
