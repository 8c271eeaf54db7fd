"""The key lookup runs in the authorizer, before any route can map an error: when its store cannot
answer (DynamoDB timing out under load), the embedded server answers 503 with Retry-After in the
contract's shape, as the routes do, not a 500 "internal_error"."""
from __future__ import annotations

import httpx

import app as app_module
from chalicelib.adapters.dynamo.errors import StoreUnavailable
from local.wsgi import make_wsgi_app


def test_a_store_failing_during_the_key_lookup_answers_503_with_retry_after(api, monkeypatch):
    key = api.tenant()

    def timed_out(key_hash):
        raise StoreUnavailable("DynamoDB tenant_for_key failed: GetError")

    monkeypatch.setattr(api.deps.tenants, "tenant_for_key", timed_out)
    with httpx.Client(transport=httpx.WSGITransport(app=make_wsgi_app(app_module.app, 1_048_576)), base_url="http://hs") as c:
        resp = c.post("/v1/recall", json={"query": "x"}, headers={"Authorization": f"Bearer {key}"})
    assert resp.status_code == 503, resp.text
    assert resp.json() == {"error": {"code": "unavailable", "message": "DynamoDB tenant_for_key failed: GetError"}}
    assert resp.headers["retry-after"] == "1"
