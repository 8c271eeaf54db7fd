"""/v1/openapi.json describes the app as it is: every route, and every error a route can answer.

tests/e2e/test_fuzz_openapi.py checks the answers the server gives against this document; these
tests check what fuzzing cannot reach: routes it would not know of, and the statuses (429, 503)
that only a rate limit or a dependency failure produce.
"""
from __future__ import annotations

import app as app_module

OPERATIONS = {"get", "post", "put", "patch", "delete"}


def api_routes():
    """The JSON API's routes: every route but the console's static files (chalicelib/console)."""
    return [(path, methods) for path, methods in app_module.app.routes.items() if not (path == "/console" or path.startswith("/console/"))]


def test_the_console_is_the_only_route_outside_the_api():
    outside = {path for path in app_module.app.routes if not path.startswith("/v1/")}
    assert outside == {"/console", "/console/{asset}"}


def document(api) -> dict:
    resp = api.call("GET", "/v1/openapi.json")
    assert resp.status_code == 200 and resp.headers["Content-Type"] == "application/json"
    return resp.json_body


def test_every_route_of_the_app_is_documented_and_nothing_else(api):
    doc = document(api)
    routes = {(m.lower(), path) for path, methods in api_routes() for m in methods}
    documented = {(m, path) for path, ops in doc["paths"].items() for m in ops if m in OPERATIONS}
    assert documented == routes


def test_every_error_answer_has_the_error_shape(api):
    doc = document(api)
    for path, ops in doc["paths"].items():
        for method, op in ops.items():
            for status, response in op["responses"].items():
                if int(status) >= 400:
                    schema = response["content"]["application/json"]["schema"]
                    assert schema == {"$ref": "#/components/schemas/ErrorOut"}, (method, path, status)
    assert doc["components"]["schemas"]["ErrorOut"]["required"] == ["error"]


def test_routes_behind_a_tenant_key_document_429_and_every_store_route_503_with_retry_after(api):
    doc = document(api)
    for path, methods in api_routes():
        for method, entry in methods.items():
            responses = doc["paths"][path][method.lower()]["responses"]
            if entry.authorizer is not None:
                assert "429" in responses, (method, path)
            if path not in ("/v1/health", "/v1/openapi.json", "/v1/docs"):
                assert "503" in responses, (method, path)
                assert "401" in responses, (method, path)
            for status in {"429", "503"} & set(responses):
                header = responses[status]["headers"]["Retry-After"]
                assert header["required"] and header["schema"]["type"] == "integer", (method, path, status)


def test_writes_with_a_client_chosen_id_document_the_200_of_a_repeat(api):
    doc = document(api)
    key = api.tenant()
    for path, body, id_field in [
        ("/v1/trajectories", {"agent_id": "a", "goal": "g", "trajectory_id": "t1"}, "trajectory_id"),
        ("/v1/experiences", {"situation": "s", "advice": "Retry with the v2 endpoint.", "experience_id": "e1"}, "experience_id"),
    ]:
        assert api.call("POST", path, key, body).status_code == 201
        again = api.call("POST", path, key, body)
        assert again.status_code == 200 and again.json_body[id_field] == body[id_field]
        assert {"200", "201"} <= set(doc["paths"][path]["post"]["responses"])


def test_path_ids_are_documented_with_the_rule_of_client_chosen_ids(api):
    doc = document(api)
    event_id = doc["components"]["schemas"]["EventIn"]["properties"]["event_id"]
    params = [p for ops in doc["paths"].values() for op in ops.values() for p in op.get("parameters", []) if p["in"] == "path"]
    assert {p["name"] for p in params} == {"tenant_id", "trajectory_id", "experience_id", "export_id"}
    for p in params:
        assert p["required"] and p["schema"]["pattern"] == event_id["pattern"]
        assert p["schema"]["maxLength"] == event_id["maxLength"]


def test_the_chalice_routes_and_the_documented_operations_are_one_and_the_same(api):
    """Derived both ways: a route Chalice serves that the document lacks (or documents with other
    path parameters or another key), or an operation nobody serves, fails here."""
    doc = document(api)
    served = {}
    for path, methods in api_routes():
        for method, entry in methods.items():
            served[(method.lower(), path)] = (tuple(entry.view_args), entry.authorizer is not None)
    documented = {}
    for path, ops in doc["paths"].items():
        for method, op in ops.items():
            params = tuple(p["name"] for p in op.get("parameters", []) if p["in"] == "path")
            documented[(method, path)] = (params, op.get("security") is not None and "429" in op["responses"])
    assert documented == served
    declared = {(r.method, r.path) for r in app_module.api.routes}
    assert declared == set(served) == set(documented)
