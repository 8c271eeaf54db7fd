"""Waitress's "Task queue depth" warning, written for each request queued behind busy threads, is
kept to one line per period that counts the ones left out."""
from __future__ import annotations

import logging
from types import SimpleNamespace

from server import EveryFewSeconds, create_server


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_one_warning_per_period_and_the_next_counts_those_left_out(caplog):
    clock = Clock()
    logger = logging.getLogger("test.queue")
    limited = EveryFewSeconds(logger, period=10.0, clock=clock)
    with caplog.at_level(logging.WARNING, logger="test.queue"):
        limited.warning("Task queue depth is %d", 1)
        for depth in range(2, 7):
            clock.now += 1.0
            limited.warning("Task queue depth is %d", depth)
        clock.now += 10.0
        limited.warning("Task queue depth is %d", 9)
        clock.now += 10.0
        limited.warning("Task queue depth is %d", 3)
    assert [r.getMessage() for r in caplog.records] == [
        "Task queue depth is 1",
        "Task queue depth is 9 (5 more such warnings in the 10 s before)",
        "Task queue depth is 3",
    ]


def test_the_server_warns_of_its_queue_through_the_limit():
    settings = SimpleNamespace(host="127.0.0.1", port=0, threads=2, connection_limit=10, channel_timeout_seconds=5,
                               max_body_bytes=1024)
    server = create_server(lambda environ, start_response: [], settings)
    try:
        limited = server.task_dispatcher.queue_logger
        assert isinstance(limited, EveryFewSeconds)
        assert limited.logger.name == "waitress.queue"
    finally:
        server.close()
