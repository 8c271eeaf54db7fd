"""Bad input gets a clear 4xx JSON error in the contract's shape: never a 500, never a trace."""
from __future__ import annotations

import json

import pytest

from tests.contract.test_experience_store_contract import FORGED_CURSORS

from .test_api import WEATHER_EVENTS, start


def assert_error(resp, status: int, code: str | None = None):
    assert resp.status_code == status, resp.body
    body = resp.json_body
    assert set(body) == {"error"} and body["error"]["message"]
    assert "Traceback" not in json.dumps(body)
    if code:
        assert body["error"]["code"] == code


@pytest.mark.parametrize("header", ["", "Bearer", "Basic abc", "Bearer nope", "Token hs_x"])
def test_wrong_keys_get_401(api, header):
    headers = {"Content-Type": "application/json", "Authorization": header}
    resp = api.client.http.post("/v1/recall", headers=headers, body=json.dumps({"query": "x"}))
    assert_error(resp, 401, "unauthorized")


def test_a_missing_key_gets_401_in_the_contracts_shape_from_the_server(api):
    """Without the header, API Gateway (and Chalice's emulation of it) refuses before the app runs;
    the embedded server and the deployed gateway's responses give that refusal the contract's shape."""
    import httpx

    import app as app_module
    from local.wsgi import make_wsgi_app

    assert api.client.http.post("/v1/recall", headers={}, body=b"{}").status_code == 401
    with httpx.Client(transport=httpx.WSGITransport(app=make_wsgi_app(app_module.app, 1_048_576)), base_url="http://hs") as c:
        resp = c.post("/v1/recall", json={"query": "x"})
        assert resp.status_code == 401 and resp.json()["error"]["code"] == "unauthorized"
        assert c.get("/v1/nowhere").json()["error"]["code"] == "not_found"


@pytest.mark.parametrize("raw", ["{", "not json", '{"query": }', "\xff\xfe", "[1, 2"])
def test_malformed_json_gets_400(api, raw):
    key = api.tenant()
    assert_error(api.call("POST", "/v1/recall", key, raw=raw), 400, "malformed_request")


def test_an_empty_body_gets_400(api):
    key = api.tenant()
    assert_error(api.call("POST", "/v1/recall", key, raw=""), 400)


@pytest.mark.parametrize(
    "body",
    [
        [],
        "text",
        {"query": 5},
        {"query": ""},
        {"query": "x", "top_k": 0},
        {"query": "x", "top_k": "many"},
        {"query": "x", "min_score": 2},
        {"query": "x", "tools": "get_weather"},
        {"query": "x", "unknown_field": 1},
        {"query": "x" * 5000},
    ],
)
def test_wrong_types_and_values_get_422_naming_the_field(api, body):
    key = api.tenant()
    resp = api.call("POST", "/v1/recall", key, body)
    assert_error(resp, 422, "invalid_input")


def test_a_422_says_which_field_is_wrong(api):
    key = api.tenant()
    resp = api.call("POST", "/v1/trajectories", key, {"goal": "g"})
    assert_error(resp, 422)
    assert any(d["field"] == "agent_id" for d in resp.json_body["error"]["details"])


@pytest.mark.parametrize(
    "event",
    [
        {"type": "teleport", "content": {}},
        {"type": "tool_call", "content": {"params": {}}},
        {"type": "tool_call", "content": {"tool": "t", "status": "maybe"}},
        {"type": "feedback", "content": {"text": "meh", "sentiment": "angry"}},
        {"type": "user_input", "content": {}},
        {"type": "user_input", "content": {"text": "hi"}, "timestamp": "yesterday"},
        {"type": "user_input", "content": {"text": "hi"}, "timestamp": True},
        {"type": "user_input", "content": {"text": "hi"}, "event_id": "has spaces"},
    ],
)
def test_invalid_events_get_422(api, event):
    key = api.tenant()
    start(api, key)
    assert_error(api.call("POST", "/v1/trajectories/tr1/events", key, {"events": [event]}), 422)


def test_timestamps_may_be_iso_or_epoch_milliseconds(api):
    key = api.tenant()
    start(api, key)
    events = [
        {"event_id": "a", "type": "user_input", "content": {"text": "hi"}, "timestamp": "2026-11-29T10:00:00Z"},
        {"event_id": "b", "type": "user_input", "content": {"text": "hi"}, "timestamp": 1764410400000},
    ]
    resp = api.call("POST", "/v1/trajectories/tr1/events", key, {"events": events})
    assert resp.status_code == 202


def test_more_than_100_events_per_call_get_413(api):
    key = api.tenant()
    start(api, key)
    events = [{"event_id": f"e{i}", "type": "user_input", "content": {"text": "x"}} for i in range(101)]
    assert_error(api.call("POST", "/v1/trajectories/tr1/events", key, {"events": events}), 413, "payload_too_large")
    assert api.call("POST", "/v1/trajectories/tr1/events", key, {"events": events[:100]}).status_code == 202


def test_an_oversized_event_gets_413(api):
    key = api.tenant()
    start(api, key)
    big = {"type": "tool_call", "content": {"tool": "t", "result": "x" * 70_000}}
    assert_error(api.call("POST", "/v1/trajectories/tr1/events", key, {"events": [big]}), 413)


def test_an_oversized_body_gets_413(api):
    key = api.tenant()
    assert_error(api.call("POST", "/v1/recall", key, raw='{"query": "' + "x" * 1_100_000 + '"}'), 413)


def test_oversized_metadata_gets_422(api):
    key = api.tenant()
    resp = api.call("POST", "/v1/trajectories", key, {"agent_id": "a", "goal": "g", "metadata": {"blob": "x" * 20_000}})
    assert_error(resp, 422)


def test_unknown_ids_get_404(api):
    key = api.tenant()
    assert_error(api.call("GET", "/v1/trajectories/nope", key), 404, "not_found")
    assert_error(api.call("POST", "/v1/trajectories/nope/events", key, {"events": WEATHER_EVENTS[:1]}), 404)
    assert_error(api.call("POST", "/v1/trajectories/nope/finalize", key, {"outcome": "success"}), 404)
    assert_error(api.call("GET", "/v1/experiences/nope", key), 404)


@pytest.mark.parametrize("query", ["limit=0", "limit=abc", "limit=1000", "status=gone", "cursor=%%%", "cursor=bm9wZQ"])
def test_bad_list_parameters_get_4xx(api, query):
    key = api.tenant()
    resp = api.call("GET", f"/v1/experiences?{query}", key)
    assert resp.status_code in (400, 422) and "error" in resp.json_body



@pytest.mark.parametrize("name", list(FORGED_CURSORS))
def test_a_forged_cursor_of_unbindable_values_gets_422(api, name):
    """A cursor holding an integer beyond 64 bits or a lone surrogate: 422, with each filter."""
    key = api.tenant()
    api.call("POST", "/v1/experiences", key, {"situation": "s", "advice": "Use the v2 endpoint of billing."})
    for query in ("", "&status=active", "&agent_id=a1", "&agent_id=a1&status=active"):
        resp = api.call("GET", f"/v1/experiences?cursor={FORGED_CURSORS[name]}{query}", key)
        assert_error(resp, 422)

def test_a_bad_outcome_or_signal_gets_422(api):
    key = api.tenant()
    start(api, key)
    assert_error(api.call("POST", "/v1/trajectories/tr1/finalize", key, {"outcome": "meh"}), 422)
    exp = api.call("POST", "/v1/experiences", key, {"situation": "s", "advice": "Use the v2 endpoint of billing."}).json_body
    assert_error(api.call("POST", f"/v1/experiences/{exp['experience_id']}/feedback", key, {"signal": "love"}), 422)


def test_an_experience_needs_a_lesson_or_advice(api):
    key = api.tenant()
    assert_error(api.call("POST", "/v1/experiences", key, {"situation": "s"}), 422)


def test_an_internal_failure_is_a_json_500_without_a_trace(api, monkeypatch):
    key = api.tenant()

    def boom(*a, **k):
        raise RuntimeError("secret internal detail")

    # (an embedder that fails is answered from BM25 alone, marked degraded: the store's failure is not)
    monkeypatch.setattr(api.deps.experiences, "recall_candidates", boom)
    resp = api.call("POST", "/v1/recall", key, {"query": "x"})
    assert_error(resp, 500, "internal_error")
    assert "secret" not in resp.body.decode()


def test_a_dependency_that_is_down_answers_503_with_retry_after(api, monkeypatch):
    from chalicelib.domain.errors import Unavailable

    key = api.tenant()

    def down(*a, **k):
        raise Unavailable("the vector index did not answer")

    monkeypatch.setattr(api.deps.index, "hybrid_search", down)  # what every recall calls
    resp = api.call("POST", "/v1/recall", key, {"query": "x"})
    assert_error(resp, 503, "unavailable")
    assert resp.headers["Retry-After"] == "1"


def test_a_body_of_only_whitespace_gets_400_even_where_the_body_is_optional(api):
    """Found by schemathesis: "\\n" was read as no body and the decay ran (200)."""
    assert_error(api.call("POST", "/v1/maintenance/decay", "admin-test-key", raw="\n"), 400, "malformed_request")
    assert_error(api.call("POST", "/v1/maintenance/decay", "admin-test-key", raw="  "), 400, "malformed_request")
    assert api.call("POST", "/v1/maintenance/decay", "admin-test-key", raw="").status_code == 200


def served(method: str, raw_uri: str, key: str | None = None, body: bytes = b""):
    """One request through the embedded server's WSGI app, with the environ waitress builds:
    PATH_INFO decoded (latin-1, PEP 3333) and REQUEST_URI as the client sent it."""
    import io
    from urllib.parse import unquote

    import app as app_module
    from local.wsgi import make_wsgi_app

    path, _, query = raw_uri.partition("?")
    environ = {
        "REQUEST_METHOD": method, "PATH_INFO": unquote(path, encoding="latin-1"), "REQUEST_URI": raw_uri,
        "QUERY_STRING": query, "CONTENT_TYPE": "application/json", "CONTENT_LENGTH": str(len(body)),
        "wsgi.input": io.BytesIO(body),
    }
    if key:
        environ["HTTP_AUTHORIZATION"] = f"Bearer {key}"
    answer: dict = {}

    def start_response(status, headers):
        answer["status"], answer["headers"] = int(status.split()[0]), dict(headers)

    out = b"".join(make_wsgi_app(app_module.app, 1_048_576)(environ, start_response))
    return answer["status"], answer["headers"], json.loads(out)


@pytest.mark.parametrize("unknown_id", ["a#b", "a?b", "a;b", "a%b", "\u00d1\x13#", "..", "a/b"])
def test_url_delimiters_in_an_id_are_part_of_the_id(api, unknown_id):
    """Found by schemathesis: the route matcher parsed the decoded path, so '#', '?' or ';' in an
    id cut it short and POST .../finalize reached GET /v1/trajectories/{id}: 405 instead of 404."""
    from urllib.parse import quote

    key = api.tenant()
    status, headers, body = served("POST", f"/v1/trajectories/{quote(unknown_id, safe='')}/finalize", key, b'{"outcome": "success"}')
    assert (status, body["error"]["code"]) == (404, "not_found"), body
    assert headers["Content-Type"] == "application/json"
    assert unknown_id in body["error"]["message"]


def test_an_id_with_a_slash_is_read_back_through_the_server(api):
    """Client-chosen ids may hold '/'; sent as %2F, the id stays one path segment, as behind API Gateway."""
    key = api.tenant()
    assert start(api, key, "team/flight-1").status_code == 201
    status, _, body = served("GET", "/v1/trajectories/team%2Fflight-1", key)
    assert status == 200 and body["trajectory_id"] == "team/flight-1"
    status, _, body = served("GET", "/v1/trajectories/team%2Fflight-1?x=1", key)
    assert status == 200 and body["trajectory_id"] == "team/flight-1"


@pytest.mark.parametrize("when", ["0001-01-01T00:00:01+00:03", "9999-12-31T23:59:59-01:00"])
def test_a_time_that_leaves_the_calendar_in_utc_gets_422(api, when):
    """Found by schemathesis: the conversion to UTC overflowed (OverflowError) and answered 500."""
    key = api.tenant()
    start(api, key)
    event = {"type": "user_input", "content": {"text": "hi"}, "timestamp": when}
    assert_error(api.call("POST", "/v1/trajectories/tr1/events", key, {"events": [event]}), 422, "invalid_input")
    assert_error(api.call("POST", "/v1/maintenance/decay", "admin-test-key", {"as_of": when}), 422, "invalid_input")
