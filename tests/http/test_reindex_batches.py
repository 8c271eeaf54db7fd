"""POST /v1/maintenance/reindex runs one bounded batch per request: a tenant's reindex is a walk of
cursors, each request costing (in its rate limit's tokens) the lessons it embeds again."""
from __future__ import annotations

import pytest

from chalicelib import container
from chalicelib.settings import Settings


def lessons(api, key: str, n: int) -> None:
    for i in range(n):
        body = {"situation": f"Charging customer {i}", "advice": f"Pass `amount` in integer cents ({i}).", "tools": ["charge"]}
        assert api.call("POST", "/v1/experiences", key, body).status_code == 201


def test_a_reindex_is_a_walk_of_bounded_batches_that_reaches_every_lesson(api, monkeypatch):
    key = api.tenant()
    lessons(api, key, 23)
    indexed: list[int] = []  # index entries written per request
    real = api.deps.index.upsert
    monkeypatch.setattr(api.deps.index, "upsert", lambda t, entries, *a, **kw: indexed.append(len(entries)) or real(t, entries, *a, **kw))
    total, cursor, requests = 0, None, 0
    while True:
        resp = api.call("POST", "/v1/maintenance/reindex", key, {"limit": 10} | ({"cursor": cursor} if cursor else {}))
        assert resp.status_code == 200, resp.body
        total += resp.json_body["reindexed"]
        cursor = resp.json_body["cursor"]
        requests += 1
        if cursor is None:
            break
    assert total == 23 and indexed == [10, 10, 3] and requests == 3
    hits = api.call("POST", "/v1/recall", key, {"query": "charging a customer"}).json_body["hits"]
    assert hits  # the index answers from what was rebuilt
    default = api.call("POST", "/v1/maintenance/reindex", key, {}).json_body
    assert default["reindexed"] == 23 and default["cursor"] is None  # the default batch, 50, holds them all


@pytest.mark.parametrize("body", [{"limit": 0}, {"limit": 201}, {"cursor": "not-a-cursor"}, {"extra": 1}])
def test_a_batch_out_of_bounds_or_a_forged_cursor_answers_422(api, body):
    key = api.tenant()
    lessons(api, key, 1)
    assert api.call("POST", "/v1/maintenance/reindex", key, body).status_code == 422


def test_a_batch_costs_its_lessons_in_the_tenants_tokens(tmp_path, use_deps):
    """A burst of 30 tokens: a batch of 50 (25 tokens) passes once, the next is refused (429)."""
    import app as app_module
    from devtools.gateway_client import GatewayClient
    from tests.support.http_api import ADMIN, Api

    settings = Settings(data_dir=str(tmp_path), embedder="hash", admin_key=ADMIN, worker=False,
                        rate_limit_per_second=0.001, rate_limit_burst=30)
    deps = use_deps(container.build_embedded(settings), settings)
    with GatewayClient(app_module.app) as client:
        api = Api(client, deps)
        key = api.tenant()
        assert api.call("POST", "/v1/maintenance/reindex", key, {"limit": 50}).status_code == 200
        refused = api.call("POST", "/v1/maintenance/reindex", key, {"limit": 50})
        assert refused.status_code == 429, refused.body
        assert api.call("POST", "/v1/maintenance/reindex", key, {"limit": 2}).status_code == 200  # 1 token: still there


def test_a_reindex_without_a_body_is_the_first_batch(api):
    key = api.tenant()
    lessons(api, key, 2)
    resp = api.call("POST", "/v1/maintenance/reindex", key)
    assert resp.status_code == 200 and resp.json_body == {"reindexed": 2, "cursor": None}
