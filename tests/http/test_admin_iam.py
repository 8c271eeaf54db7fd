"""Admin routes authorized by IAM (``HINDSIGHT_ADMIN_AUTH=iam``, what the stack in infra/ sets).

API Gateway checks the SigV4 signature and the caller's IAM permission before the route runs, and
names the caller in the request's identity (``userArn``); the route refuses a request without one,
and the admin key opens nothing. Chalice's local emulation does not check IAM (it lets the request
through with a warning), which is what makes the route's own check worth having.
"""
from __future__ import annotations

import json
import warnings

import pytest
from chalice import Chalice, IAMAuthorizer

from chalicelib.api.routes import Router
from devtools.gateway_client import GatewayClient
from tests.support.http_api import ADMIN

CALLER = "arn:aws:sts::123456789012:assumed-role/operator/alice"


def admin_app(admin_authorizer):
    app = Chalice(app_name="admin-iam-test", configure_logs=False)
    router = Router(app, authorizer=None, admin_authorizer=admin_authorizer)

    @router.route("GET", "/v1/tenants", "List tenants", auth="admin", uses_dependencies=False)
    def listed() -> dict:
        return {"tenants": []}

    return app


def lambda_event(identity: dict) -> dict:
    """An API Gateway proxy event for GET /v1/tenants as a deployed stage delivers it."""
    return {
        "resource": "/v1/tenants", "path": "/v1/tenants", "httpMethod": "GET",
        "headers": {"Host": "abc.execute-api.us-east-1.amazonaws.com"}, "multiValueHeaders": {},
        "queryStringParameters": None, "multiValueQueryStringParameters": None, "pathParameters": None,
        "stageVariables": None, "body": None, "isBase64Encoded": False,
        "requestContext": {"resourcePath": "/v1/tenants", "httpMethod": "GET", "path": "/api/v1/tenants", "stage": "api",
                           "identity": identity},
    }


@pytest.fixture()
def iam_app(api):  # ``api``: the embedded deps and the admin key installed in the container
    return admin_app(IAMAuthorizer())


def test_an_iam_authorized_call_reaches_the_admin_route(iam_app):
    answer = iam_app(lambda_event({"userArn": CALLER, "caller": "AROAEXAMPLE:alice"}), None)
    assert answer["statusCode"] == 200 and json.loads(answer["body"]) == {"tenants": []}


def test_without_an_iam_identity_the_admin_route_refuses_even_the_admin_key(iam_app):
    answer = iam_app(lambda_event({"sourceIp": "203.0.113.9"}), None)
    assert answer["statusCode"] == 401
    assert "SigV4" in json.loads(answer["body"])["error"]["message"]
    with GatewayClient(iam_app) as client, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Chalice: "IAMAuthorizer is not a supported in local mode"
        resp = client.http.get("/v1/tenants", headers={"Authorization": f"Bearer {ADMIN}"})
    assert resp.status_code == 401 and json.loads(resp.body)["error"]["code"] == "unauthorized"


def test_with_the_admin_key_mode_the_key_opens_the_route_and_an_iam_identity_does_not(api):
    key_app = admin_app(None)
    with GatewayClient(key_app) as client:
        assert client.http.get("/v1/tenants", headers={"Authorization": f"Bearer {ADMIN}"}).status_code == 200
        assert client.http.get("/v1/tenants", headers={"Authorization": "Bearer wrong"}).status_code == 401
    assert key_app(lambda_event({"userArn": CALLER}), None)["statusCode"] == 401


def test_admin_routes_carry_the_iam_authorizer_in_the_api_definition():
    """What Chalice writes into the API Gateway definition (infra/ checks the synthesized one)."""
    from chalice.deploy.swagger import SwaggerGenerator

    doc = SwaggerGenerator("us-east-1", {"api_handler_arn": "arn:aws:lambda:us-east-1:1:function:x"}).generate_swagger(admin_app(IAMAuthorizer()))
    assert doc["paths"]["/v1/tenants"]["get"]["security"] == [{"sigv4": []}]
    assert doc["securityDefinitions"]["sigv4"]["x-amazon-apigateway-authtype"] == "awsSigv4"
