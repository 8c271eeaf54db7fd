"""Alarms that see customers, the dashboard, tracing, and the canary the alarms roll back."""
from __future__ import annotations

import io
import json

import pytest

from infra.hindsight_infra.config import load_stage
from tests.infra.conftest import DOMAIN_STAGE, SERVERLESS_STAGE, Template, render
from tests.infra.test_template import as_list

pytest.importorskip("samtranslator")


def alarms(t: Template) -> dict[str, dict]:
    """Alarms by AlarmName without the stage's prefix."""
    prefix = f"hindsight-{t.stage}-"
    return {a["Properties"]["AlarmName"].removeprefix(prefix): a["Properties"] for a in t.of_type("AWS::CloudWatch::Alarm").values()}


def metrics_of(alarm: dict) -> dict[str, dict]:
    """{id: MetricStat.Metric} of a metric-math alarm."""
    return {m["Id"]: m["MetricStat"]["Metric"] for m in alarm["Metrics"] if "MetricStat" in m}


def dims(metric: dict) -> dict:
    return {d["Name"]: d["Value"] for d in metric.get("Dimensions", [])}


def test_the_5xx_share_alarm_reads_the_apis_errors_over_its_requests_m_of_n(translated):
    cfg = load_stage(translated.stage)
    a = alarms(translated)["api-5xx"]
    (expression,) = [m for m in a["Metrics"] if "Expression" in m]
    assert expression["Expression"] == "IF(requests > 0, 100 * errors / requests, 0)" and expression["ReturnData"] is True
    metrics = metrics_of(a)
    assert (metrics["errors"]["MetricName"], metrics["requests"]["MetricName"]) == ("5XXError", "Count")
    for m in metrics.values():
        assert m["Namespace"] == "AWS/ApiGateway"
        assert dims(m) == {"ApiName": f"hindsight-{translated.stage}", "Stage": "api"}  # the stage is in the ApiName
    assert a["Threshold"] == cfg.api_5xx_percent and a["ComparisonOperator"] == "GreaterThanThreshold"
    assert (a["DatapointsToAlarm"], a["EvaluationPeriods"]) == (cfg.alarm_datapoints, cfg.alarm_periods)
    assert a["DatapointsToAlarm"] < a["EvaluationPeriods"]  # one bad minute is noise, M of N is not
    assert a["TreatMissingData"] == "notBreaching"


def test_the_p99_latency_alarm(translated):
    cfg = load_stage(translated.stage)
    a = alarms(translated)["api-p99-latency"]
    assert (a["Namespace"], a["MetricName"], a["ExtendedStatistic"]) == ("AWS/ApiGateway", "Latency", "p99")
    assert dims(a) == {"ApiName": f"hindsight-{translated.stage}", "Stage": "api"}
    assert a["Threshold"] == cfg.api_p99_latency_ms and a["Period"] == 60
    assert (a["DatapointsToAlarm"], a["EvaluationPeriods"]) == (cfg.alarm_datapoints, cfg.alarm_periods)


def test_every_function_and_every_table_has_a_throttle_alarm(translated):
    from infra.hindsight_infra.tables import all_tables

    cfg = load_stage(translated.stage)
    found = alarms(translated)
    prefix = f"hindsight-{translated.stage}-"
    functions = {fn["Properties"]["FunctionName"] for fn in translated.of_type("AWS::Lambda::Function").values()}
    for name in functions:
        a = found[f"{name.removeprefix(prefix)}-throttles"]
        assert (a["Namespace"], a["MetricName"], a["Statistic"]) == ("AWS/Lambda", "Throttles", "Sum")
        assert dims(a) == {"FunctionName": name} and a["Threshold"] == 0
        assert (a["DatapointsToAlarm"], a["EvaluationPeriods"]) == (cfg.alarm_datapoints, cfg.alarm_periods)
    for spec in all_tables():
        a = found[f"{spec.table}-table-throttled"]
        metrics = metrics_of(a)
        assert {m["MetricName"] for m in metrics.values()} == {"ReadThrottleEvents", "WriteThrottleEvents"}
        assert all(m["Namespace"] == "AWS/DynamoDB" and dims(m) == {"TableName": prefix + spec.table} for m in metrics.values())
        assert (a["DatapointsToAlarm"], a["EvaluationPeriods"]) == (cfg.alarm_datapoints, cfg.alarm_periods)


def test_opensearch_health_is_watched_on_either_flavour(serverless, domain):
    found = alarms(serverless)
    for name, metric in (("opensearch-search-errors", "SearchRequestErrors"), ("opensearch-ingest-errors", "IngestionRequestErrors")):
        a = found[name]
        assert (a["Namespace"], a["MetricName"]) == ("AWS/AOSS", metric)
        assert dims(a)["CollectionName"] == f"hindsight-{serverless.stage}"
        assert render(dims(a)["CollectionId"]) == "{Collection.Id}" and dims(a)["ClientId"] == {"Ref": "AWS::AccountId"}
    found = alarms(domain)
    expected = {"opensearch-cluster-red": "ClusterStatus.red", "opensearch-writes-blocked": "ClusterIndexWritesBlocked",
                "opensearch-storage-low": "FreeStorageSpace", "opensearch-jvm-pressure": "JVMMemoryPressure"}
    for name, metric in expected.items():
        a = found[name]
        assert (a["Namespace"], a["MetricName"]) == ("AWS/ES", metric)
        assert dims(a) == {"DomainName": f"hindsight-{domain.stage}", "ClientId": {"Ref": "AWS::AccountId"}}
    assert found["opensearch-storage-low"]["ComparisonOperator"] == "LessThanThreshold"
    assert not [n for n in alarms(serverless) if n in expected] and not [n for n in found if "aoss" in n]


def test_dead_review_jobs_are_a_metric_the_app_writes_and_an_alarm_reads(translated):
    """The alarm's namespace, name and dimensions are those of the line the review pipeline writes."""
    from chalicelib.adapters.emf import EmfMeter
    from chalicelib.domain import usage

    out = io.StringIO()
    EmfMeter(translated.stage, out).record("t_1", {usage.REVIEW_JOBS_DEAD: 1})
    line = json.loads(out.getvalue())
    (directive,) = line["_aws"]["CloudWatchMetrics"]
    a = alarms(translated)["review-jobs-dead"]
    assert a["Namespace"] == directive["Namespace"] and a["MetricName"] == directive["Metrics"][0]["Name"]
    assert dims(a) == {name: line[name] for name in directive["Dimensions"][0]}  # the stage dimension
    assert a["Statistic"] == "Sum" and a["Threshold"] == 0


def test_every_alarm_has_an_action_and_a_description(translated):
    topic = translated.logical_id("AlarmTopic", "AWS::SNS::Topic")
    for name, a in alarms(translated).items():
        assert a["AlarmActions"] == [{"Ref": topic}], name
        assert len(a["AlarmDescription"]) > 30, name


def test_one_dashboard_shows_the_alarms_the_api_usage_functions_tables_and_search(translated):
    (dashboard,) = translated.of_type("AWS::CloudWatch::Dashboard").values()
    text = render(dashboard["Properties"]["DashboardBody"])
    assert dashboard["Properties"]["DashboardName"] == f"hindsight-{translated.stage}"
    search = "AWS/AOSS" if translated.of_type("AWS::OpenSearchServerless::Collection") else "AWS/ES"
    for needle in ('"alarm"', "AWS/ApiGateway", "5XXError", "AWS/Lambda", "Throttles", "AWS/DynamoDB", "ReadThrottleEvents",
                   '"hindsight"', "Requests", "Recalls", "Events", "LlmTokens", "ReviewJobsDead", "AWS/WAFV2", search):
        assert needle in text, needle
    alarm_ids = [k for k in translated.of_type("AWS::CloudWatch::Alarm")]
    assert all("{%s.Arn}" % k in text for k in alarm_ids)


def test_tracing_is_on_in_prod_and_packaged(serverless, domain):
    """Active tracing on the functions and the stage in prod; aws-xray-sdk is in the Lambda
    requirements (tests/infra/test_tracing.py runs the handlers with it)."""
    from infra.hindsight_infra.lambda_package import pinned_requirements
    from tests.infra.conftest import ROOT

    assert SERVERLESS_STAGE == "prod" and load_stage("prod").tracing and not load_stage(DOMAIN_STAGE).tracing
    for t, on in ((serverless, True), (domain, False)):
        for fn in t.of_type("AWS::Serverless::Function").values():
            assert fn["Properties"]["Tracing"] == ("Active" if on else "PassThrough")
            assert (fn["Properties"]["Environment"]["Variables"].get("HINDSIGHT_TRACING") == "true") is on
        assert t.resources["RestAPI"]["Properties"]["TracingEnabled"] is on
    assert "aws-xray-sdk" in pinned_requirements(ROOT / "requirements.txt")


def test_the_api_and_the_authorizer_shift_by_canary_in_prod_rolled_back_by_the_alarms(translated):
    cfg = load_stage(translated.stage)
    groups = translated.of_type("AWS::CodeDeploy::DeploymentGroup")
    assert set(groups) == {"APIHandlerDeploymentGroup", "ApiKeyAuthorizerDeploymentGroup"}
    api_5xx = translated.logical_id("Api5xxAlarm", "AWS::CloudWatch::Alarm")
    for logical_id, g in groups.items():
        p = g["Properties"]
        assert render(p["DeploymentConfigName"]).startswith("CodeDeployDefault.Lambda")
        assert p["DeploymentConfigName"]["Fn::Sub"][1] == {"ConfigName": cfg.deployment_preference}
        assert {"Ref": api_5xx} in [a["Name"] for a in p["AlarmConfiguration"]["Alarms"]]
        assert p["AlarmConfiguration"]["Enabled"] is True
        assert "DEPLOYMENT_STOP_ON_ALARM" in p["AutoRollbackConfiguration"]["Events"]
        role = p["ServiceRoleArn"]["Fn::GetAtt"][0]
        (policy,) = translated.resources[role]["Properties"]["Policies"]
        granted = {a: {render(r) for r in as_list(s["Resource"])} for s in policy["PolicyDocument"]["Statement"]
                   for a in as_list(s["Action"])}
        assert granted["lambda:UpdateAlias"] == {
            f"arn:{{AWS::Partition}}:lambda:{{AWS::Region}}:{{AWS::AccountId}}:function:hindsight-{translated.stage}-{fn}:live"
            for fn in ("api_handler", "api_key_authorizer")}
        assert granted["cloudwatch:DescribeAlarms"] == {
            f"arn:{{AWS::Partition}}:cloudwatch:{{AWS::Region}}:{{AWS::AccountId}}:alarm:hindsight-{translated.stage}-*"}
    if translated.stage == "prod":
        assert cfg.deployment_preference.startswith("Canary")
    # every function but the deploy-time index setup runs under an alias a deployment moves
    aliased = {r["Properties"]["FunctionName"]["Ref"] for r in translated.of_type("AWS::Lambda::Alias").values()}
    assert aliased == {"APIHandler", "ApiKeyAuthorizer", "ReviewWorker", "ReviewSweeper", "DecaySchedule", "DecayWorker"}
