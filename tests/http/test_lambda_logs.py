"""The Lambda path logs no key: the authorizer, the API routes and the event handlers run with
every logger at DEBUG (Powertools with ``POWERTOOLS_LOGGER_LOG_EVENT``), the way a Lambda built
from the environment runs (settings read by the container, so the admin and OpenAI keys are known
to the redaction), and everything written is searched for every key."""
from __future__ import annotations

import io
import json
import logging
import secrets

import pytest

import app as app_module
from chalicelib import container, lambda_handlers, observability, redaction
from devtools.gateway_client import GatewayClient

ADMIN_KEY = "admin key with spaces " + secrets.token_hex(12)  # no known shape: masked as a registered value
OPENAI_KEY = "sk-test-" + secrets.token_urlsafe(24)


def fresh_powertools_logger() -> None:
    """Forget the Powertools logger an earlier test built (its handler holds that test's stdout;
    Powertools does not configure a logger twice), as a new Lambda process would start."""
    observability.logger.cache_clear()
    std = logging.getLogger(observability.SERVICE)
    for handler in list(std.handlers):
        std.removeHandler(handler)
    std.filters.clear()
    for attr in [a for a in vars(std) if a.startswith("powertools_") or a == "init"]:
        delattr(std, attr)


@pytest.fixture()
def lambda_env(tmp_path, monkeypatch, capsys, use_deps):
    for name, value in {
        "HINDSIGHT_DATA_DIR": str(tmp_path), "HINDSIGHT_EMBEDDER": "hash", "HINDSIGHT_WORKER": "false",
        "HINDSIGHT_ADMIN_KEY": ADMIN_KEY, "HINDSIGHT_OPENAI_API_KEY": OPENAI_KEY,
        "HINDSIGHT_OPENAI_BASE_URL": "http://127.0.0.1:9/v1",  # the reviewer is built, never reached here
        "POWERTOOLS_LOG_LEVEL": "DEBUG", "POWERTOOLS_LOGGER_LOG_EVENT": "true",
    }.items():
        monkeypatch.setenv(name, value)
    use_deps(None, None)  # built from the environment, as in Lambda
    monkeypatch.setattr(container, "_settings", None)
    fresh_powertools_logger()  # built again below, at DEBUG, writing to the captured stdout

    # the Lambda runtime's handler on the root logger, there before the app is imported
    root, stream = logging.getLogger(), io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s %(message)s"))
    previous = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    redaction.install()  # what importing app.py does in Lambda
    try:
        with GatewayClient(app_module.app) as client:
            yield client, stream
    finally:
        root.removeHandler(handler)
        root.setLevel(previous)
        fresh_powertools_logger()


def authorize(client: GatewayClient, token: str) -> dict:
    event = {"type": "TOKEN", "authorizationToken": token,
             "methodArn": "arn:aws:execute-api:us-east-1:123456789012:abcdef/api/GET/v1/stats"}
    return client.lambda_.invoke("api_key_authorizer", event).payload


def test_no_key_is_logged_by_the_authorizer_the_routes_or_the_handlers(lambda_env, capsys):
    client, root_log = lambda_env
    call = lambda method, path, key, body=None: getattr(client.http, method)(  # noqa: E731
        path, headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
        body=body if isinstance(body, str) or body is None else json.dumps(body))

    created = call("post", "/v1/tenants", ADMIN_KEY, {"name": f"acme-{secrets.token_hex(4)}"}).json_body  # names are unique
    tenant_key = created["api_key"]
    unknown = "hs_" + secrets.token_urlsafe(32)
    # the authorizer, invoked as API Gateway invokes it
    assert authorize(client, f"Bearer {tenant_key}")["principalId"] == created["tenant_id"]
    assert authorize(client, f"Bearer {unknown}")["context"]["error"] == "unknown or revoked API key"
    assert "error" in authorize(client, f"Bearer {ADMIN_KEY}")["context"]
    # routes: good and bad keys, refused bodies quoting the key, a rotation
    assert call("get", "/v1/stats", tenant_key).status_code == 200
    assert call("get", "/v1/stats", unknown).status_code == 401
    assert call("post", "/v1/recall", tenant_key, f"{{{tenant_key}").status_code == 400
    assert call("post", "/v1/recall", tenant_key, {"query": 1, "key": tenant_key}).status_code == 422
    rotated = call("post", f"/v1/tenants/{created['tenant_id']}/keys", ADMIN_KEY, {}).json_body["api_key"]
    assert call("get", "/v1/stats", tenant_key).status_code == 401
    # the event handlers, and the Powertools logger given a whole API event (what log_event does)
    lambda_handlers.sweep()
    lambda_handlers.decay()
    api_event = {"headers": {"Authorization": f"Bearer {rotated}"}, "body": json.dumps({"api_key": rotated})}
    observability.logger().info(api_event)
    observability.logger().debug("api event", extra={"event": api_event})
    # botocore at DEBUG logs response bodies, Secrets Manager's too
    logging.getLogger("botocore.parsers").debug("Response body:\n%r", json.dumps({"SecretString": OPENAI_KEY}).encode())

    captured = capsys.readouterr()
    written = root_log.getvalue() + captured.out + captured.err
    assert "review sweep" in captured.out and "Response body" in root_log.getvalue()  # both logs were captured
    assert written.count(redaction.MASK) >= 4
    keys = {"admin": ADMIN_KEY, "openai": OPENAI_KEY, "tenant": tenant_key, "rotated": rotated, "unknown": unknown}
    assert [name for name, key in keys.items() if key in written] == []
