"""SIGKILL of the embedded server while clients are ingesting, and while a review is running.

The clients act as the SDK does: a request whose answer was lost is sent again with the same ids.
What must hold after the restart on the same data directory: every event whose append was
answered 202 is stored, none twice; every trajectory whose finalize was answered 202 is reviewed,
exactly once (a lesson counts each trajectory once among its sources).
"""
from __future__ import annotations

import signal
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from devtools.openai_stub import OpenAIStub
from devtools.server_process import ServerProcess
from tests.support.polling import wait_reviewed

pytestmark = pytest.mark.e2e

THREADS, TRAJECTORIES, BATCHES, BATCH = 4, 4, 4, 5
KILL_AFTER = 40  # answered requests before the kill: some trajectories done, most in flight


def batch(tid: str, b: int) -> list[dict]:
    """The last batch holds the failing calls every trajectory learns the same lesson from."""
    if b < BATCHES - 1:
        return [{"event_id": f"{b}-{i}", "type": "llm_reasoning", "content": {"text": f"{tid}: step {b}.{i}"}}
                for i in range(BATCH)]  # fmt: skip
    return [{"event_id": f"{b}-{i}", "type": "tool_call", "content": {"tool": "sql", "params": {"q": "update"},
             "status": "error", "error": "PermissionError: read only"}} for i in range(BATCH)]  # fmt: skip


def plan(tid: str) -> list[tuple[str, str, dict]]:
    steps = [("start", "/v1/trajectories", {"trajectory_id": tid, "agent_id": "a", "goal": "update the sales database"})]
    steps += [("append", f"/v1/trajectories/{tid}/events", {"events": batch(tid, b)}) for b in range(BATCHES)]
    return steps + [("finalize", f"/v1/trajectories/{tid}/finalize", {"outcome": "failure"})]


@dataclass
class Ledger:
    """What the service acknowledged, and what was in flight when it died."""

    acked: dict[str, list[str]] = field(default_factory=dict)  # tid -> kinds of the steps answered
    in_flight: dict[str, str] = field(default_factory=dict)
    position: dict[str, int] = field(default_factory=dict)  # tid -> index of the next step to send
    lock: threading.Lock = field(default_factory=threading.Lock)
    answered: int = 0


def ingest(url: str, headers: dict, tids: list[str], ledger: Ledger, stop_at_failure: bool = True) -> None:
    with httpx.Client(base_url=url, headers=headers, timeout=30) as client:
        for tid in tids:
            steps = plan(tid)
            while ledger.position.get(tid, 0) < len(steps):
                kind, path, body = steps[ledger.position.get(tid, 0)]
                try:
                    resp = client.post(path, json=body)
                except httpx.TransportError:
                    with ledger.lock:
                        ledger.in_flight[tid] = kind
                    if stop_at_failure:
                        return
                    raise
                assert resp.status_code in (200, 201, 202), resp.text
                if kind == "append":
                    assert resp.json()["accepted"] + resp.json()["duplicates"] == BATCH
                with ledger.lock:
                    ledger.acked.setdefault(tid, []).append(kind)
                    ledger.position[tid] = ledger.position.get(tid, 0) + 1
                    ledger.in_flight.pop(tid, None)
                    ledger.answered += 1


def tenant(server: ServerProcess) -> dict:
    admin_key = (server.data_dir / "admin_key").read_text().strip()
    resp = httpx.post(f"{server.url}/v1/tenants", json={"name": "acme"}, headers={"Authorization": f"Bearer {admin_key}"})
    return {"Authorization": f"Bearer {resp.json()['api_key']}"}


def all_experiences(client: httpx.Client) -> list[dict]:
    return client.get("/v1/experiences", params={"limit": 200}).json()["items"]


def test_sigkill_mid_ingest_loses_no_answered_event_and_reviews_every_finalized_trajectory_once(start_server):
    server = start_server({"HINDSIGHT_EMBEDDER": "hash"})
    headers = tenant(server)
    work = {n: [f"w{n}-{k}" for k in range(TRAJECTORIES)] for n in range(THREADS)}
    ledger = Ledger()
    threads = [threading.Thread(target=ingest, args=(server.url, headers, tids, ledger)) for tids in work.values()]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 120
    while ledger.answered < KILL_AFTER and time.monotonic() < deadline:
        time.sleep(0.005)
    server.stop(signal.SIGKILL)  # requests of every thread are in flight
    for t in threads:
        t.join(60)
    assert ledger.answered >= KILL_AFTER and ledger.in_flight, "the kill should land while requests are in flight"
    finalized = [tid for tid, kinds in ledger.acked.items() if "finalize" in kinds]

    server.start()
    client = httpx.Client(base_url=server.url, headers=headers, timeout=30)
    try:
        for tid, kinds in ledger.acked.items():  # before any client resends: nothing answered is lost
            traj = client.get(f"/v1/trajectories/{tid}").json()
            acked_events = kinds.count("append") * BATCH
            maybe = BATCH if ledger.in_flight.get(tid) == "append" else 0  # stored or not, its answer was lost
            assert acked_events <= traj["event_count"] <= acked_events + maybe, (tid, kinds, traj)
        for tid in finalized:
            assert wait_reviewed(client, tid)["status"] == "reviewed"

        # the clients resume: the lost request again with the same ids, then the rest of their work
        resumed = [threading.Thread(target=ingest, args=(server.url, headers, tids, ledger, False)) for tids in work.values()]
        for t in resumed:
            t.start()
        for t in resumed:
            t.join(120)
        every = [tid for tids in work.values() for tid in tids]
        assert sorted(tid for tid, kinds in ledger.acked.items() if "finalize" in kinds) == sorted(every)
        reviewed = {tid: wait_reviewed(client, tid) for tid in every}
        assert {t["status"] for t in reviewed.values()} == {"reviewed"}
        assert {tid: t["event_count"] for tid, t in reviewed.items()} == {tid: BATCHES * BATCH for tid in every}

        exps = all_experiences(client)
        assert exps, "the failing calls teach a lesson"
        for exp in exps:  # each trajectory counted once by each lesson it taught
            assert len(exp["sources"]) == len(set(exp["sources"])) == exp["support"], exp
        learned_from = {s for exp in exps for s in exp["sources"]}
        assert learned_from == set(every)
        ids = {e["experience_id"] for e in exps}
        assert all(set(t["experience_ids"]) <= ids for t in reviewed.values())
    finally:
        client.close()
        server.stop()


WEATHER = [
    {"event_id": "1", "type": "user_input", "content": {"text": "weather tomorrow?"}},
    {"event_id": "2", "type": "tool_call", "content": {"tool": "get_weather", "params": {"date": "tomorrow"}, "status": "error",
                                                       "error": "MissingParameter: city is required"}},
    {"event_id": "3", "type": "tool_call", "content": {"tool": "ask_user", "params": {"question": "Which city?"}, "result": "Lyon"}},
    {"event_id": "4", "type": "tool_call", "content": {"tool": "get_weather", "params": {"date": "tomorrow", "city": "Lyon"},
                                                       "result": "rain"}},
]  # fmt: skip


def chat_requests(stub: OpenAIStub) -> int:
    with stub.state.lock:
        return sum(1 for r in stub.state.requests if "messages" in r)


def children(pid: int) -> set[int]:
    """The processes whose parent is ``pid`` (the server's ingest and review children)."""
    out = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # exited meanwhile
            continue
        if int(fields[1]) == pid:
            out.add(int(stat.parent.name))
    return out


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_sigkill_while_a_review_holds_its_lease_reviews_it_once_after_the_restart(start_server):
    with OpenAIStub() as stub:
        env = {"HINDSIGHT_EMBEDDER": "hash", "HINDSIGHT_OPENAI_BASE_URL": stub.base_url, "HINDSIGHT_LLM_MAX_RETRIES": "0",
               "HINDSIGHT_REVIEW_LEASE_SECONDS": "2"}  # fmt: skip
        server = start_server(env)
        headers = tenant(server)
        client = httpx.Client(base_url=server.url, headers=headers, timeout=30)
        try:
            stub.faults(delay=5.0)  # the LLM thinks; the worker holds the job's lease meanwhile
            client.post("/v1/trajectories", json={"trajectory_id": "r1", "agent_id": "weather-bot", "goal": "Will it rain tomorrow?",
                                                  "tools": ["get_weather", "ask_user"]})  # fmt: skip
            assert client.post("/v1/trajectories/r1/events", json={"events": WEATHER}).status_code == 202
            assert client.post("/v1/trajectories/r1/finalize", json={"outcome": "success"}).status_code == 202
            deadline = time.monotonic() + 30
            while chat_requests(stub) == 0:  # the review is under way: kill it now
                assert time.monotonic() < deadline, "the review never reached the LLM"
                time.sleep(0.01)
            assert server.proc is not None
            kids = children(server.proc.pid)
            assert kids, "the review runs in a child of the server"
            server.stop(signal.SIGKILL)
            deadline = time.monotonic() + 3  # well before the LLM's answer (5 s): the orphaned review is not finished
            while any(alive(pid) for pid in kids):
                assert time.monotonic() < deadline, "a child of the killed server is still running"
                time.sleep(0.05)
            assert chat_requests(stub) == 1
            stub.faults()  # the next answer comes at once

            server.start()
            traj = wait_reviewed(client, "r1")
            assert traj["status"] == "reviewed" and traj["review"]["reviewer"].startswith("llm:")
            assert chat_requests(stub) == 2  # the interrupted review ran again, once
            (exp,) = all_experiences(client)
            assert traj["experience_ids"] == [exp["experience_id"]] and exp["sources"] == ["r1"] and exp["support"] == 1
            time.sleep(2.5)  # past the old lease: nothing left to reclaim, nothing runs a third time
            assert chat_requests(stub) == 2 and client.get("/v1/trajectories/r1").json()["status"] == "reviewed"
        finally:
            client.close()
            server.stop()
