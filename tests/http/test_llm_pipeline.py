"""The whole loop with the LLM reviewer: HTTP in, the real OpenAI client to the stub, lesson out."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

import app as app_module
from chalicelib import container
from chalicelib.settings import Settings
from devtools.gateway_client import GatewayClient
from tests.support.http_api import ADMIN, Api

from .test_api import WEATHER_EVENTS, start


@pytest.fixture()
def llm_api(tmp_path, openai_stub, use_deps):
    stub = openai_stub
    settings = Settings(data_dir=str(tmp_path), embedder="hash", admin_key=ADMIN, worker=False,
                        openai_base_url=stub.base_url, llm_max_retries=0, review_max_attempts=2)
    deps = use_deps(container.build_embedded(settings), settings)
    with GatewayClient(app_module.app) as client:
        api = Api(client, deps)
        api.stub = stub
        yield api, stub


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


def at(text: str) -> datetime:
    return datetime.fromisoformat(text)


def _fail_review(api, key: str, tid: str = "tr1") -> None:
    assert start(api, key, tid).status_code == 201
    api.call("POST", f"/v1/trajectories/{tid}/events", key, {"events": WEATHER_EVENTS})
    api.stub.faults(fail=100)
    api.call("POST", f"/v1/trajectories/{tid}/finalize", key, {"outcome": "success"})
    api.run_reviews()  # attempt 1 fails; attempt 2 is due later
    real = api.deps.clock.now
    api.deps.clock.now = lambda: real() + timedelta(hours=1)  # past the backoff
    api.run_reviews()
    api.deps.clock.now = real


def test_an_llm_outage_fails_the_review_visibly_and_a_redrive_recovers_it(llm_api):
    api, stub = llm_api
    key = api.tenant()
    _fail_review(api, key)
    traj = api.call("GET", "/v1/trajectories/tr1", key).json_body
    assert traj["status"] == "review_failed"
    # the tenant sees the kind of failure, never its text (the operator's list below has it)
    assert traj["review"]["error"].startswith("review failed: ") and "stub failure" not in str(traj["review"])
    assert traj["review"]["attempts"] == 2
    assert datetime.fromisoformat(traj["review"]["failed_at"]) > datetime.now(timezone.utc) - timedelta(minutes=5)
    tenant_id = api.call("GET", "/v1/tenants", ADMIN).json_body["tenants"][0]["tenant_id"]
    (failed,) = api.call("GET", "/v1/maintenance/failed-reviews", ADMIN).json_body["failed"]
    assert failed["tenant_id"] == tenant_id and failed["trajectory_id"] == "tr1" and failed["kind"] == "full"
    assert failed["attempts"] == 2 and "stub failure" in failed["error"] and at(failed["failed_at"]) == at(traj["review"]["failed_at"])

    stub.faults()
    assert api.call("POST", "/v1/maintenance/redrive", ADMIN, {"tenant_id": tenant_id}).json_body == {"redriven": 1}
    redriven = api.call("GET", "/v1/trajectories/tr1", key).json_body
    assert redriven["status"] == "finalized" and redriven["review"]["redriven"]["previous"]["error"] == traj["review"]["error"]
    assert api.call("GET", "/v1/maintenance/failed-reviews", ADMIN).json_body == {"failed": []}
    assert api.run_reviews() == 1
    reviewed = api.call("GET", "/v1/trajectories/tr1", key).json_body
    assert reviewed["status"] == "reviewed" and reviewed["review"]["reviewer"].startswith("llm:")
    (exp,) = api.call("GET", "/v1/experiences", key).json_body["items"]
    assert reviewed["experience_ids"] == [exp["experience_id"]] and exp["sources"] == ["tr1"] and exp["support"] == 1

    # a second redrive finds nothing to do, and nothing is reviewed twice
    assert api.call("POST", "/v1/maintenance/redrive", ADMIN, {}).json_body == {"redriven": 0}
    assert api.run_reviews() == 0
    assert api.call("GET", "/v1/trajectories/tr1", key).json_body["status"] == "reviewed"


def test_redrive_picks_the_tenant_or_the_trajectories_it_is_given(llm_api):
    api, stub = llm_api
    keys = {name: api.tenant(name) for name in ("acme", "beta")}
    for name, key in keys.items():
        for tid in ("tr1", "tr2"):
            _fail_review(api, key, tid)
    ids = {t["name"]: t["tenant_id"] for t in api.call("GET", "/v1/tenants", ADMIN).json_body["tenants"]}
    listed = api.call("GET", "/v1/maintenance/failed-reviews", ADMIN, raw=None).json_body["failed"]
    assert sorted((f["tenant_id"], f["trajectory_id"]) for f in listed) == sorted(
        (ids[n], t) for n in keys for t in ("tr1", "tr2"))
    only_beta = api.client.http.get(f"/v1/maintenance/failed-reviews?tenant_id={ids['beta']}&limit=1",
                                    headers={"Authorization": f"Bearer {ADMIN}"}).json_body["failed"]
    assert [f["tenant_id"] for f in only_beta] == [ids["beta"]]

    stub.faults()
    body = {"tenant_id": ids["acme"], "trajectory_ids": ["tr2"]}
    assert api.call("POST", "/v1/maintenance/redrive", ADMIN, body).json_body == {"redriven": 1}
    api.run_reviews()
    status = {(n, t): api.call("GET", f"/v1/trajectories/{t}", keys[n]).json_body["status"] for n in keys for t in ("tr1", "tr2")}
    assert status == {("acme", "tr1"): "review_failed", ("acme", "tr2"): "reviewed",
                      ("beta", "tr1"): "review_failed", ("beta", "tr2"): "review_failed"}
    assert api.call("POST", "/v1/maintenance/redrive", ADMIN).json_body == {"redriven": 3}  # no body: all of them
    api.run_reviews()
    assert {api.call("GET", f"/v1/trajectories/{t}", keys[n]).json_body["status"] for n in keys for t in ("tr1", "tr2")} == {"reviewed"}


def test_failed_reviews_and_redrive_are_for_the_admin_only(llm_api):
    api, _ = llm_api
    key = api.tenant()
    for path, method in (("/v1/maintenance/failed-reviews", "GET"), ("/v1/maintenance/redrive", "POST")):
        assert api.call(method, path, key, {} if method == "POST" else None).status_code == 401
        assert api.call(method, path, None, {} if method == "POST" else None).status_code == 401
    bad = api.call("POST", "/v1/maintenance/redrive", ADMIN, {"trajectory_ids": "tr1"})
    assert bad.status_code in (400, 422) and "trajectory_ids" in bad.json_body["error"]["message"]


def test_the_llm_tokens_of_a_tenants_reviews_and_its_dead_review_jobs_are_metered(llm_api):
    from chalicelib.domain import usage
    from tests.http.test_usage_metering import RecordingMeter, tenant_id_of

    api, stub = llm_api
    meter = api.deps.meter = RecordingMeter()
    client, spent = api.deps.reviewer.client, []
    chat = client.chat
    client.chat = lambda **kw: (choice := chat(**kw), spent.append(choice.total_tokens))[0]
    reviewed, failing = api.tenant("reviewed"), api.tenant("failing")
    start(api, reviewed)
    api.call("POST", "/v1/trajectories/tr1/events", reviewed, {"events": WEATHER_EVENTS})
    api.call("POST", "/v1/trajectories/tr1/finalize", reviewed, {"outcome": "success"})
    assert api.run_reviews() == 1
    assert spent and all(spent)  # the stub reports usage, as OpenAI does
    assert meter.by_tenant[tenant_id_of(api, "reviewed")][usage.LLM_TOKENS] == sum(spent)
    assert meter.by_tenant[tenant_id_of(api, "reviewed")][usage.REVIEW_JOBS_DEAD] == 0

    _fail_review(api, failing, "tr9")  # two failed attempts: given up
    counts = meter.by_tenant[tenant_id_of(api, "failing")]
    assert counts[usage.REVIEW_JOBS_DEAD] == 1 and counts[usage.LLM_TOKENS] == 0
