"""The whole loop with the LLM reviewer: HTTP in, the real OpenAI client to the stub, lesson out."""
from __future__ import annotations

import pytest
from chalice.test import Client

import app as app_module
from chalicelib import container
from chalicelib.settings import Settings
from devtools.openai_stub import OpenAIStub

from .conftest import ADMIN, Api
from .test_api import WEATHER_EVENTS, start


@pytest.fixture()
def llm_api(tmp_path):
    with OpenAIStub() as stub:
        settings = Settings(data_dir=str(tmp_path), embedder="hash", admin_key=ADMIN, worker=False,
                            openai_base_url=stub.base_url, llm_max_retries=0, review_max_attempts=2)
        deps = container.build_embedded(settings)
        container.set_deps(deps, settings)
        with Client(app_module.app) as client:
            yield Api(client, deps), stub
        container.set_deps(None, Settings())


def test_a_trajectory_reviewed_by_the_llm_becomes_recalled_advice(llm_api):
    api, stub = llm_api
    key = api.tenant()
    start(api, key)
    api.call("POST", "/v1/trajectories/tr1/events", key, {"events": WEATHER_EVENTS})
    api.call("POST", "/v1/trajectories/tr1/finalize", key, {"outcome": "success"})
    api.run_reviews()
    traj = api.call("GET", "/v1/trajectories/tr1", key).json_body
    assert traj["status"] == "reviewed" and traj["review"]["reviewer"].startswith("llm:")
    assert traj["review"]["tokens"]["compressed"] < traj["review"]["tokens"]["raw"]
    recall = api.call("POST", "/v1/recall", key, {"query": "Will it rain tomorrow?", "agent_id": "agent-1"}).json_body
    assert "Call `ask_user` before relying on `get_weather`" in recall["advice"]


def test_an_llm_outage_fails_the_review_visibly_and_a_redrive_recovers_it(llm_api):
    api, stub = llm_api
    key = api.tenant()
    start(api, key)
    api.call("POST", "/v1/trajectories/tr1/events", key, {"events": WEATHER_EVENTS})
    stub.faults(fail=100)
    api.call("POST", "/v1/trajectories/tr1/finalize", key, {"outcome": "success"})
    api.run_reviews()  # attempt 1 fails; attempt 2 is due later
    api.deps.clock.now = lambda real=api.deps.clock.now: real().replace(year=2100)  # jump past the backoff
    api.run_reviews()
    traj = api.call("GET", "/v1/trajectories/tr1", key).json_body
    assert traj["status"] == "review_failed" and "stub failure" in traj["review"]["error"]
    stub.faults()
    tenant_id = api.call("GET", "/v1/tenants", ADMIN).json_body["tenants"][0]["tenant_id"]
    api.deps.trajectories.save_review(tenant_id, "tr1", "finalized", [], {}, api.deps.clock.now())
    api.deps.queue.enqueue(tenant_id, "tr1", "full", api.deps.clock.now())
    api.run_reviews()
    assert api.call("GET", "/v1/trajectories/tr1", key).json_body["status"] == "reviewed"
