"""The embedded server's gateway answers as Chalice's own emulation of API Gateway does.

``server.LeanGateway`` computes once what ``chalice.local.LocalGateway`` recomputed per request (the
routes' segments, the policy's patterns, the Lambda context's settings). These tests hold each
piece to Chalice's answer for the same input, over generated paths and policies.
"""
from __future__ import annotations

from urllib.parse import quote, unquote

from chalice.config import Config
from chalice.local import LocalGateway, LocalGatewayAuthorizer, RouteMatcher
from hypothesis import given, settings, strategies as st

import app as app_module
from local.gateway import DecodingRouteMatcher, LeanAuthorizer, LeanGateway

ROUTES = sorted(app_module.app.routes)
SEGMENTS = sorted({seg for route in ROUTES for seg in route.split("/") if seg and not seg.startswith("{")})
# a segment of a request path: a route's literal, or an id (percent-encoded by the server, as here)
segment = st.one_of(st.sampled_from(SEGMENTS), st.text(min_size=0, max_size=6).map(lambda s: quote(s, safe="")))
path = st.lists(segment, min_size=0, max_size=5).map(lambda segs: "/" + "/".join(segs))
query = st.one_of(st.just(""), st.sampled_from(["?x=1", "?a=&b=2&a=3", "?", "?q=%2F"]))
trailing = st.sampled_from(["", "/"])


def chalice_match(url: str):
    """Chalice's matcher, then each parameter decoded (what the server did before)."""
    match = RouteMatcher(list(app_module.app.routes)).match_route(url)
    return match.route, {k: unquote(v, errors="replace") for k, v in match.captured.items()}, match.query_params


@settings(max_examples=400, deadline=None)
@given(path, trailing, query)
def test_the_route_matcher_answers_as_chalices(p, slash, q):
    url = p + slash + q
    try:
        expected = chalice_match(url)
    except ValueError:
        expected = None
    try:
        match = DecodingRouteMatcher(list(app_module.app.routes)).match_route(url)
        got = (match.route, match.captured, match.query_params)
    except ValueError:
        got = None
    assert got == expected


def test_every_route_is_found_with_its_parameters_decoded():
    matcher = DecodingRouteMatcher(list(app_module.app.routes))
    for route in ROUTES:
        url = "/".join("team%2Fa%23b" if seg.startswith("{") else seg for seg in route.split("/"))
        match = matcher.match_route(url + "?k=v")
        assert match.route == route and match.query_params == {"k": ["v"]}
        assert all(value == "team/a#b" for value in match.captured.values())


ARN = "arn:aws:execute-api:mars-west-1:123456789012:ymy8tbxw7b/api/{method}/{path}"
resource = st.one_of(
    st.just("arn:aws:execute-api:mars-west-1:123456789012:ymy8tbxw7b/api/*/*"),
    st.builds(lambda m, p: ARN.format(method=m, path=p), st.sampled_from(["GET", "POST", "*", "G?T"]),
              st.sampled_from(["*", "v1/recall", "v1/*", "v1/trajectories/?", "v1/tr*ies/*/events", "v1.recall"])),
    st.text(alphabet="arn:*?./v1GETPOS", max_size=30),
)
statement = st.fixed_dictionaries({
    "Effect": st.sampled_from(["Allow", "Deny"]),
    "Action": st.sampled_from(["execute-api:Invoke", ["execute-api:Invoke"], ["other"]]),
    "Resource": st.lists(resource, max_size=3),
})


@settings(max_examples=300, deadline=None)
@given(st.lists(statement, max_size=3), st.sampled_from(["GET", "POST"]),
       st.sampled_from(["v1/recall", "v1/trajectories/x", "v1/trajectories/a/events", "v1/health"]))
def test_the_policy_check_answers_as_chalices(statements, method, request_path):
    auth_result = {"policyDocument": {"Statement": statements}}
    arn = ARN.format(method=method, path=request_path)
    lean = LeanAuthorizer(app_module.app)
    expected = LocalGatewayAuthorizer(app_module.app)._check_can_invoke_view_function(arn, auth_result)
    assert lean._check_can_invoke_view_function(arn, auth_result) is expected
    assert lean._check_can_invoke_view_function(arn, auth_result) is expected  # patterns reused


def test_the_lambda_context_has_the_settings_chalice_reads_from_the_config():
    config = Config.create(chalice_stage="local", app_name="hindsight")
    ours, theirs = LeanGateway(app_module.app, config)._generate_lambda_context(), LocalGateway(app_module.app, config)._generate_lambda_context()
    assert (ours.function_name, ours.memory_limit_in_mb, ours._max_runtime) == (theirs.function_name, theirs.memory_limit_in_mb, theirs._max_runtime)
    assert ours.aws_request_id != theirs.aws_request_id  # one per request
