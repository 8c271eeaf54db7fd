"""Retries: which failures are retried, for which calls, how long the client waits, and that a
retried write is applied once. Faults are injected by a real proxy in front of the real server."""
from __future__ import annotations

import random
import time

import httpx
import pytest

from hindsight_xp import Hindsight, RateLimited, RetryPolicy, ServerError, TransportError

from devtools.net import free_port

from .conftest import FAST_RETRY
from .servers import FaultProxy, HindsightServer

EVENTS = [{"type": "tool_call", "content": {"tool": "sql", "params": {"q": str(i)}, "result": i}} for i in range(5)]


def test_a_lost_answer_to_an_event_batch_is_retried_without_duplicating_events(proxied: Hindsight, proxy: FaultProxy) -> None:
    traj = proxied.start_trajectory("a", "query the sales database")
    proxy.fail(["lost"], method="POST", path_contains="/events")
    result = proxied.append_events(traj.trajectory_id, EVENTS)
    # The first attempt was applied upstream; the retry carries the same event ids.
    assert len(proxy.requests("POST", "/events")) == 2
    assert (result.accepted, result.duplicates) == (0, 5)
    assert proxied.get_trajectory(traj.trajectory_id).event_count == 5


def test_server_errors_are_retried_for_idempotent_calls(proxied: Hindsight, proxy: FaultProxy) -> None:
    proxy.fail(["503", "503"], path_contains="/v1/recall")
    assert proxied.recall("anything").hits == ()
    assert [s.fault for s in proxy.requests("POST", "/v1/recall")] == ["503", "503", None]


def test_server_errors_are_not_retried_for_feedback_which_is_not_idempotent(proxied: Hindsight, proxy: FaultProxy) -> None:
    exp = proxied.write_experience("s", lesson="l")
    proxy.fail(["503"], path_contains="/feedback")
    with pytest.raises(ServerError) as info:
        proxied.feedback(exp.experience_id, "adopted")
    assert info.value.status == 503 and len(proxy.requests("POST", "/feedback")) == 1


def test_rate_limited_calls_are_retried_even_when_not_idempotent(proxied: Hindsight, proxy: FaultProxy) -> None:
    exp = proxied.write_experience("s", lesson="l")
    proxy.fail(["429"], path_contains="/feedback")
    assert proxied.feedback(exp.experience_id, "adopted").utility > exp.utility
    assert len(proxy.requests("POST", "/feedback")) == 2


def test_a_connection_closed_before_the_request_was_handled_is_retried(proxied: Hindsight, proxy: FaultProxy) -> None:
    proxy.fail(["drop"], method="GET")
    assert proxied.health().status == "ok"
    assert len(proxy.requests("GET")) == 2


def test_the_client_gives_up_after_max_attempts(proxied: Hindsight, proxy: FaultProxy) -> None:
    proxy.fail(["429"] * 10, path_contains="/v1/recall")
    with pytest.raises(RateLimited) as info:
        proxied.recall("anything")
    assert info.value.retry_after == 0.0
    assert len(proxy.requests("POST", "/v1/recall")) == FAST_RETRY.max_attempts


def test_an_unreachable_service_raises_transport_error() -> None:
    with Hindsight(f"http://127.0.0.1:{free_port()}", "k", retry=FAST_RETRY) as c:
        with pytest.raises(TransportError, match="ConnectError"):
            c.recall("anything")


def _response(status: int, **headers: str) -> httpx.Response:
    return httpx.Response(status, headers=headers, request=httpx.Request("POST", "http://h/v1/recall"))


def test_retry_after_is_honoured_and_backoff_grows_with_jitter_up_to_a_cap() -> None:
    policy = RetryPolicy(max_attempts=10, base_delay=0.5, max_delay=4.0, rng=random.Random(7))
    assert policy.delay(_response(429, **{"Retry-After": "3"}), 0, idempotent=False) == 3.0
    assert policy.delay(_response(429, **{"Retry-After": "3600"}), 0, idempotent=True) is None  # too long to wait
    for attempt, ceiling in [(0, 0.5), (1, 1.0), (2, 2.0), (3, 4.0), (6, 4.0)]:
        delays = {policy.backoff(attempt) for _ in range(50)}
        assert all(ceiling / 2 <= d <= ceiling for d in delays) and len(delays) > 1
    assert policy.delay(_response(503), 0, idempotent=False) is None
    assert policy.delay(_response(503), 0, idempotent=True) is not None
    assert policy.delay(_response(404), 0, idempotent=True) is None
    assert policy.delay(httpx.ConnectError("refused"), 0, idempotent=False) is not None  # nothing was sent
    assert policy.delay(httpx.ReadTimeout("slow"), 0, idempotent=False) is None  # it may have been applied
    assert policy.delay(_response(503), 9, idempotent=True) is None  # attempts exhausted


def test_the_servers_own_rate_limit_is_waited_out_as_its_retry_after_says(tmp_path) -> None:
    """No proxy: the real server's per-tenant bucket (1 request/s, burst 2) refuses, and the SDK's
    default policy waits the whole second the Retry-After header names, then succeeds."""
    server = HindsightServer(tmp_path / "data", env={"HINDSIGHT_RATE_LIMIT_PER_SECOND": "1", "HINDSIGHT_RATE_LIMIT_BURST": "2"}).start()
    answers: list[tuple[int, str | None]] = []
    http = httpx.Client(base_url=server.url, event_hooks={"response": [lambda r: answers.append((r.status_code, r.headers.get("Retry-After")))]})
    try:
        with Hindsight(server.url, server.new_tenant(), http_client=http) as client:
            exp = client.write_experience("s", lesson="l")
            started = time.monotonic()
            client.stats()
            assert client.feedback(exp.experience_id, "adopted").utility > exp.utility  # refused, waited, applied once
            elapsed = time.monotonic() - started
    finally:
        http.close()
        server.stop()
    assert (429, "1") in answers and answers[-1][0] == 200
    assert elapsed >= 0.9  # the whole second of Retry-After, not the policy's quarter-second backoff
