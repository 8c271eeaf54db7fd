"""TrajectoryRecorder: what reaches the service, in what batches, what it costs the agent, and
what it does when the service is refusing, failing or gone."""
from __future__ import annotations

import threading

import anyio
import httpx
import pytest

from hindsight_xp import Hindsight, RetryPolicy, TrajectoryRecorder, Unauthorized
from hindsight_xp.anomalies import Anomaly


from .servers import FaultProxy


def sent_events(proxy: FaultProxy, trajectory_id: str) -> list[dict]:
    """Every event the service received for a trajectory, in order, without retried duplicates."""
    out, seen = [], set()
    for req in proxy.requests("POST", f"/v1/trajectories/{trajectory_id}/events"):
        for e in req.body["events"]:
            if e["event_id"] not in seen:
                seen.add(e["event_id"])
                out.append(e)
    return out


def test_a_recorded_run_reaches_the_service_and_is_finalized_as_success(proxied: Hindsight, proxy: FaultProxy) -> None:
    with TrajectoryRecorder(proxied, agent_id="weather-bot", goal="Will it rain?", tools=["get_weather", "ask_user"]) as rec:
        rec.user_input("Will it rain tomorrow?")
        rec.reasoning("I need the weather.")
        rec.tool_call("get_weather", {"date": "tomorrow"}, error=ValueError("MissingParameter: city is required"))
        rec.tool_call("ask_user", {"question": "Which city?"}, result="Lyon")
        rec.tool_call("get_weather", {"date": "tomorrow", "city": "Lyon"}, result={"forecast": "rain"})
        rec.state_change("city", "Lyon")
        rec.feedback("thanks", sentiment="positive")
    assert rec.finalized and rec.stats.sent == 7 and rec.errors == []

    events = sent_events(proxy, rec.trajectory_id)
    assert [e["type"] for e in events] == ["user_input", "llm_reasoning", "tool_call", "tool_call", "tool_call",
                                           "state_change", "feedback"]  # fmt: skip
    failed = events[2]["content"]
    assert failed["status"] == "error" and failed["error"] == "ValueError: MissingParameter: city is required"
    assert failed["available_tools"] == ["get_weather", "ask_user"]
    assert events[4]["content"]["result"] == {"forecast": "rain"}
    assert events[3]["context"]["last_user_input"] == "Will it rain tomorrow?"
    assert proxy.requests("POST", "/finalize")[0].body == {"outcome": "success"}

    traj = proxied.wait_for_review(rec.trajectory_id, timeout=20)
    assert traj.outcome == "success" and traj.event_count == 7 and len(traj.experience_ids) == 1


def test_an_escaping_exception_finalizes_as_failure_and_still_propagates(proxied: Hindsight, proxy: FaultProxy) -> None:
    with pytest.raises(KeyError):
        with TrajectoryRecorder(proxied, agent_id="a", goal="g") as rec:
            rec.user_input("go")
            raise KeyError("boom")
    assert proxy.requests("POST", "/finalize")[0].body == {"outcome": "failure", "feedback": "KeyError: 'boom'"}
    assert proxied.get_trajectory(rec.trajectory_id).outcome == "failure"


def test_the_outcome_can_be_overridden(proxied: Hindsight, proxy: FaultProxy) -> None:
    with TrajectoryRecorder(proxied, agent_id="a", goal="g") as rec:
        rec.outcome, rec.outcome_feedback = "partial", "only half done"
    assert proxy.requests("POST", "/finalize")[0].body == {"outcome": "partial", "feedback": "only half done"}
    assert proxied.get_trajectory(rec.trajectory_id).event_count == 0  # created at close, though empty


def test_events_go_out_in_batches_of_at_most_one_hundred(proxied: Hindsight, proxy: FaultProxy) -> None:
    with TrajectoryRecorder(proxied, agent_id="a", goal="g", flush_interval=5.0) as rec:
        for i in range(250):
            rec.tool_call("sql", {"q": i}, result=i)
        assert rec.flush(10)
        assert proxied.get_trajectory(rec.trajectory_id).event_count == 250
    sizes = [len(r.body["events"]) for r in proxy.requests("POST", "/events")]
    assert sizes == [100, 100, 50]


def test_a_full_buffer_drops_and_counts_instead_of_blocking(proxied: Hindsight) -> None:
    rec = TrajectoryRecorder(proxied, agent_id="a", goal="g", max_buffer=10)
    for i in range(15):  # before start(): nothing drains the buffer
        rec.user_input(str(i))
    assert (rec.stats.recorded, rec.stats.dropped) == (10, 5)
    assert rec.start().close() is True
    assert proxied.get_trajectory(rec.trajectory_id).event_count == 10


def test_one_event_the_service_refuses_does_not_lose_the_batch(proxied: Hindsight, proxy: FaultProxy) -> None:
    with TrajectoryRecorder(proxied, agent_id="a", goal="g", flush_interval=5.0) as rec:
        rec.user_input("fine")
        rec.tool_call("t" * 300, {}, result=1)  # a tool name over the service's limit: 422
        rec.user_input("fine too")
    assert (rec.stats.sent, rec.stats.failed) == (2, 1)
    assert len(rec.errors) == 2 and all(e.status == 422 for e in rec.errors)  # the batch, then the bad event alone
    assert proxied.get_trajectory(rec.trajectory_id).event_count == 2


def test_a_failing_service_is_retried_in_the_background(proxied: Hindsight, proxy: FaultProxy) -> None:
    proxy.fail(["503"] * 6, path_contains="/events")  # more than the client's own 4 attempts
    with TrajectoryRecorder(proxied, agent_id="a", goal="g") as rec:
        rec.user_input("hello")
    assert rec.finalized and rec.stats.sent == 1
    assert proxied.get_trajectory(rec.trajectory_id).event_count == 1


class HeldNetwork:
    """An httpx transport whose every request waits until ``release()``, then fails to connect:
    a service that hangs, then turns out to be gone. ``answered`` counts requests that returned."""

    def __init__(self) -> None:
        self.entered, self.released = threading.Event(), threading.Event()
        self.answered = 0

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.entered.set()
        # the guard only ends a test that would otherwise hang; its outcome is decided by `answered`
        self.released.wait(timeout=60)
        self.answered += 1
        raise httpx.ConnectError("the service is gone", request=request)

    def release(self) -> None:
        self.released.set()


def test_an_unreachable_service_never_blocks_the_agent() -> None:
    network = HeldNetwork()
    http = httpx.Client(base_url="http://hindsight.invalid", transport=httpx.MockTransport(network))
    dead = Hindsight("http://hindsight.invalid", "k", retry=RetryPolicy(max_attempts=2, base_delay=0.01), http_client=http)
    rec = TrajectoryRecorder(dead, agent_id="a", goal="g", close_timeout=0.5).start()
    for i in range(100):  # a full batch: the sender sends at once
        rec.tool_call("t", {"i": i}, result=i)
    assert network.entered.wait(timeout=60), "the sender never sent"
    for i in range(100, 1000):  # the sender is stuck in its request meanwhile
        rec.tool_call("t", {"i": i}, result=i)
    assert network.answered == 0  # every event was recorded while the network held the sender
    assert rec.close() is False  # close gives up at its deadline ...
    assert network.answered == 0  # ... without waiting for the network
    network.release()
    assert rec.flush(timeout=60)  # the sender now gives every event up
    assert rec.stats.failed == 1000 and rec.errors and not rec.finalized


def test_a_rejected_key_is_reported_once_without_hammering_the_service(proxy: FaultProxy) -> None:
    with Hindsight(proxy.url, "hs_wrong_key", retry=RetryPolicy(max_attempts=2, base_delay=0.01)) as bad:
        rec = TrajectoryRecorder(bad, agent_id="a", goal="g", flush_interval=0.01).start()
        for i in range(250):
            rec.user_input(str(i))
        assert rec.close() is False
    assert rec.stats.failed == 250 and not rec.finalized
    assert len(rec.errors) == 1 and isinstance(rec.errors[0], Unauthorized)
    assert len(proxy.seen) == 1  # the trajectory's creation, refused; nothing after it


def test_anomalies_are_detected_while_the_agent_runs(proxied: Hindsight) -> None:
    seen: list[Anomaly] = []
    with TrajectoryRecorder(proxied, agent_id="a", goal="g", on_anomaly=seen.append) as rec:
        rec.tool_call("a", {"x": 1}, error="E1")
        rec.tool_call("b", {}, result="ok")
        rec.tool_call("a", {"x": 1}, error="E1")
        assert rec.anomalies == []  # failures, but not consecutive
        rec.tool_call("a", {"x": 1}, error="E1")
        assert [a.kind for a in rec.anomalies] == ["consecutive_failures", "repeated_call"]
        rec.feedback("that is wrong", sentiment="negative")
    assert [a.kind for a in seen] == ["consecutive_failures", "repeated_call", "negative_feedback"]
    assert seen[1].tool == "a" and len(seen[1].event_ids) == 3 and "3 times" in seen[1].message


def test_wrapped_tools_record_params_results_and_exceptions(proxied: Hindsight, proxy: FaultProxy) -> None:
    with TrajectoryRecorder(proxied, agent_id="a", goal="g") as rec:

        @rec.tool
        def add(a: int, b: int = 0, *rest: int, **opts: str) -> int:
            return a + b + sum(rest)

        @rec.tool(name="lookup", is_error=lambda r: r.get("error"))
        def lookup_user(user: str) -> dict:
            return {"error": "NotFound: no such user"} if user == "bob" else {"name": user}

        async def fetch(url: str) -> str:
            raise TimeoutError(f"{url} timed out")

        tools = rec.wrap_tools({"fetch": fetch})
        assert add(1, 2, 3, mode="fast") == 6 and add.__name__ == "add"
        assert lookup_user("bob") == {"error": "NotFound: no such user"}
        with pytest.raises(TimeoutError):
            anyio.run(tools["fetch"], "http://x")
    calls = [e["content"] for e in sent_events(proxy, rec.trajectory_id)]
    assert calls[0]["tool"] == "add" and calls[0]["params"] == {"a": 1, "b": 2, "rest": [3], "mode": "fast"}
    assert calls[0]["result"] == 6 and calls[0]["status"] == "ok" and calls[0]["duration_ms"] >= 0
    assert calls[1]["tool"] == "lookup" and calls[1]["status"] == "error" and calls[1]["error"] == "NotFound: no such user"
    assert calls[2] == {**calls[2], "tool": "fetch", "params": {"url": "http://x"}, "status": "error",
                        "error": "TimeoutError: http://x timed out"}  # fmt: skip
    assert "fetch" in calls[2]["available_tools"]
    start = proxy.requests("POST", "/v1/trajectories")[0]
    assert start.path == "/v1/trajectories" and "fetch" in start.body["tools"]  # wrapped after the constructor


def test_large_and_odd_values_are_snapshotted_within_the_service_limits(proxied: Hindsight, proxy: FaultProxy) -> None:
    params = {"blob": "x" * 100_000, "rows": list(range(1000)), "raw": b"\x00" * 10, "obj": object()}
    with TrajectoryRecorder(proxied, agent_id="a", goal="g") as rec:
        rec.tool_call("big", params, result={"nested": [[[[[[[["deep"]]]]]]]]})
        params["blob"] = "mutated after the call"
    assert rec.stats.sent == 1
    content = sent_events(proxy, rec.trajectory_id)[0]["content"]
    assert content["params"]["blob"].startswith("xxx") and "more chars" in content["params"]["blob"]
    assert len(content["params"]["rows"]) == 51 and content["params"]["raw"] == "<10 bytes>"


def test_a_thousand_events_recorded_while_the_sender_sends_are_all_sent(proxied: Hindsight) -> None:
    """What this costs the agent's thread is measured by bench/recorder_cost.py, beside a floor."""
    n = 1000  # the embedded server ingests a few hundred events/s here; more only slows the suite
    params = {"city": "Lyon", "date": "tomorrow", "units": "metric"}
    with TrajectoryRecorder(proxied, agent_id="a", goal="g", max_buffer=n, close_timeout=30) as live:
        for i in range(n):
            live.tool_call("get_weather", params, result={"forecast": "rain", "temp": i})
    assert live.stats.recorded == n and live.stats.sent == n and live.stats.dropped == 0
