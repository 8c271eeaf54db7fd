"""Advise, recall ids, credit and restore through the SDK, its recorder, the CLI and the MCP server,
against the real server process."""
from __future__ import annotations

import json
import time
from typing import Any

import mcp
import pytest

from hindsight_xp import Conflict, Hindsight, TrajectoryRecorder
from hindsight_xp.config import Config
from hindsight_xp.mcp_server import build_server

from .conftest import FAST_RETRY
from .servers import HindsightServer
from .test_cli import hindsight

CHARGE_LESSON = "`charge` takes `amount` in integer cents (1999 for 19.99)."


def charge_lesson(client: Hindsight, agent_id: str = "shop-bot") -> str:
    return client.write_experience("Charging a customer through the billing API", advice=CHARGE_LESSON,
                                   tools=["charge"], agent_id=agent_id).experience_id  # fmt: skip


def wait_credited(client: Hindsight, experience_id: str, served: int, timeout: float = 20.0):
    deadline = time.monotonic() + timeout
    while True:
        exp = client.get_experience(experience_id)
        if exp.served >= served or time.monotonic() > deadline:
            return exp
        time.sleep(0.05)


def test_advise_and_restore_through_the_client(client: Hindsight) -> None:
    exp_id = charge_lesson(client)
    warned = client.advise("charge", {"amount": 19.99}, agent_id="shop-bot")
    assert [w.experience_id for w in warned.warnings] == [exp_id] and "decimal number" in warned.warnings[0].message
    assert warned.warnings[0].fix == CHARGE_LESSON and "WARNING:" in warned.advice and warned.recall_id
    fine = client.advise("charge", {"amount": 1999}, agent_id="shop-bot")
    assert (fine.warnings, fine.hits, fine.advice) == ((), (), "")
    recalled = client.recall("charge the customer", agent_id="shop-bot", tools=["charge"])
    assert recalled.recall_id.startswith("rc_")
    for _ in range(8):
        client.feedback(exp_id, "failed")
    assert client.get_experience(exp_id).status == "archived"
    assert client.restore(exp_id).status == "active"
    assert client.advise("charge", {"amount": 19.99}, agent_id="shop-bot").warnings[0].experience_id == exp_id
    client.forget(exp_id, "wrong")
    with pytest.raises(Conflict):
        client.restore(exp_id)


def test_the_recorder_consults_advise_before_each_wrapped_call_and_the_review_credits_it(client: Hindsight) -> None:
    exp_id = charge_lesson(client)
    seen: list[tuple[str, Any]] = []

    def charge(amount: Any, currency: str = "EUR") -> str:
        return "ok"

    with TrajectoryRecorder(client, agent_id="shop-bot", goal="Charge the order", advise=True,
                            on_advice=lambda tool, result: seen.append((tool, result))) as rec:  # fmt: skip
        tools = rec.wrap_tools({"charge": charge})
        tools["charge"](amount=19.99)  # warned before the call
        assert rec.last_advice is not None and rec.last_advice.warnings[0].experience_id == exp_id
        tools["charge"](amount=1999)  # nothing to say: no recall event for this one
    assert [t for t, _ in seen] == ["charge", "charge"] and seen[1][1].hits == ()
    traj = client.wait_for_review(rec.trajectory_id, timeout=20)
    assert traj.review["credit"]["ignored"] == [exp_id]  # the first call after the warning broke it
    exp = wait_credited(client, exp_id, 1)
    assert (exp.served, exp.adopted, exp.success_when_ignored) == (1, 0, 1.0)


def test_a_recorder_whose_advise_fails_goes_on_without_it() -> None:
    calls = []
    client = Hindsight("http://127.0.0.1:9", "hs_nothing", retry=FAST_RETRY)
    rec = TrajectoryRecorder(client, agent_id="a", goal="g", advise=True, advise_timeout=0.2, close_timeout=0.2)
    tool = rec.wrap_tools({"t": lambda x: calls.append(x) or "done"})["t"]
    started = time.perf_counter()
    assert tool(1) == "done" and calls == [1]
    assert time.perf_counter() - started < 2.0
    assert rec.last_advice is None and rec.advise_errors
    rec.close(finalize=False)
    client.close()


def test_recall_through_the_recorder_attaches_its_id(client: Hindsight) -> None:
    exp_id = charge_lesson(client)
    with TrajectoryRecorder(client, agent_id="shop-bot", goal="Charge the order") as rec:
        recalled = rec.recall("Charge the customer for the order", tools=["charge"])
        assert [h.experience.experience_id for h in recalled.hits] == [exp_id]
        rec.tool_call("charge", {"amount": 1250}, result="ok")
    traj = client.wait_for_review(rec.trajectory_id, timeout=20)
    assert traj.review["credit"]["adopted"] == [exp_id]
    assert wait_credited(client, exp_id, 1).success_when_adopted == 1.0


def test_cli_advise_and_restore(server: HindsightServer, api_key: str, client: Hindsight) -> None:
    exp_id = charge_lesson(client)
    shown = hindsight(server, "advise", "charge", "--params", '{"amount": 19.99}', "--agent-id", "shop-bot", api_key=api_key)
    assert shown.exit_code == 0, shown.output
    assert "warning" in shown.stdout and "integer cents" in shown.stdout
    as_json = json.loads(hindsight(server, "advise", "charge", "--params", '{"amount": 1999}', "--agent-id", "shop-bot",
                                   "--json", api_key=api_key).stdout)  # fmt: skip
    assert as_json["warnings"] == [] and as_json["advice"] == "" and as_json["recall_id"]
    bad = hindsight(server, "advise", "charge", "--params", "[1]", api_key=api_key)
    assert bad.exit_code != 0
    for _ in range(8):
        client.feedback(exp_id, "failed")
    restored = hindsight(server, "restore", exp_id, api_key=api_key)
    assert restored.exit_code == 0 and "active" in restored.stdout
    client.forget(exp_id, "wrong")
    refused = hindsight(server, "restore", exp_id, api_key=api_key)
    assert refused.exit_code == 1 and "409" in refused.stderr


async def call(c: mcp.Client, name: str, **arguments: Any) -> dict[str, Any]:
    result = await c.call_tool(name, arguments)
    assert not result.is_error, result.content[0].text
    return result.structured_content


@pytest.mark.anyio
async def test_mcp_advise_attaches_its_recall_id_to_the_running_trajectory(server, api_key: str, client: Hindsight) -> None:
    exp_id = charge_lesson(client, agent_id="mcp-agent")
    async with mcp.Client(build_server(Config(url=server.url, api_key=api_key))) as c:
        await call(c, "record_events", trajectory_id="mcp-task", goal="Charge the order",
                   events=[{"type": "user_input", "content": {"text": "Charge 12.50"}}])  # fmt: skip
        advised = await call(c, "memory_advise", tool="charge", params={"amount": 12.5}, trajectory_id="mcp-task")
        assert [w["experience_id"] for w in advised["warnings"]] == [exp_id] and advised["attached_to"] == "mcp-task"
        await call(c, "record_events", trajectory_id="mcp-task", events=[
            {"type": "tool_call", "content": {"tool": "charge", "params": {"amount": 1250}, "result": "ok"}}])
        await call(c, "finalize_trajectory", trajectory_id="mcp-task", outcome="success")
        client.wait_for_review("mcp-task", timeout=20)
        lesson = (await call(c, "query_experience", experience_id=exp_id))["experience"]
        assert (lesson["served"], lesson["adopted"], lesson["success_when_adopted"]) == (1, 1, 1.0)
        for _ in range(8):
            client.feedback(exp_id, "failed")
        assert (await call(c, "memory_restore", experience_id=exp_id))["status"] == "active"
        unattached = await call(c, "memory_recall", situation="charge", trajectory_id="never-started")
        assert unattached["attached_to"] is None and unattached["recall_id"]
