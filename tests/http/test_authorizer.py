"""The API key authorizer, invoked as API Gateway invokes it (``chalice.test.Client``), and the
answer a denied key gets.

API Gateway caches the authorizer's answer per key (infra/: 60-300 s) and applies it to every
route: the answers must name the whole API, deny what is not a tenant's key (so junk keys never
reach the API function), and come from the store on every call (so a revoked key is refused as
soon as the gateway's cache lets go of it).
"""
from __future__ import annotations

import json

import pytest
from chalice.test import Client

import app as app_module
from chalicelib.api import gateway_auth
from local.gateway import LeanAuthorizer
from tests.support.http_api import ADMIN

METHOD_ARN = "arn:aws:execute-api:us-east-1:123456789012:abcdef1234/api/GET/v1/stats"
API_WIDE = "arn:aws:execute-api:us-east-1:123456789012:abcdef1234/api/*/*"


def authorize(client, authorization: str, method_arn: str = METHOD_ARN) -> dict:
    event = {"type": "TOKEN", "authorizationToken": authorization, "methodArn": method_arn}
    return client.lambda_.invoke("api_key_authorizer", event).payload


def statement(answer: dict) -> dict:
    (only,) = answer["policyDocument"]["Statement"]
    return only


def test_a_tenants_key_is_allowed_on_every_route_with_its_tenant_in_the_context(api):
    key = api.tenant("acme")
    tenant_id = api.call("GET", "/v1/tenants", ADMIN).json_body["tenants"][0]["tenant_id"]
    answer = authorize(api.client, f"Bearer {key}")
    assert answer["principalId"] == tenant_id and answer["context"] == {"tenant_id": tenant_id}
    assert statement(answer) == {"Action": "execute-api:Invoke", "Effect": "Allow", "Resource": [API_WIDE]}
    # the answer API Gateway caches for this key lets it through to another route too
    matcher = LeanAuthorizer(app_module.app)
    for other in ("POST/v1/recall", "GET/v1/experiences/x%2Fy", "DELETE/v1/experiences/e1"):
        assert matcher._check_can_invoke_view_function(METHOD_ARN.replace("GET/v1/stats", other), answer)


@pytest.mark.parametrize("header, reason", [
    ("Bearer hs_" + "x" * 43, "unknown or revoked API key"),
    (f"Bearer {ADMIN}", "the admin key cannot read or write tenant data; use a tenant key"),
    ("Basic abc", "malformed Authorization header (expected 'Bearer <key>')"),
    ("Bearer", "malformed Authorization header (expected 'Bearer <key>')"),
])
def test_anything_but_a_tenants_key_is_denied_on_every_route_with_the_reason(api, header, reason):
    answer = authorize(api.client, header)
    assert statement(answer) == {"Action": "execute-api:Invoke", "Effect": "Deny", "Resource": [API_WIDE]}
    assert answer["principalId"] == "anonymous" and answer["context"] == {"error": reason}


def test_a_revoked_key_is_denied_by_the_next_call_the_authorizer_keeps_no_cache(api):
    """Rotation takes effect within the gateway's TTL: the authorizer itself remembers nothing."""
    old = api.tenant("acme")
    assert statement(authorize(api.client, f"Bearer {old}"))["Effect"] == "Allow"
    tenant_id = api.call("GET", "/v1/tenants", ADMIN).json_body["tenants"][0]["tenant_id"]
    new = api.call("POST", f"/v1/tenants/{tenant_id}/keys", ADMIN, {}).json_body["api_key"]
    assert statement(authorize(api.client, f"Bearer {old}"))["Effect"] == "Deny"
    assert statement(authorize(api.client, f"Bearer {new}"))["Effect"] == "Allow"


def test_a_denied_key_never_reaches_the_route(api, monkeypatch):
    """Chalice's stock emulation stops a denied request before the view with a 403 (API Gateway's
    ACCESS_DENIED before its gateway response); the view never runs, so neither the API function
    nor the tenant's rate limit is spent on it."""
    ran = []
    monkeypatch.setattr(app_module.api, "tenant", lambda: ran.append(1) or "t_x")
    with Client(app_module.app) as stock:
        resp = stock.http.get("/v1/stats", headers={"Authorization": "Bearer hs_unknown"})
    assert resp.status_code == 403 and ran == []


def test_a_denied_key_gets_the_contracts_401_with_the_reason(api):
    """What the deployed gateway response (infra/) and the embedded server both answer."""
    resp = api.call("GET", "/v1/stats", "hs_unknown")
    assert resp.status_code == 401
    assert json.loads(resp.body) == {"error": {"code": "unauthorized", "message": "unknown or revoked API key"}}


def test_the_answers_name_the_api_and_stage_of_the_request():
    assert gateway_auth.api_wide_arn("arn:aws:execute-api:eu-west-3:1:a1/prod/POST/v1/recall") == \
        "arn:aws:execute-api:eu-west-3:1:a1/prod/*/*"
    assert gateway_auth.api_wide_arn("arn:aws:execute-api:eu-west-3:1:a1/prod/GET/") == "arn:aws:execute-api:eu-west-3:1:a1/prod/*/*"
    for bad in ("", "arn:aws:execute-api:eu-west-3:1:a1", "/prod/GET/x"):
        with pytest.raises(ValueError):
            gateway_auth.api_wide_arn(bad)
    assert gateway_auth.denial_reason(gateway_auth.deny(METHOD_ARN, "why")) == "why"
    assert gateway_auth.denial_reason(gateway_auth.allow(METHOD_ARN, "t_1")) is None
