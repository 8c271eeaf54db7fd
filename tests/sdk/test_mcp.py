"""The MCP server, driven by the official MCP client: in process, over stdio as a subprocess,
and over streamable HTTP as a subprocess; each against the real hindsight server."""
from __future__ import annotations

import os
import subprocess
import sys
from typing import Any, AsyncIterator

import httpx
import httpx2
import mcp
import pytest
from mcp.client.streamable_http import streamable_http_client

from hindsight_xp import Hindsight
from hindsight_xp.config import Config
from hindsight_xp.mcp_server import build_server

from devtools.net import free_port, wait_http
from devtools.server_process import ROOT

pytestmark = pytest.mark.anyio

TOOLS = {"memory_recall", "memory_advise", "memory_restore", "memory_write", "memory_forget", "memory_feedback", "record_events",
         "record_trajectory_node", "finalize_trajectory", "query_experience"}  # fmt: skip
WEATHER_EVENTS = [
    {"type": "user_input", "content": {"text": "Will it rain tomorrow?"}},
    {"type": "tool_call", "content": {"tool": "get_weather", "params": {"date": "tomorrow"}, "status": "error",
                                      "error": "MissingParameter: city is required"}},
    {"type": "tool_call", "content": {"tool": "ask_user", "params": {"question": "Which city?"}, "result": "Lyon"}},
    {"type": "tool_call", "content": {"tool": "get_weather", "params": {"date": "tomorrow", "city": "Lyon"}, "result": "rain"}},
]  # fmt: skip


async def call(client: mcp.Client, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content[0].text
    return result.structured_content


async def call_error(client: mcp.Client, tool: str, **arguments: Any) -> str:
    result = await client.call_tool(tool, arguments)
    assert result.is_error
    return result.content[0].text


async def test_in_process_a_recorded_task_becomes_advice(server, api_key: str, client: Hindsight) -> None:
    hs = build_server(Config(url=server.url, api_key=api_key))
    async with mcp.Client(hs) as c:
        listed = {t.name: t for t in (await c.list_tools()).tools}
        assert set(listed) == TOOLS
        assert "BEFORE you act" in listed["memory_recall"].description
        assert "goal" in listed["record_events"].input_schema["properties"]

        recorded = await call(c, "record_events", trajectory_id="task-1", goal="Will it rain tomorrow?",
                              agent_id="weather-bot", tools=["get_weather", "ask_user"], events=WEATHER_EVENTS)  # fmt: skip
        assert recorded == {"trajectory_id": "task-1", "accepted": 4, "duplicates": 0}
        again = await call(c, "record_events", trajectory_id="task-1", events=[{**WEATHER_EVENTS[0], "event_id": "u1"}])
        assert again["accepted"] == 1  # no goal needed once the trajectory exists
        node = await call(c, "record_trajectory_node", trajectory_id="task-1", node_type="feedback",
                          text="thanks", sentiment="positive", node_id="n9")  # fmt: skip
        assert node["accepted"] == 1
        final = await call(c, "finalize_trajectory", trajectory_id="task-1", outcome="success")
        assert final["status"] in ("finalized", "reviewed")
        client.wait_for_review("task-1", timeout=20)
        reviewed = (await call(c, "query_experience", trajectory_id="task-1"))["trajectory"]
        assert reviewed["status"] == "reviewed" and len(reviewed["experience_ids"]) == 1

        recalled = await call(c, "memory_recall", situation="Is it going to be sunny this weekend?",
                              agent_id="weather-bot", tools=["get_weather", "ask_user"])  # fmt: skip
        assert recalled["lessons"][0]["experience_id"] == reviewed["experience_ids"][0]
        assert "`ask_user` before `get_weather`" in recalled["advice"]

        assert "pass `goal`" in await call_error(c, "record_events", trajectory_id="never-started", events=WEATHER_EVENTS[:1])
        assert "404" in await call_error(c, "memory_forget", experience_id="exp_missing", reason="x")


async def test_in_process_lessons_are_written_fed_back_queried_and_forgotten(server, api_key: str) -> None:
    async with mcp.Client(build_server(Config(url=server.url, api_key=api_key))) as c:
        written = await call(c, "memory_write", situation="Exporting a report as PDF", lesson="The exporter needs fonts",
                             advice="Install the fonts before exporting to PDF.", tools=["export_pdf"], agent_id="r")  # fmt: skip
        exp_id = written["experience_id"]
        assert (await call(c, "query_experience", experience_id=exp_id))["experience"]["advice"].startswith("Install")
        before = written["utility"]
        assert (await call(c, "memory_feedback", experience_id=exp_id, signal="succeeded"))["utility"] > before
        listed = await call(c, "query_experience", agent_id="r", status="active")
        assert [e["experience_id"] for e in listed["experiences"]] == [exp_id]
        assert (await call(c, "memory_forget", experience_id=exp_id, reason="fonts ship now"))["status"] == "forgotten"
        assert (await call(c, "memory_recall", situation="export PDF", agent_id="r"))["lessons"] == []


async def test_over_stdio_as_a_subprocess(server, api_key: str) -> None:
    params = mcp.StdioServerParameters(command=sys.executable, args=["-m", "hindsight_xp", "mcp"], cwd=str(ROOT),
                                       env={"HINDSIGHT_URL": server.url, "HINDSIGHT_API_KEY": api_key})  # fmt: skip
    with open(os.devnull, "w") as quiet:
        async with mcp.Client(params) as c:
            assert {t.name for t in (await c.list_tools()).tools} == TOOLS
            written = await call(c, "memory_write", situation="Calling the billing API", lesson="It needs an idempotency key",
                                 advice="Send an Idempotency-Key header to the billing API.")  # fmt: skip
            recalled = await call(c, "memory_recall", situation="Charge the customer through the billing API")
            assert recalled["lessons"][0]["experience_id"] == written["experience_id"]
    del quiet


@pytest.fixture()
async def mcp_http(server) -> AsyncIterator[str]:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("HINDSIGHT_")} | {"HINDSIGHT_URL": server.url}
    proc = subprocess.Popen([sys.executable, "-m", "hindsight_xp", "mcp", "--http", "--port", str(port)],
                            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        wait_http(f"http://127.0.0.1:{port}/health", proc)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(10)


async def test_over_http_the_key_comes_from_the_authorization_header(mcp_http: str, api_key: str) -> None:
    health = httpx.get(f"{mcp_http}/health").json()
    assert health["status"] == "ok" and health["hindsight"]["backend"] == "embedded"

    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {api_key}"}) as http:
        async with mcp.Client(streamable_http_client(f"{mcp_http}/mcp", http_client=http)) as c:
            written = await call(c, "memory_write", situation="Rotating TLS certificates", lesson="Reload, not restart",
                                 advice="Reload nginx after rotating certificates; a restart drops connections.")  # fmt: skip
            recalled = await call(c, "memory_recall", situation="rotate the TLS certificate on the web servers")
            assert recalled["lessons"][0]["experience_id"] == written["experience_id"]

    async with httpx2.AsyncClient() as http:  # no header, and the server has no HINDSIGHT_API_KEY
        async with mcp.Client(streamable_http_client(f"{mcp_http}/mcp", http_client=http)) as c:
            assert "no hindsight API key" in await call_error(c, "memory_recall", situation="anything")


async def test_in_process_a_lesson_written_with_supersedes_replaces_the_wrong_one(server, api_key: str) -> None:
    async with mcp.Client(build_server(Config(url=server.url, api_key=api_key))) as c:
        tool = {t.name: t for t in (await c.list_tools()).tools}["memory_write"]
        assert "supersedes" in tool.input_schema["properties"]
        wrong = await call(c, "memory_write", situation="Calling the maps API from the backend", agent_id="r",
                           lesson="v2 works", advice="Call the maps API v2 endpoint with the key in the query string.")
        right = await call(c, "memory_write", situation="Calling the maps API from the backend", agent_id="r",
                           lesson="v2 is shut down", advice="Call the maps API v3 with the key in the Authorization header.",
                           supersedes=[wrong["experience_id"]])  # fmt: skip
        assert right["supersedes"] == wrong["experience_id"] and right["correction_of"] == []
        old = (await call(c, "query_experience", experience_id=wrong["experience_id"]))["experience"]
        assert old["status"] == "archived" and old["superseded_by"] == right["experience_id"]
        recalled = await call(c, "memory_recall", situation="call the maps API", agent_id="r")
        assert [lesson["experience_id"] for lesson in recalled["lessons"]] == [right["experience_id"]]
        error = await call_error(c, "memory_write", situation="Calling the maps API", advice="Use v4.", lesson="v4",
                                 agent_id="someone-else", supersedes=[right["experience_id"]])  # fmt: skip
        assert "not found" in error.lower()
