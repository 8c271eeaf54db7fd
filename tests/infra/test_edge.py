"""The edge of the synthesized stage (after the SAM transform): throttling, the WAF, the cached
authorizer, the JSON access log keyed by tenant, the admin routes authorized by IAM, and the
aliases API Gateway calls."""
from __future__ import annotations

import json
import re

import pytest

from infra.hindsight_infra.config import load_stage
from tests.infra.conftest import Template, render
from tests.infra.test_template import as_list

pytest.importorskip("samtranslator")


def stage(t: Template) -> dict:
    (_, s), = [(k, r) for k, r in t.of_type("AWS::ApiGateway::Stage").items()]
    return s["Properties"]


def body(t: Template) -> dict:
    (api,) = t.of_type("AWS::ApiGateway::RestApi").values()
    return api["Properties"]["Body"]


def operations(t: Template) -> dict[str, dict]:
    """{"POST /v1/recall": its operation} of the deployed API."""
    return {f"{m.upper()} {p}": op for p, ops in body(t)["paths"].items() for m, op in ops.items()}


def app_routes() -> dict[str, str]:
    """{"POST /v1/recall": auth} as app.py declares its routes (tenant, admin, none)."""
    import app as app_module

    return {f"{r.method.upper()} {r.path}": r.auth for r in app_module.api.routes}


def test_the_api_is_regional_and_named_after_its_stage(translated):
    (api,) = translated.of_type("AWS::ApiGateway::RestApi").values()
    assert api["Properties"]["Name"] == f"hindsight-{translated.stage}"  # the ApiName dimension of its metrics
    assert api["Properties"]["EndpointConfiguration"] == {"Types": ["REGIONAL"]}


def test_the_stage_throttles_every_method_and_the_listed_methods_tighter(translated):
    cfg = load_stage(translated.stage)
    settings = {(s["ResourcePath"], s["HttpMethod"]): s for s in stage(translated)["MethodSettings"]}
    default = settings.pop(("/*", "*"))
    assert (default["ThrottlingRateLimit"], default["ThrottlingBurstLimit"]) == (cfg.api_throttle["rate"], cfg.api_throttle["burst"])
    declared = operations(translated)
    assert len(settings) == len(cfg.api_method_throttle)
    for method, limits in cfg.api_method_throttle.items():
        verb, _, path = method.partition(" ")
        assert method in declared, method  # a setting for a method the API does not have would throttle nothing
        s = settings[("/" + path.replace("/", "~1"), verb)]
        assert (s["ThrottlingRateLimit"], s["ThrottlingBurstLimit"]) == (limits["rate"], limits["burst"])
        assert limits["rate"] <= cfg.api_throttle["rate"] and limits["burst"] <= cfg.api_throttle["burst"]
    admin = {m for m, auth in app_routes().items() if auth == "admin"}
    assert admin <= set(cfg.api_method_throttle)  # every admin route has a small limit of its own
    assert all(cfg.api_method_throttle[m]["rate"] <= 5 for m in admin)


def test_a_web_acl_with_a_per_address_rate_limit_and_aws_managed_rules_guards_the_stage(translated):
    cfg = load_stage(translated.stage)
    acl_id, acl = translated.one("AWS::WAFv2::WebACL")
    p = acl["Properties"]
    assert p["Scope"] == "REGIONAL" and p["DefaultAction"] == {"Allow": {}}
    rules = {r["Name"]: r for r in p["Rules"]}
    rate = rules.pop("RateLimitPerAddress")["Statement"]["RateBasedStatement"]
    assert rate == {"Limit": cfg.waf_requests_per_5min_per_ip, "AggregateKeyType": "IP", "EvaluationWindowSec": 300}
    assert set(rules) == {"AWSManagedRulesAmazonIpReputationList", "AWSManagedRulesKnownBadInputsRuleSet",
                          "AWSManagedRulesCommonRuleSet"}
    for name, rule in rules.items():
        group = rule["Statement"]["ManagedRuleGroupStatement"]
        assert group["VendorName"] == "AWS" and group["Name"] == name and rule["OverrideAction"] == {"None": {}}
        # the bodies are the agents' own data (code, HTML, URLs): body inspections count, never block
        for override in group.get("RuleActionOverrides", []):
            assert override["Name"].endswith("_BODY") and override["ActionToUse"] == {"Count": {}}
    common = {o["Name"] for o in rules["AWSManagedRulesCommonRuleSet"]["Statement"]["ManagedRuleGroupStatement"]["RuleActionOverrides"]}
    assert {"SizeRestrictions_BODY", "CrossSiteScripting_BODY"} <= common  # an event body is up to 1 MB, often code
    assert all(r["VisibilityConfig"]["CloudWatchMetricsEnabled"] for r in p["Rules"])
    # a blocked address gets the contract's 429 shape
    key = [r for r in p["Rules"] if r["Name"] == "RateLimitPerAddress"][0]["Action"]["Block"]["CustomResponse"]
    assert key["ResponseCode"] == 429
    assert json.loads(p["CustomResponseBodies"][key["CustomResponseBodyKey"]]["Content"])["error"]["code"] == "rate_limited"

    _, assoc = translated.one("AWS::WAFv2::WebACLAssociation")
    assert assoc["Properties"]["WebACLArn"] == {"Fn::GetAtt": [acl_id, "Arn"]}
    assert render(assoc["Properties"]["ResourceArn"]) == "arn:{AWS::Partition}:apigateway:{AWS::Region}::/restapis/{RestAPI}/stages/api"
    (stage_id,) = translated.of_type("AWS::ApiGateway::Stage")
    assert assoc["DependsOn"] == [stage_id]  # the stage exists before it is guarded


def test_the_authorizer_is_cached_per_key_within_60_to_300_s(translated):
    cfg = load_stage(translated.stage)
    auth = body(translated)["securityDefinitions"]["api_key_authorizer"]
    assert (auth["in"], auth["name"], auth["x-amazon-apigateway-authtype"]) == ("header", "Authorization", "custom")
    ttl = auth["x-amazon-apigateway-authorizer"]["authorizerResultTtlInSeconds"]
    assert ttl == cfg.authorizer_ttl_s and 60 <= ttl <= 300
    with pytest.raises(ValueError, match="60-300"):
        load_stage(translated.stage, {"authorizer_ttl_s": 0})  # no cache: two invocations per junk request
    with pytest.raises(ValueError, match="60-300"):
        load_stage(translated.stage, {"authorizer_ttl_s": 3600})  # a revoked key would live an hour


def test_every_route_has_the_authorization_app_py_declares(translated):
    declared = operations(translated)
    routes = app_routes()
    assert set(routes) <= set(declared)
    for method, auth in routes.items():
        security = declared[method].get("security")
        expected = {"tenant": [{"api_key_authorizer": []}], "admin": [{"sigv4": []}], "none": None}[auth]
        assert security == expected, method
    assert body(translated)["securityDefinitions"]["sigv4"]["x-amazon-apigateway-authtype"] == "awsSigv4"


def test_an_admin_policy_opens_exactly_the_admin_routes_to_whom_it_is_attached(translated):
    (policy_id, policy), = translated.of_type("AWS::IAM::ManagedPolicy").items()
    assert "Roles" not in policy["Properties"] and "Users" not in policy["Properties"]  # the operator attaches it
    (statement,) = policy["Properties"]["PolicyDocument"]["Statement"]
    assert statement["Action"] == "execute-api:Invoke"
    opened = {render(r).split("/api/", 1)[1] for r in as_list(statement["Resource"])}
    admin = {m for m, auth in app_routes().items() if auth == "admin"}
    assert opened == {re.sub(r"\{[^}]+\}", "*", m.replace(" ", "")) for m in admin}
    assert all(render(r).startswith("arn:{AWS::Partition}:execute-api:{AWS::Region}:{AWS::AccountId}:{RestAPI}/api/")
               for r in as_list(statement["Resource"]))
    assert translated.doc["Outputs"]["AdminPolicyArn"]["Value"] == {"Ref": policy_id}


def test_the_access_log_is_json_keyed_by_tenant(translated):
    cfg = load_stage(translated.stage)
    setting = stage(translated)["AccessLogSetting"]
    group = translated.resources["ApiAccessLogGroup"]["Properties"]
    assert setting["DestinationArn"] == {"Fn::GetAtt": ["ApiAccessLogGroup", "Arn"]}
    assert group["RetentionInDays"] == cfg.log_retention_days
    line = json.loads(setting["Format"])  # every value a quoted $context variable: valid JSON whatever it holds
    assert line["tenant"] == "$context.authorizer.tenant_id"  # the authorizer's context
    assert line["caller"] == "$context.identity.userArn"  # an admin call's IAM principal
    assert {"requestId", "status", "latencyMs", "ip", "resource", "denied", "wafResponseCode"} <= set(line)
    assert all(isinstance(v, str) and v.startswith("$context.") for v in line.values())
    # the account-wide logging role API Gateway writes through
    (account,) = translated.of_type("AWS::ApiGateway::Account").values()
    role = account["Properties"]["CloudWatchRoleArn"]["Fn::GetAtt"][0]
    assert translated.resources[role]["Properties"]["AssumeRolePolicyDocument"]["Statement"][0]["Principal"] == {
        "Service": "apigateway.amazonaws.com"}
    assert account["DeletionPolicy"] == "Retain"  # other stages of the account may log through it


def test_a_denied_key_is_answered_in_the_contracts_shape_with_the_authorizers_reason(translated):
    responses = body(translated)["x-amazon-apigateway-gateway-responses"]
    denied = responses["ACCESS_DENIED"]
    assert str(denied["statusCode"]) == "401"
    template = denied["responseTemplates"]["application/json"]
    # the two branches of the template, as API Gateway fills them in, are the contract's error
    m = re.fullmatch(r'#if\("\$context\.authorizer\.error" != ""\)(.*)#else(.*)#end', template)
    assert m, template
    by_authorizer = json.loads(m[1].replace("$context.authorizer.error", "unknown or revoked API key"))
    by_iam = json.loads(m[2].replace("$context.error.messageString", '"User is not authorized to access this resource"'))
    assert by_authorizer == {"error": {"code": "unauthorized", "message": "unknown or revoked API key"}}
    assert by_iam["error"]["code"] == "unauthorized"


def test_api_gateway_calls_the_api_and_the_authorizer_through_their_aliases(translated):
    aliases = {k: r["Properties"]["FunctionName"]["Ref"] for k, r in translated.of_type("AWS::Lambda::Alias").items()}
    assert aliases["APIHandlerAliaslive"] == "APIHandler" and aliases["ApiKeyAuthorizerAliaslive"] == "ApiKeyAuthorizer"
    text = json.dumps(body(translated))
    assert "APIHandler.Arn" not in text and "ApiKeyAuthorizer.Arn" not in text  # never $LATEST
    for op in operations(translated).values():
        uri = op["x-amazon-apigateway-integration"]["uri"]["Fn::Sub"]
        assert uri[1] == {"APIHandlerAlias": {"Ref": "APIHandlerAliaslive"}}
    authorizer = body(translated)["securityDefinitions"]["api_key_authorizer"]["x-amazon-apigateway-authorizer"]
    assert authorizer["authorizerUri"]["Fn::Sub"][1] == {"ApiKeyAuthorizerAlias": {"Ref": "ApiKeyAuthorizerAliaslive"}}
    gateway_invokes = {r["Properties"]["FunctionName"]["Ref"] for r in translated.of_type("AWS::Lambda::Permission").values()
                       if r["Properties"]["Principal"] == "apigateway.amazonaws.com"}
    assert gateway_invokes == {"APIHandlerAliaslive", "ApiKeyAuthorizerAliaslive"}


def test_usage_per_tenant_has_a_saved_query_over_the_functions_metering_lines(translated):
    from chalicelib.domain import usage

    queries = {r["Properties"]["Name"]: r["Properties"] for r in translated.of_type("AWS::Logs::QueryDefinition").values()}
    q = queries[f"hindsight-{translated.stage}/usage-by-tenant"]
    for name in usage.TENANT_METRICS:
        assert f"sum({name})" in q["QueryString"], name
    assert "by tenant" in q["QueryString"]
    assert set(q["LogGroupNames"]) == {f"/aws/lambda/hindsight-{translated.stage}-{fn}"
                                       for fn in ("api_handler", "review_worker", "review_sweeper")}
    access = queries[f"hindsight-{translated.stage}/requests-by-tenant"]
    assert access["LogGroupNames"] == [{"Ref": "ApiAccessLogGroup"}] and "by tenant" in access["QueryString"]
