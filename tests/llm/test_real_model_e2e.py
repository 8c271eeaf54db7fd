"""A real language model in the loop: SmolLM2-135M behind llama.cpp's OpenAI-compatible server, the
real server process with the real OpenAI client, trajectories in over HTTP, lessons out.

The model is weak on purpose: whatever it writes, what is stored must be grounded in its trajectory,
the rules' lessons must survive, and every answer and lesson it gives is accounted for by reason.
"""
from __future__ import annotations

from datetime import datetime, timezone

import httpx
import pytest

from chalicelib.adapters.reviewers.llm import DROPPED, DUPLICATE, QUALITY_GATE, WEAKER_THAN_RULES
from chalicelib.domain import grounding
from chalicelib.domain.models import Event, Trajectory
from chalicelib.domain.review import review_by_rules
from tests.support.polling import wait_reviewed

pytestmark = pytest.mark.llm

T0 = datetime(2026, 12, 1, tzinfo=timezone.utc)

# The README's example, a lookup the agent had to make first, and a parameter it had to change.
CASES = [
    ({"trajectory_id": "t1", "agent_id": "weather-bot", "goal": "Will it rain tomorrow?", "tools": ["get_weather", "ask_user"]}, [
        {"event_id": "1", "type": "tool_call", "content": {"tool": "get_weather", "params": {"date": "tomorrow"}, "status": "error",
                                                             "error": "MissingParameter: city is required"}},
        {"event_id": "2", "type": "tool_call", "content": {"tool": "ask_user", "params": {"question": "Which city?"}, "result": "Lyon"}},
        {"event_id": "3", "type": "tool_call", "content": {"tool": "get_weather", "params": {"date": "tomorrow", "city": "Lyon"}, "result": "rain"}},
    ]),
    ({"trajectory_id": "t2", "agent_id": "travel-bot", "goal": "Book a flight from Paris to Berlin on May 3", "task_type": "booking",
      "tools": ["search_flights", "lookup_airport", "book_flight"]}, [
        {"event_id": "1", "type": "user_input", "content": {"text": "Book me a flight Paris to Berlin on May 3"}},
        {"event_id": "2", "type": "tool_call", "content": {"tool": "search_flights", "params": {"from": "Paris", "to": "Berlin", "date": "2026-05-03"},
                                                             "status": "error", "error": "InvalidAirport: use a 3-letter IATA code"}},
        {"event_id": "3", "type": "tool_call", "content": {"tool": "lookup_airport", "params": {"city": "Paris"}, "result": "CDG"}},
        {"event_id": "4", "type": "tool_call", "content": {"tool": "lookup_airport", "params": {"city": "Berlin"}, "result": "BER"}},
        {"event_id": "5", "type": "tool_call", "content": {"tool": "search_flights", "params": {"from": "CDG", "to": "BER", "date": "2026-05-03"},
                                                             "result": "AF1234 09:10"}},
        {"event_id": "6", "type": "tool_call", "content": {"tool": "book_flight", "params": {"flight": "AF1234"}, "result": "booked"}},
    ]),
    ({"trajectory_id": "t3", "agent_id": "ops-bot", "goal": "Deploy the billing service to staging", "task_type": "devops",
      "tools": ["run_shell"]}, [
        {"event_id": "1", "type": "user_input", "content": {"text": "deploy billing to staging"}},
        {"event_id": "2", "type": "tool_call", "content": {"tool": "run_shell", "params": {"cmd": "kubectl apply -f billing.yaml"},
                                                             "status": "error", "error": "Forbidden: namespace default is read-only"}},
        {"event_id": "3", "type": "tool_call", "content": {"tool": "run_shell", "params": {"cmd": "kubectl apply -f billing.yaml -n staging"},
                                                             "result": "deployment.apps/billing configured"}},
    ]),
]
ADAPTER_REASONS = {DUPLICATE, QUALITY_GATE, WEAKER_THAN_RULES}


def domain(tenant_id: str, body: dict, events: list[dict]) -> tuple[Trajectory, list[Event]]:
    traj = Trajectory(tenant_id=tenant_id, trajectory_id=body["trajectory_id"], agent_id=body["agent_id"], goal=body["goal"],
                      created_at=T0, updated_at=T0, task_type=body.get("task_type"), tools=body["tools"], outcome="success")
    return traj, [Event(event_id=e["event_id"], type=e["type"], timestamp=T0, content=e["content"], seq=i)
                  for i, e in enumerate(events, 1)]


@pytest.fixture()
def llm_server(start_server, local_llm):
    return start_server(env={
        "HINDSIGHT_EMBEDDER": "hash",
        "HINDSIGHT_OPENAI_BASE_URL": local_llm.base_url,
        "HINDSIGHT_REVIEW_MODEL_FULL": local_llm.model,
        "HINDSIGHT_LLM_ANSWER": "lessons",
        "HINDSIGHT_LLM_MAX_TOKENS": "320",
        "HINDSIGHT_LLM_TIMEOUT_SECONDS": "45",
        "HINDSIGHT_LLM_TIMEOUT_FALLBACK": "true",  # a slow answer leaves the review to the rules
        "HINDSIGHT_LLM_MAX_RETRIES": "0",
        "HINDSIGHT_LOCAL_REVIEWS": "false",  # one model call per trajectory: the full review's
    })


def test_what_a_real_small_model_writes_is_stored_only_when_grounded_and_the_rules_lessons_survive(llm_server):
    admin = llm_server.admin_key
    tenant = httpx.post(f"{llm_server.url}/v1/tenants", json={"name": "acme"}, headers={"Authorization": f"Bearer {admin}"}).json()
    client = httpx.Client(base_url=llm_server.url, headers={"Authorization": f"Bearer {tenant['api_key']}"}, timeout=30)
    for body, events in CASES:
        assert client.post("/v1/trajectories", json=body).status_code == 201
        assert client.post(f"/v1/trajectories/{body['trajectory_id']}/events", json={"events": events}).status_code == 202
        assert client.post(f"/v1/trajectories/{body['trajectory_id']}/finalize", json={"outcome": "success"}).status_code == 202

    figures = {"reviews": 0, "answered": 0, "accepted": 0, "rejected": {}, "dropped": {}, "latency_ms": []}
    for body, events in CASES:
        tid = body["trajectory_id"]
        reviewed = wait_reviewed(client, tid, timeout=120)
        assert reviewed["status"] == "reviewed", reviewed
        summary = reviewed["review"]
        llm = summary["llm_lessons"]
        figures["reviews"] += 1
        figures["latency_ms"].append(llm["latency_ms"])
        if llm["outcome"] == "ok":
            figures["answered"] += 1
            assert summary["reviewer"] == f"llm:{llm_server.extra_env['HINDSIGHT_REVIEW_MODEL_FULL']}+deterministic"
            assert llm["proposed"] == llm["accepted"] + len(llm["rejected"])  # every lesson accounted for
            figures["accepted"] += llm["accepted"]
            for r in llm["rejected"]:
                assert r["reason"] in set(grounding.REASONS) | ADAPTER_REASONS, r
                figures["rejected"][r["reason"]] = figures["rejected"].get(r["reason"], 0) + 1
        else:
            assert llm["outcome"] in DROPPED and summary["reviewer"] == "deterministic"
            figures["dropped"][llm["outcome"]] = figures["dropped"].get(llm["outcome"], 0) + 1

        traj, evs = domain(tenant["tenant_id"], body, events)
        stored = [client.get(f"/v1/experiences/{i}").json() for i in reviewed["experience_ids"]]
        assert stored, f"nothing learned from {tid}"
        evidence = grounding.evidence(traj, evs)
        for exp in stored:
            assert exp["sources"] == [tid]
            reason = grounding.check_lesson(exp["situation"], exp["lesson"], exp["advice"], None, evidence, exp["action"], exp["result"])
            assert reason is None, (reason, exp)
            assert not any(grounding.is_vacuous(exp[f], 3) for f in ("situation", "lesson", "advice")), exp
        # the rules' lessons: stored as the rules wrote them, or replaced by a model's lesson that
        # names every tool and parameter they name
        for rule in review_by_rules(traj, evs).lessons:
            same = [e for e in stored if e["advice"] == rule.advice]
            covering = [e for e in stored if e["advice"] != rule.advice
                        and grounding.covers(e["tools"], rule.tools, f"{e['lesson']} {e['advice']}", rule.advice)]
            assert same or (llm["accepted"] and covering), (rule.advice, stored)

    # the model really answered (within its schema) for at least one trajectory: this test is about it
    assert figures["answered"] >= 1, figures
    lat = sorted(figures["latency_ms"])
    print(f"\nreal model: reviews {figures['reviews']}, answered {figures['answered']}, dropped {figures['dropped']}, "
          f"lessons accepted {figures['accepted']}, rejected {figures['rejected']}, latency ms {lat}")
