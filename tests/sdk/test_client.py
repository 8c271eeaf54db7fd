"""The typed client against the real server: the whole contract, sync and async, and its errors."""
from __future__ import annotations

import pytest

from hindsight_xp import (
    AsyncHindsight,
    ConfigurationError,
    Conflict,
    Hindsight,
    InvalidRequest,
    NotFound,
    PayloadTooLarge,
    Unauthorized,
)
from hindsight_xp.models import Experience, RecallResult, Trajectory

from .conftest import FAST_RETRY

TOOLS = ["search_flights", "lookup_airport"]
FLIGHT_EVENTS = [
    {"type": "user_input", "content": {"text": "Find me a flight from Paris to Rome next Friday"}},
    {"type": "tool_call", "content": {"tool": "search_flights", "params": {"from": "Paris", "to": "Rome"},
                                      "status": "error", "error": "InvalidAirport: expected an IATA code"}},
    {"type": "tool_call", "content": {"tool": "lookup_airport", "params": {"city": "Paris"}, "result": "CDG"}},
    {"type": "tool_call", "content": {"tool": "search_flights", "params": {"from": "CDG", "to": "FCO"}, "result": ["AZ333"]}},
]  # fmt: skip


def test_a_recorded_trajectory_becomes_a_recalled_lesson(client: Hindsight) -> None:
    traj = client.start_trajectory("travel-bot", "Find a flight from Paris to Rome", tools=TOOLS, task_type="query")
    assert traj.status == "open" and traj.trajectory_id.startswith("traj_")
    assert client.start_trajectory("travel-bot", "same id again", trajectory_id=traj.trajectory_id).trajectory_id == traj.trajectory_id

    accepted = client.append_events(traj.trajectory_id, FLIGHT_EVENTS)
    assert (accepted.accepted, accepted.duplicates) == (4, 0)
    assert client.finalize(traj.trajectory_id, "success").status in ("finalized", "reviewed")
    reviewed = client.wait_for_review(traj.trajectory_id, timeout=20)
    assert isinstance(reviewed, Trajectory) and reviewed.status == "reviewed" and reviewed.event_count == 4
    assert len(reviewed.experience_ids) == 1

    recall = client.recall("Book a plane ticket from Berlin to Madrid", agent_id="travel-bot", tools=TOOLS)
    assert isinstance(recall, RecallResult)
    top = recall.hits[0]
    assert top.experience.experience_id == reviewed.experience_ids[0]
    assert 0 < top.score <= 1 and top.explanation.semantic > 0
    assert "lookup_airport" in recall.advice and recall.advice.startswith("<hindsight>")


def test_experiences_are_written_idempotently_listed_fed_back_and_forgotten(client: Hindsight) -> None:
    exp = client.write_experience("Deploying on Fridays", lesson="Friday deploys break the weekend",
                                  advice="Do not deploy on Fridays.", tags=["ops"], agent_id="ops-bot")  # fmt: skip
    assert isinstance(exp, Experience) and exp.status == "active" and exp.tags == ("ops",)
    again = client.write_experience("something else", lesson="ignored", experience_id=exp.experience_id)
    assert again.experience_id == exp.experience_id and again.situation == "Deploying on Fridays"

    assert client.get_experience(exp.experience_id).advice == "Do not deploy on Fridays."
    ids = [e.experience_id for e in client.iter_experiences(page_size=1)]
    assert ids == [exp.experience_id]

    utility = client.feedback(exp.experience_id, "succeeded").utility
    assert utility > exp.utility

    gone = client.forget(exp.experience_id, "wrong")
    assert gone.status == "forgotten" and gone.status_reason == "wrong"
    assert client.recall("deploy on friday", agent_id="ops-bot").hits == ()
    assert [e.experience_id for e in client.iter_experiences(status="forgotten")] == [exp.experience_id]


def test_service_errors_map_to_the_exception_tree(client: Hindsight, server) -> None:
    with pytest.raises(NotFound) as info:
        client.get_experience("exp_does_not_exist")
    assert info.value.status == 404 and info.value.code == "not_found"

    with pytest.raises(InvalidRequest) as invalid:
        client.recall("")
    assert invalid.value.status == 422

    traj = client.start_trajectory("a", "g")
    client.finalize(traj.trajectory_id, "failure")
    with pytest.raises(Conflict):
        client.append_events(traj.trajectory_id, [{"type": "user_input", "content": {"text": "late"}}])

    with pytest.raises(PayloadTooLarge):
        client.append_events(traj.trajectory_id, [{"type": "user_input", "content": {"text": "x" * 70_000}}])

    with Hindsight(server.url, "hs_not_a_key", retry=FAST_RETRY) as bad:
        with pytest.raises(Unauthorized):
            bad.recall("anything")


def test_a_missing_key_fails_before_anything_is_sent(server) -> None:
    with Hindsight(server.url, api_key=None) as anonymous:
        assert anonymous.health().status == "ok"  # health needs no key
        with pytest.raises(ConfigurationError, match="HINDSIGHT_API_KEY"):
            anonymous.recall("anything")
        with pytest.raises(ConfigurationError, match="HINDSIGHT_ADMIN_KEY"):
            anonymous.create_tenant("x")


def test_more_than_one_hundred_events_are_refused_client_side(client: Hindsight) -> None:
    with pytest.raises(ValueError, match="at most 100"):
        client.append_events("t", [{"type": "user_input", "content": {"text": str(i)}} for i in range(101)])


def test_environment_variables_configure_the_client(server, api_key: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HINDSIGHT_URL", server.url)
    monkeypatch.setenv("HINDSIGHT_API_KEY", api_key)
    with Hindsight() as c:
        assert c.list_experiences().items == ()


@pytest.mark.anyio
async def test_the_async_client_speaks_the_same_contract(server, api_key: str) -> None:
    async with AsyncHindsight(server.url, api_key, retry=FAST_RETRY) as c:
        traj = await c.start_trajectory("travel-bot", "Find a flight from Lyon to Oslo", tools=TOOLS)
        accepted = await c.append_events(traj.trajectory_id, FLIGHT_EVENTS)
        assert accepted.accepted == 4
        assert (await c.append_events(traj.trajectory_id, accepted_again := [
            {**e, "event_id": f"fixed-{i}"} for i, e in enumerate(FLIGHT_EVENTS[:2])])).accepted == 2  # fmt: skip
        assert (await c.append_events(traj.trajectory_id, accepted_again)).duplicates == 2
        await c.finalize(traj.trajectory_id, "success")
        exp = await c.write_experience("async", lesson="works", advice="Await the client.")
        assert (await c.get_experience(exp.experience_id)).lesson == "works"
        with pytest.raises(NotFound):
            await c.get_trajectory("traj_missing")
        assert (await c.health()).status == "ok"


def test_a_correction_supersedes_the_lesson_it_names_and_auto_finds_it(client: Hindsight) -> None:
    old = client.write_experience("Choosing the database for the orders service", agent_id="coder",
                                  advice="Use SQLite for the orders service: one file, no server to run.")  # fmt: skip
    new = client.write_experience("Choosing the database for the orders service", agent_id="coder",
                                  advice="Use PostgreSQL for the orders service: it has concurrent writers.",
                                  supersedes=[old.experience_id])  # fmt: skip
    assert new.supersedes == old.experience_id and new.version == 2 and new.correction_of == ()
    stored = client.get_experience(old.experience_id)
    assert stored.status == "archived" and stored.superseded_by == new.experience_id
    assert stored.status_reason == f"superseded by {new.experience_id}"
    assert [h.experience.experience_id for h in client.recall("which database for the orders service", agent_id="coder").hits] == [
        new.experience_id]

    # another agent's lesson is not this scope's to replace; a forgotten one cannot be replaced
    theirs = client.write_experience("Scheduling a production deploy", advice="Deploy on Fridays.", agent_id="ops")
    with pytest.raises(NotFound):
        client.write_experience("Scheduling a production deploy", advice="Never on Fridays.", agent_id="coder",
                                supersedes=[theirs.experience_id])  # fmt: skip
    client.forget(theirs.experience_id, "wrong")
    with pytest.raises(Conflict):
        client.write_experience("Scheduling a production deploy", advice="Never on Fridays.", agent_id="ops",
                                supersedes=[theirs.experience_id])  # fmt: skip
    with pytest.raises(ValueError, match="auto"):
        client.write_experience("x", advice="y", supersedes=theirs.experience_id)  # type: ignore[arg-type]

    # flagged without supersedes, replaced with "auto"
    cache = client.write_experience("Caching product pages in the CDN", advice="Cache product pages for 24 hours.")
    flagged = client.write_experience("Caching product pages in the CDN",
                                      advice="Cache product pages for 5 minutes and purge on price change.")  # fmt: skip
    assert flagged.correction_of == (cache.experience_id,) and client.get_experience(cache.experience_id).status == "active"
    auto = client.write_experience("Caching product pages in the CDN", supersedes="auto",
                                   advice="Cache product pages for 5 minutes; purge them when a price changes.")  # fmt: skip
    assert auto.supersedes in (cache.experience_id, flagged.experience_id)
    assert {client.get_experience(i).status for i in (cache.experience_id, flagged.experience_id)} == {"archived"}


def test_an_admin_exports_and_deletes_a_tenant(client):
    """The admin calls of a tenant's export (its parts read as objects) and deletion."""
    import time as _time

    created = client.create_tenant(f"sdk-export-{_time.monotonic_ns()}")
    tenant_id = created.tenant_id
    client = client.with_api_key(created.api_key)
    client.write_experience(situation="an SDK exports a tenant", advice="Read the parts in order.")
    export = client.start_tenant_export(tenant_id)
    for _ in range(300):
        export = client.get_tenant_export(tenant_id, export["export_id"])
        if export["state"] == "done":
            break
        _time.sleep(0.1)
    assert export["state"] == "done" and export["counts"]["experiences"] == 1
    lines = client.get_tenant_export_part(tenant_id, export["export_id"], 1)
    assert lines[0]["type"] == "tenant" and lines[0]["data"]["tenant_id"] == tenant_id
    assert any(line["type"] == "experience" and line["data"]["advice"] == "Read the parts in order." for line in lines)

    deletion = client.delete_tenant(tenant_id)
    assert deletion["keys_revoked"] == 1 and client.delete_tenant(tenant_id)["tenant_id"] == tenant_id
    with pytest.raises(Unauthorized):
        client.stats()
    for _ in range(300):
        deletion = client.get_tenant_deletion(tenant_id)
        if deletion["state"] == "done":
            break
        _time.sleep(0.1)
    assert deletion["state"] == "done" and tenant_id not in [t.tenant_id for t in client.list_tenants()]
