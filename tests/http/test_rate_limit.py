"""Per-tenant rate limits through the real routes: 429 with Retry-After once a tenant's bucket is
spent, other tenants untouched, refilled as the (fake) clock moves, off when set to 0."""
from __future__ import annotations

import pytest

import app as app_module
from chalicelib import container
from chalicelib.settings import Settings
from devtools.gateway_client import GatewayClient
from tests.support.fakes import FakeClock
from tests.support.http_api import ADMIN, Api

BURST = 3  # at 2 requests per second: a token every 0.5 s


@pytest.fixture()
def limited(tmp_path, use_deps):
    """``limited(per_second, burst)``: the embedded deps with that limit and a fake clock, installed."""

    def install(per_second: float = 2, burst: int = BURST):
        settings = Settings(
            data_dir=str(tmp_path), embedder="hash", admin_key=ADMIN, worker=False,
            rate_limit_per_second=per_second, rate_limit_burst=burst,
        )
        deps = container.build_embedded(settings)
        deps.clock = FakeClock()
        return use_deps(deps, settings)

    return install


@pytest.fixture()
def api(limited):
    deps = limited()
    with GatewayClient(app_module.app) as client:
        yield Api(client, deps)


def spend(api, key: str, n: int = BURST) -> None:
    for _ in range(n):
        assert api.call("GET", "/v1/stats", key).status_code == 200


def test_a_burst_over_the_limit_is_refused_with_429_and_retry_after(api):
    key = api.tenant()
    spend(api, key)
    resp = api.call("GET", "/v1/stats", key)
    assert resp.status_code == 429
    assert resp.headers["Retry-After"] == "1"  # 0.5 s, rounded up to whole seconds
    assert resp.json_body["error"]["code"] == "rate_limited"
    assert "retry in 1 s" in resp.json_body["error"]["message"]


def test_retry_after_counts_whole_seconds_of_a_slow_refill(limited):
    deps = limited(per_second=0.25, burst=1)  # a token every 4 s
    with GatewayClient(app_module.app) as client:
        api = Api(client, deps)
        key = api.tenant()
        spend(api, key, 1)
        assert api.call("GET", "/v1/stats", key).headers["Retry-After"] == "4"
        deps.clock.advance(seconds=2.5)
        assert api.call("GET", "/v1/stats", key).headers["Retry-After"] == "2"


def test_other_tenants_are_not_affected(api):
    busy, quiet = api.tenant("busy"), api.tenant("quiet")
    spend(api, busy)
    assert api.call("GET", "/v1/stats", busy).status_code == 429
    assert api.call("GET", "/v1/stats", quiet).status_code == 200


def test_the_bucket_refills_as_time_passes(api):
    key = api.tenant()
    spend(api, key)
    assert api.call("GET", "/v1/stats", key).status_code == 429
    api.deps.clock.advance(seconds=0.5)
    assert api.call("GET", "/v1/stats", key).status_code == 200  # one token back
    assert api.call("GET", "/v1/stats", key).status_code == 429
    api.deps.clock.advance(seconds=60)
    spend(api, key)  # a full burst again


TENANT_ROUTES = [
    ("POST", "/v1/trajectories", {"agent_id": "a", "goal": "g"}),
    ("GET", "/v1/trajectories/tr1", None),
    ("GET", "/v1/trajectories/tr1/events", None),
    ("POST", "/v1/trajectories/tr1/events", {"events": []}),
    ("POST", "/v1/trajectories/tr1/finalize", {"outcome": "success"}),
    ("POST", "/v1/experiences", {"situation": "s", "advice": "a"}),
    ("GET", "/v1/experiences", None),
    ("GET", "/v1/experiences/e1", None),
    ("DELETE", "/v1/experiences/e1", {}),
    ("POST", "/v1/experiences/e1/feedback", {"signal": "adopted"}),
    ("POST", "/v1/recall", {"query": "q"}),
    ("POST", "/v1/advise", {"tool": "t"}),
    ("POST", "/v1/experiences/e1/restore", {}),
    ("POST", "/v1/maintenance/reindex", {}),
    ("GET", "/v1/stats", None),
    ("GET", "/v1/agents", None),
    ("POST", "/v1/otlp/v1/traces", {}),
]


def test_every_tenant_route_is_limited_before_it_reads_the_body(api):
    routes = {(m, p) for p, by_method in app_module.app.routes.items() for m, r in by_method.items() if r.authorizer is not None}
    assert routes == {(m, p.replace("tr1", "{trajectory_id}").replace("e1", "{experience_id}")) for m, p, _ in TENANT_ROUTES}
    key = api.tenant()
    spend(api, key)
    for method, path, _ in TENANT_ROUTES:
        resp = api.call(method, path, key, raw="not json")  # the limit answers before the parser would
        assert (resp.status_code, resp.json_body["error"]["code"]) == (429, "rate_limited"), (method, path)


def test_admin_routes_and_bad_keys_are_not_counted_against_a_tenant(api):
    key = api.tenant()
    for _ in range(5):
        assert api.call("GET", "/v1/tenants", ADMIN).status_code == 200
        assert api.call("GET", "/v1/stats", "hs_wrong").status_code == 401
    spend(api, key)


def test_a_limit_of_zero_turns_limiting_off(limited):
    deps = limited(per_second=0, burst=0)
    with GatewayClient(app_module.app) as client:
        api = Api(client, deps)
        key = api.tenant()
        spend(api, key, 50)


def test_the_default_limit_is_generous():
    settings = Settings()
    assert settings.rate_limit_per_second >= 100 and settings.rate_limit_burst >= 200


def test_recall_and_ingest_are_charged_by_the_work_they_ask_for(limited):
    """1,200 recalls of top_k 50 with long queries in 77 s drew no 429 (one token each)."""
    deps = limited(per_second=1, burst=12)
    with GatewayClient(app_module.app) as client:
        api = Api(client, deps)
        key = api.tenant()
        heavy = {"query": "word " * 400 + "end", "top_k": 50}  # 1 + 50 / 10 + 2003 / 500 = 10 tokens
        assert api.call("POST", "/v1/recall", key, heavy).status_code == 200
        refused = api.call("POST", "/v1/recall", key, heavy)
        assert refused.status_code == 429 and int(refused.headers["Retry-After"]) >= 8
        assert api.call("POST", "/v1/recall", key, {"query": "light"}).status_code == 200  # 1 token: 1 left

        other = api.tenant("other")
        assert api.call("POST", "/v1/trajectories", other, {"trajectory_id": "t", "agent_id": "a", "goal": "g"}).status_code == 201
        def batch(n):  # 100 events: 5 tokens
            return {"events": [{"event_id": f"{n}-{i}", "type": "user_input", "content": {"text": str(i)}} for i in range(100)]}

        assert api.call("POST", "/v1/trajectories/t/events", other, batch(1)).status_code == 202
        assert api.call("POST", "/v1/trajectories/t/events", other, batch(2)).status_code == 202
        assert api.call("POST", "/v1/trajectories/t/events", other, batch(3)).status_code == 429
