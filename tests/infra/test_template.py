"""The synthesized stack (infra/) against what the application declares and needs.

Tables are compared with what pynamodb itself creates from ``chalicelib.adapters.dynamo.models``
(on moto, in process), so a table, key, index, projection or stream added to the models and
missing from the stack fails here. The review stream's event source mapping, IAM, alarms and the
OpenSearch choice are read from the template, after the SAM transform where it matters.
"""
from __future__ import annotations

import inspect
import json
import re

import pytest

from infra.hindsight_infra.config import load_stage
from tests.infra.conftest import ALARM_EMAIL, ROOT, SERVERLESS_STAGE, Template, render

pytest.importorskip("pynamodb")

STREAMED = {"trajectories", "events", "review-jobs"}  # the models' docstring: streams on these three
# Resources allowed to carry a wildcard, each a sub-resource of one named resource of this stack
# (or the one unavoidable "*": X-Ray, off by default, has no resource-level permissions).
ALLOWED_WILDCARDS = [
    (re.compile(r"^\{\w+Table\.Arn\}/index/\*$"), "a table's indexes"),
    (re.compile(r"^\{ReviewJobsTable\.Arn\}/stream/\*$"), "the jobs table's stream"),
    (re.compile(r"^\{ExportsBucket\w*\.Arn\}/exports/\*$"), "the tenant exports' prefix of the exports bucket"),
    (re.compile(r"^arn:\{AWS::Partition\}:secretsmanager:\{AWS::Region\}:\{AWS::AccountId\}:secret:[\w/+=.@-]+-\?{6}$"),
     "a secret named by the stage, with Secrets Manager's six-character suffix"),
    (re.compile(r"^arn:\{AWS::Partition\}:es:\{AWS::Region\}:\{AWS::AccountId\}:domain/hindsight-[a-z0-9-]+/"
                r"hindsight-experiences/\*$"), "the paths under the stack's own index (its deploy-time setup)"),
    (re.compile(r"^arn:\{AWS::Partition\}:cloudwatch:\{AWS::Region\}:\{AWS::AccountId\}:alarm:hindsight-[a-z0-9-]+-\*$"),
     "the stage's own alarms, which CodeDeploy reads during a canary"),
    (re.compile(r"^arn:\{AWS::Partition\}:logs:\{AWS::Region\}:\{AWS::AccountId\}:log-group:\*$"),
     "API Gateway's account-wide logging role: every API of the account logs through it"),
]
# X-Ray has no resource-level permissions: "*" is the only resource its two actions accept
XRAY_ACTIONS = {"xray:PutTelemetryRecords", "xray:PutTraceSegments"}


def table_name(t: Template, table: str) -> str:
    return f"hindsight-{t.stage}-{table}"


def tables_by_name(t: Template) -> dict[str, dict]:
    return {r["Properties"]["TableName"]: r["Properties"] for r in t.of_type("AWS::DynamoDB::Table").values()}


def functions(t: Template) -> dict[str, dict]:
    """Lambda functions by FunctionName (after the SAM transform)."""
    return {r["Properties"]["FunctionName"]: r for r in t.of_type("AWS::Lambda::Function").values()}


def policy_statements(t: Template) -> list[tuple[str, dict]]:
    """(policy logical id, statement) of every identity policy in the template."""
    out = []
    for logical_id, r in t.resources.items():
        if r["Type"] == "AWS::IAM::Policy":
            out += [(logical_id, s) for s in r["Properties"]["PolicyDocument"]["Statement"]]
        elif r["Type"] == "AWS::IAM::Role":
            for p in r["Properties"].get("Policies", []):
                out += [(logical_id, s) for s in p["PolicyDocument"]["Statement"]]
    return out


def as_list(value) -> list:
    return value if isinstance(value, list) else [value]


def role_statements(t: Template, role_prefix: str) -> list[dict]:
    role_id = t.logical_id(role_prefix, "AWS::IAM::Role")
    out = []
    for r in t.of_type("AWS::IAM::Policy").values():
        if {"Ref": role_id} in r["Properties"]["Roles"]:
            out += r["Properties"]["PolicyDocument"]["Statement"]
    return out


def actions_on(statements: list[dict]) -> dict[str, set[str]]:
    """{action: rendered resources} over Allow statements."""
    out: dict[str, set[str]] = {}
    for s in statements:
        if s["Effect"] != "Allow":
            continue
        for action in as_list(s["Action"]):
            out.setdefault(action, set()).update(render(r) for r in as_list(s["Resource"]))
    return out


# --- tables -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def pynamodb_tables(monkeypatch_module):
    """What pynamodb creates from the models (DynamoTables.create) under moto, as DescribeTable shows it."""
    boto3 = pytest.importorskip("boto3")
    moto = pytest.importorskip("moto")
    from chalicelib.adapters.dynamo.models import DynamoConfig, DynamoTables

    for key, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1",
                       "AWS_ACCOUNT_ID_ENDPOINT_MODE": "disabled"}.items():
        monkeypatch_module.setenv(key, value)
    with moto.mock_aws():
        prefix = f"hindsight-{SERVERLESS_STAGE}-"
        tables = DynamoTables(DynamoConfig(prefix=prefix, region="us-east-1"))
        tables.create()
        client = boto3.client("dynamodb", region_name="us-east-1")
        described = {}
        for name in client.list_tables()["TableNames"]:
            described[name] = client.describe_table(TableName=name)["Table"]
    return prefix, described


@pytest.fixture(scope="module")
def monkeypatch_module():
    mp = pytest.MonkeyPatch()
    yield mp
    mp.undo()


def _keys(schema: list[dict]) -> list[tuple[str, str]]:
    return sorted((k["AttributeName"], k["KeyType"]) for k in schema)


def _indexes(indexes: list[dict] | None) -> dict[str, tuple]:
    out = {}
    for i in indexes or []:
        projection = i["Projection"]
        out[i["IndexName"]] = (_keys(i["KeySchema"]), projection["ProjectionType"], sorted(projection.get("NonKeyAttributes", [])))
    return out


def test_the_stack_has_every_table_of_the_models_plus_idempotency(serverless, pynamodb_tables):
    prefix, described = pynamodb_tables
    assert set(tables_by_name(serverless)) == set(described) | {prefix + "idempotency"}
    assert {n[len(prefix):] for n in described} == {"tenants", "trajectories", "events", "experiences", "review-jobs", "rate-limits", "recalls",
                                                   "maintenance"}


def test_keys_indexes_and_streams_match_what_pynamodb_creates(serverless, pynamodb_tables):
    _, described = pynamodb_tables
    stack = tables_by_name(serverless)
    for name, live in described.items():
        declared = stack[name]
        assert _keys(declared["KeySchema"]) == _keys(live["KeySchema"]), name
        assert declared["KeySchema"][0]["KeyType"] == "HASH", name
        assert {(a["AttributeName"], a["AttributeType"]) for a in declared["AttributeDefinitions"]} == {
            (a["AttributeName"], a["AttributeType"]) for a in live["AttributeDefinitions"]
        }, name
        assert _indexes(declared.get("GlobalSecondaryIndexes")) == _indexes(live.get("GlobalSecondaryIndexes")), name
        assert _indexes(declared.get("LocalSecondaryIndexes")) == _indexes(live.get("LocalSecondaryIndexes")), name
        live_stream = live.get("StreamSpecification") or {}
        expected_view = live_stream.get("StreamViewType") if live_stream.get("StreamEnabled") else None
        assert (declared.get("StreamSpecification") or {}).get("StreamViewType") == expected_view, name


def test_streams_are_on_trajectories_events_and_review_jobs_only(template):
    for name, props in tables_by_name(template).items():
        table = name.removeprefix(f"hindsight-{template.stage}-")
        view = (props.get("StreamSpecification") or {}).get("StreamViewType")
        assert view == ("NEW_AND_OLD_IMAGES" if table in STREAMED else None), name


def test_every_table_is_on_demand_with_point_in_time_recovery(template):
    tables = tables_by_name(template)
    assert len(tables) == 9
    for name, props in tables.items():
        assert props["BillingMode"] == "PAY_PER_REQUEST", name
        assert props["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}, name
        assert "ProvisionedThroughput" not in props
        assert all("ProvisionedThroughput" not in i for i in props.get("GlobalSecondaryIndexes", []))


def test_the_idempotency_table_is_the_one_powertools_uses(serverless):
    from aws_lambda_powertools.utilities.idempotency import DynamoDBPersistenceLayer

    defaults = inspect.signature(DynamoDBPersistenceLayer.__init__).parameters
    key_attr, expiry_attr = defaults["key_attr"].default, defaults["expiry_attr"].default
    name = table_name(serverless, "idempotency")
    props = tables_by_name(serverless)[name]
    assert props["KeySchema"] == [{"AttributeName": key_attr, "KeyType": "HASH"}]
    assert props["AttributeDefinitions"] == [{"AttributeName": key_attr, "AttributeType": "S"}]
    assert props["TimeToLiveSpecification"] == {"AttributeName": expiry_attr, "Enabled": True}
    for fn in serverless.of_type("AWS::Serverless::Function").values():
        assert fn["Properties"]["Environment"]["Variables"]["HINDSIGHT_IDEMPOTENCY_TABLE"] == name


def test_the_rate_limit_table_expires_idle_buckets_with_the_models_ttl_attribute(serverless):
    from chalicelib.adapters.dynamo.models import RateLimitItem

    props = tables_by_name(serverless)[table_name(serverless, "rate-limits")]
    assert props["KeySchema"] == [{"AttributeName": "bucket", "KeyType": "HASH"}]
    assert props["TimeToLiveSpecification"] == {"AttributeName": RateLimitItem._ttl_attribute().attr_name, "Enabled": True}
    assert "StreamSpecification" not in props


def test_the_events_table_expires_events_past_their_retention_and_lessons_never_expire(serverless):
    from chalicelib.adapters.dynamo.models import EventItem

    tables = tables_by_name(serverless)
    events = tables[table_name(serverless, "events")]
    assert events["TimeToLiveSpecification"] == {"AttributeName": EventItem._ttl_attribute().attr_name, "Enabled": True}
    assert events["TimeToLiveSpecification"]["AttributeName"] == "expires"
    for kept in ("experiences", "trajectories", "tenants"):  # lessons, trajectories and tenants have no TTL
        assert "TimeToLiveSpecification" not in tables[table_name(serverless, kept)], kept


def test_table_prefix_comes_from_the_stage(template):
    prefix = f"hindsight-{template.stage}-"
    assert all(name.startswith(prefix) for name in tables_by_name(template))
    for fn in template.of_type("AWS::Serverless::Function").values():
        assert fn["Properties"]["Environment"]["Variables"]["HINDSIGHT_TABLE_PREFIX"] == prefix
        assert fn["Properties"]["FunctionName"].startswith(f"hindsight-{template.stage}-")


# --- the review stream --------------------------------------------------------------------------


def test_review_stream_mapping_reports_partial_failures_bisects_retries_and_dead_letters(translated):
    import app as app_module

    (source,) = [e for e in app_module.app.event_sources if type(e).__name__ == "DynamoDBEventConfig"]
    (esm,) = [m for m in translated.of_type("AWS::Lambda::EventSourceMapping").values()
              if m["Properties"]["EventSourceArn"] == {"Fn::GetAtt": ["ReviewJobsTable", "StreamArn"]}]
    p = esm["Properties"]
    dlq = translated.logical_id("ReviewDeadLetterQueue", "AWS::SQS::Queue")
    assert p["EventSourceArn"] == {"Fn::GetAtt": ["ReviewJobsTable", "StreamArn"]}
    assert p["FunctionName"] == {"Ref": "ReviewWorkerAliaslive"}  # the alias: a deployment moves it
    assert p["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert p["BisectBatchOnFunctionError"] is True
    assert p["MaximumRetryAttempts"] == 3
    assert 60 <= p["MaximumRecordAgeInSeconds"] <= 604800
    assert p["StartingPosition"] == "TRIM_HORIZON"
    assert p["BatchSize"] == source.batch_size
    assert p["DestinationConfig"] == {"OnFailure": {"Destination": {"Fn::GetAtt": [dlq, "Arn"]}}}


def test_lambda_runs_the_review_worker_without_importing_app_py_and_every_other_function_from_it(translated):
    """The worker's handler is chalicelib.review_worker_lambda's (app.py's import loads the API for
    a function that serves none); it does what app.py's declared function does, a call of
    lambda_handlers.review_stream (test_package imports it from the package alone)."""
    import importlib

    import app as app_module
    from chalicelib import lambda_handlers, review_worker_lambda

    prefix = f"hindsight-{translated.stage}-"
    handlers = {name.removeprefix(prefix): fn["Properties"]["Handler"] for name, fn in functions(translated).items()}
    worker = handlers.pop("review_worker")
    assert worker == "chalicelib.review_worker_lambda.handler"
    assert handlers.pop("opensearch_index_setup") == "chalicelib.index_setup_lambda.handler"
    assert handlers == {"api_handler": "app.app", "api_key_authorizer": "app.api_key_authorizer",
                        "review_sweeper": "app.review_sweeper", "decay_schedule": "app.decay_schedule",
                        "tenant_jobs": "app.tenant_jobs", "decay_worker": "app.decay_worker"}
    module, _, attr = worker.rpartition(".")
    assert getattr(importlib.import_module(module), attr) is review_worker_lambda.handler
    assert review_worker_lambda.review_stream is lambda_handlers.review_stream
    assert "review_worker" in app_module.app.handler_map  # declared there: name, stream, batch size


def test_every_function_skips_pydantic_s_plugin_scan_and_no_plugin_is_installed(translated):
    """PYDANTIC_DISABLE_PLUGINS=__all__ spares a cold start pydantic's walk over every installed
    distribution's entry points; it changes nothing else only while no plugin is installed."""
    from importlib.metadata import entry_points

    assert list(entry_points(group="pydantic")) == []
    for name, fn in functions(translated).items():
        assert fn["Properties"]["Environment"]["Variables"]["PYDANTIC_DISABLE_PLUGINS"] == "__all__", name
    chalice = json.loads((ROOT / ".chalice" / "config.json").read_text())  # ``chalice deploy`` without the stack
    for stage, config in chalice["stages"].items():
        assert config["environment_variables"]["PYDANTIC_DISABLE_PLUGINS"] == "__all__", stage


def test_review_worker_concurrency_is_the_stages_own(translated):
    """ParallelizationFactor concurrent batches per shard, each draining the queue; the reserved
    concurrency caps them all (docs/architecture.md, "Review throughput")."""
    cfg = load_stage(translated.stage)
    (esm,) = [m for m in translated.of_type("AWS::Lambda::EventSourceMapping").values() if "ParallelizationFactor" in m["Properties"]]
    p = esm["Properties"]
    assert p["ParallelizationFactor"] == cfg.stream_parallelization_factor and 1 < p["ParallelizationFactor"] <= 10
    assert p["MaximumBatchingWindowInSeconds"] == cfg.stream_batching_window_s
    reserved = translated.resources["ReviewWorker"]["Properties"]["ReservedConcurrentExecutions"]
    assert reserved == cfg.review_worker_reserved_concurrency >= cfg.stream_parallelization_factor
    # ``chalice deploy`` without the stack caps the worker the same way
    chalice = json.loads((ROOT / ".chalice" / "config.json").read_text())
    assert chalice["stages"]["dev"]["lambda_functions"]["review_worker"]["reserved_concurrency"] == reserved


def test_the_review_worker_waits_for_the_permissions_its_mapping_needs(translated):
    worker = translated.resources["ReviewWorker"]
    policy = translated.logical_id("ReviewWorkerPolicy", "AWS::IAM::Policy")
    assert policy in worker["DependsOn"]
    assert worker["Properties"]["Role"] == {"Fn::GetAtt": [translated.logical_id("ReviewWorkerRole", "AWS::IAM::Role"), "Arn"]}


def test_timeouts_cover_the_handlers_time_budgets(template):
    from chalicelib import lambda_handlers

    budget = inspect.signature(lambda_handlers.run_due_jobs).parameters["budget_seconds"].default
    fns = {f["Properties"]["FunctionName"]: f["Properties"] for f in template.of_type("AWS::Serverless::Function").values()}
    prefix = f"hindsight-{template.stage}-"
    assert fns[prefix + "review_worker"]["Timeout"] > budget + 60  # the budget, then one review with its LLM call
    sweep_budget = float(fns[prefix + "review_sweeper"]["Environment"]["Variables"].get("HINDSIGHT_SWEEP_SECONDS", 50))
    assert fns[prefix + "review_sweeper"]["Timeout"] > sweep_budget + 60
    assert fns[prefix + "api_handler"]["Timeout"] <= 30  # API Gateway answers 504 after 29 s anyway


def test_the_dead_letter_queues_are_encrypted_and_kept_two_weeks(template):
    queues = {k: q for k, q in template.of_type("AWS::SQS::Queue").items()
              if q["Properties"]["QueueName"].endswith("-dlq")}
    assert sorted(q["Properties"]["QueueName"] for q in queues.values()) == [
        f"hindsight-{template.stage}-decay-dlq", f"hindsight-{template.stage}-maintenance-dlq",
        f"hindsight-{template.stage}-review-dlq"]
    for q in queues.values():
        assert q["Properties"]["SqsManagedSseEnabled"] is True
        assert q["Properties"]["MessageRetentionPeriod"] == 14 * 24 * 3600


def test_a_failed_decay_run_goes_to_the_maintenance_dlq_and_its_timeout_covers_the_reserve(translated, template):
    """The schedule invokes decay asynchronously: Lambda retries a failed run, then sends it to the
    on-failure destination. Its role may send there and nowhere else; a run stops taking pages with
    ``decay_reserve_seconds`` left, which must be less than its timeout."""
    from chalicelib.settings import Settings

    dlq = translated.logical_id("MaintenanceDeadLetterQueue", "AWS::SQS::Queue")
    configs = list(translated.of_type("AWS::Lambda::EventInvokeConfig").values())
    # the two schedules invoked asynchronously: decay and the tenant jobs
    assert sorted(c["Properties"]["FunctionName"]["Ref"] for c in configs) == sorted(
        translated.logical_id(f, "AWS::Lambda::Function") for f in ("DecaySchedule", "TenantJobs"))
    (p,) = [c["Properties"] for c in configs
            if c["Properties"]["FunctionName"] == {"Ref": translated.logical_id("DecaySchedule", "AWS::Lambda::Function")}]
    assert p["DestinationConfig"] == {"OnFailure": {"Destination": {"Fn::GetAtt": [dlq, "Arn"]}}}
    assert p["MaximumRetryAttempts"] == 2
    decay_queue = translated.logical_id("DecayQueue", "AWS::SQS::Queue")
    assert actions_on(role_statements(translated, "DecayScheduleRole"))["sqs:SendMessage"] == {
        f"{{{dlq}.Arn}}", f"{{{decay_queue}.Arn}}"}
    fns = {f["Properties"]["FunctionName"]: f["Properties"] for f in template.of_type("AWS::Serverless::Function").values()}
    assert fns[f"hindsight-{template.stage}-decay_schedule"]["Timeout"] > Settings.model_construct().decay_reserve_seconds + 30


# --- IAM ----------------------------------------------------------------------------------------


def test_no_wildcard_actions_and_no_wildcard_resources_beyond_sub_resources(translated):
    statements = policy_statements(translated)
    assert statements
    for policy, s in statements:
        if s["Effect"] != "Allow":
            continue
        for action in as_list(s["Action"]):
            assert "*" not in action, f"{policy}: wildcard action {action}"
        for resource in as_list(s["Resource"]):
            text = render(resource)
            if "*" not in text and "?" not in text:
                continue
            if re.fullmatch(r"\{\w+LogGroup\.Arn\}", text):
                continue  # a log group's Arn attribute ends in ":*" (its streams): GetAtt, no literal wildcard
            if text == "*" and set(as_list(s["Action"])) <= XRAY_ACTIONS:
                continue
            assert any(p.match(text) for p, _ in ALLOWED_WILDCARDS), f"{policy}: {s['Action']} on {text}"


def test_each_function_has_a_role_of_its_own_and_no_role_a_managed_policy(translated):
    from infra.hindsight_infra.access import FUNCTIONS

    prefix = f"hindsight-{translated.stage}-"
    roles = {k: r for k, r in translated.of_type("AWS::IAM::Role").items()}
    used = {}
    for name, fn in functions(translated).items():
        role = fn["Properties"]["Role"]["Fn::GetAtt"][0]
        assert role not in used.values(), f"{name} shares {role}"
        used[name.removeprefix(prefix)] = role
        assert roles[role]["Properties"]["AssumeRolePolicyDocument"]["Statement"] == [
            {"Action": "sts:AssumeRole", "Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}}
        ]
    assert set(used) == set(FUNCTIONS)
    for logical_id, role in roles.items():
        assert "ManagedPolicyArns" not in role["Properties"], logical_id
    # beside the functions': CodeDeploy's (the canary) and API Gateway's account-wide logging role
    others = {re.sub(r"[0-9A-F]{8}$", "", k) for k in set(roles) - set(used.values())}
    assert others <= {"CodeDeployRole", "ApiGatewayLoggingRole"}, others


def test_dynamodb_access_is_on_the_stacks_tables_only(translated):
    api = actions_on(role_statements(translated, "ApiHandlerRole"))
    worker = actions_on(role_statements(translated, "ReviewWorkerRole"))
    app_tables = {"Tenants", "Trajectories", "Events", "Experiences", "ReviewJobs", "RateLimits", "Recalls"}
    review_tables = {"Trajectories", "Events", "Experiences", "ReviewJobs", "Recalls"}
    expected = {f"{{{t}Table.Arn}}" for t in app_tables} | {f"{{{t}Table.Arn}}/index/*" for t in app_tables}
    # and the maintenance table's items: the tenant jobs' checkpoints, which the admin routes write
    checkpoints = {"{MaintenanceTable.Arn}", "{MaintenanceTable.Arn}/index/*"}
    for action in ("dynamodb:GetItem", "dynamodb:PutItem"):
        assert api[action] == expected | checkpoints, action
    for action in ("dynamodb:Query", "dynamodb:UpdateItem", "dynamodb:ConditionCheckItem"):
        assert api[action] == expected, action
    for role in ("ApiHandlerRole", "ReviewWorkerRole", "ReviewSweeperRole", "DecayScheduleRole", "ApiKeyAuthorizerRole"):
        granted = actions_on(role_statements(translated, role))
        assert "dynamodb:Scan" not in granted and "dynamodb:CreateTable" not in granted and "dynamodb:DeleteTable" not in granted
    # the review worker: the review tables, the idempotency records, and the checkpoints (a scope's
    # successful runs, which a failed run is compared with)
    assert worker["dynamodb:PutItem"] == {f"{{{t}Table.Arn}}" for t in review_tables} | {
        f"{{{t}Table.Arn}}/index/*" for t in review_tables} | {"{IdempotencyTable.Arn}"} | checkpoints
    assert "{IdempotencyTable.Arn}" not in api["dynamodb:PutItem"]
    stream = {"{ReviewJobsTable.Arn}/stream/*"}
    for action in ("dynamodb:GetRecords", "dynamodb:GetShardIterator", "dynamodb:DescribeStream", "dynamodb:ListStreams"):
        assert worker[action] == stream, action
        assert action not in api, action


def test_only_the_review_worker_may_send_to_the_review_dlq_and_only_decay_to_the_maintenance_dlq(translated):
    dlq = translated.logical_id("ReviewDeadLetterQueue", "AWS::SQS::Queue")
    assert actions_on(role_statements(translated, "ReviewWorkerRole"))["sqs:SendMessage"] == {f"{{{dlq}.Arn}}"}
    for role in ("ApiHandlerRole", "ReviewSweeperRole", "ApiKeyAuthorizerRole", "OpensearchIndexSetupRole"):
        assert not any(a.startswith("sqs:") for a in actions_on(role_statements(translated, role))), role


def test_the_openai_secret_is_read_by_name_by_the_functions_that_call_openai_and_no_admin_key_exists(translated):
    """Admin routes are authorized by IAM: the stage holds no admin key, no function reads one."""
    assert not translated.of_type("AWS::SecretsManager::Secret")
    secret = ("arn:{AWS::Partition}:secretsmanager:{AWS::Region}:{AWS::AccountId}:secret:"
              f"hindsight/{translated.stage}/openai-api-key-??????")
    for role, reads in (("ApiHandlerRole", True), ("ReviewWorkerRole", True), ("ReviewSweeperRole", True),
                        ("ApiKeyAuthorizerRole", False), ("DecayScheduleRole", False), ("OpensearchIndexSetupRole", False)):
        granted = actions_on(role_statements(translated, role))
        assert granted.get("secretsmanager:GetSecretValue") == ({secret} if reads else None), role
    for name, fn in functions(translated).items():
        env = fn["Properties"]["Environment"]["Variables"]
        assert not {"HINDSIGHT_OPENAI_API_KEY", "HINDSIGHT_ADMIN_KEY", "HINDSIGHT_ADMIN_KEY_SECRET"} & set(env), name
        assert env["HINDSIGHT_OPENAI_API_KEY_SECRET"] == f"hindsight/{translated.stage}/openai-api-key"
        assert env["HINDSIGHT_ADMIN_AUTH"] == "iam"


def test_settings_read_the_secrets_the_stack_names(monkeypatch):
    """The functions get secret ARNs (HINDSIGHT_*_SECRET); ``container.secret`` must return their
    values (read when a request first needs them, not by get_settings())."""
    from chalicelib import container
    from chalicelib.settings import Settings

    missing = {"admin_key_secret", "openai_api_key_secret"} - set(Settings.model_fields)
    if missing:
        pytest.skip(f"chalicelib/settings.py has no {sorted(missing)} yet: the stack passes secret ARNs the app "
                    "does not read (infra/README.md, 'Secrets', lists the lines to add)")
    boto3 = pytest.importorskip("boto3")
    moto = pytest.importorskip("moto")
    for key, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1",
                       "HINDSIGHT_AWS_REGION": "us-east-1"}.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("HINDSIGHT_ADMIN_KEY", raising=False)
    monkeypatch.delenv("HINDSIGHT_OPENAI_API_KEY", raising=False)
    with moto.mock_aws():
        sm = boto3.client("secretsmanager", region_name="us-east-1")
        admin_arn = sm.create_secret(Name="hindsight/ci/admin-key", SecretString="admin-from-secret")["ARN"]
        sm.create_secret(Name="hindsight/ci/openai-api-key", SecretString="sk-from-secret")
        monkeypatch.setenv("HINDSIGHT_ADMIN_KEY_SECRET", admin_arn)  # the stack passes an ARN ...
        monkeypatch.setenv("HINDSIGHT_OPENAI_API_KEY_SECRET", "hindsight/ci/openai-api-key")  # ... or a name
        monkeypatch.setattr(container, "_settings", None)
        monkeypatch.setattr(container, "_secret_values", {})
        settings = container.get_settings()
        assert container.secret(settings, "admin_key") == "admin-from-secret"
        assert container.secret(settings, "openai_api_key") == "sk-from-secret"


def test_the_lambda_environment_is_made_of_settings(template):
    from chalicelib.settings import Settings

    known = {f"HINDSIGHT_{name.upper()}" for name in Settings.model_fields}
    # read outside Settings: app.py at import (the stream ARN, for Chalice's decorator; the
    # authorizer's cache and the admin routes' authorization, for the API's definition),
    # lambda_handlers.py
    read_elsewhere = {"HINDSIGHT_JOBS_STREAM_ARN", "HINDSIGHT_SWEEP_SECONDS", "HINDSIGHT_AUTHORIZER_TTL",
                      "HINDSIGHT_ADMIN_AUTH"}
    for fn in template.of_type("AWS::Serverless::Function").values():
        env = fn["Properties"]["Environment"]["Variables"]
        unknown = {k for k in env if k.startswith("HINDSIGHT_")} - known - read_elsewhere
        assert not unknown, f"{fn['Properties']['FunctionName']}: {sorted(unknown)} are no setting"
        assert env["HINDSIGHT_BACKEND"] == "aws"
        assert env["HINDSIGHT_AWS_REGION"] == {"Ref": "AWS::Region"}
        assert env["HINDSIGHT_EMBEDDER"] == "openai"
        assert env["HINDSIGHT_OPENSEARCH_ENGINE"] == "faiss"
        assert env["HINDSIGHT_OPENSEARCH_CREATE_INDEX"] == "false"  # the deploy-time custom resource makes it
        assert env["HINDSIGHT_STAGE"] == template.stage  # the stage dimension of the functions' metrics
        assert "HINDSIGHT_DATA_DIR" not in env  # the embedded backend's: nothing of it in the cloud
        Settings.model_validate({k.removeprefix("HINDSIGHT_").lower(): v for k, v in env.items()
                                 if isinstance(v, str) and k in known})


# --- OpenSearch ---------------------------------------------------------------------------------


def test_serverless_collection_with_its_three_policies(serverless):
    name = f"hindsight-{serverless.stage}"
    _, collection = serverless.one("AWS::OpenSearchServerless::Collection")
    assert collection["Properties"]["Type"] == "VECTORSEARCH"
    assert collection["Properties"]["Name"] == name
    policies = {r["Properties"]["Type"]: r for r in serverless.of_type("AWS::OpenSearchServerless::SecurityPolicy").values()}
    encryption = json.loads(policies["encryption"]["Properties"]["Policy"])
    assert encryption == {"Rules": [{"ResourceType": "collection", "Resource": [f"collection/{name}"]}], "AWSOwnedKey": True}
    network = json.loads(policies["network"]["Properties"]["Policy"])
    assert network[0]["Rules"] == [{"ResourceType": "collection", "Resource": [f"collection/{name}"]}]
    assert {"CollectionEncryptionPolicy", "CollectionNetworkPolicy"} <= set(collection["DependsOn"])

    _, access = serverless.one("AWS::OpenSearchServerless::AccessPolicy")
    assert access["Properties"]["Type"] == "data"
    text = render(access["Properties"]["Policy"])
    index = f'"index/{name}/hindsight-experiences"'
    assert text.count(index) == 2 and '"aoss:*"' not in text and "collection/" not in text.split('"Rules"', 1)[1]
    # the functions: documents; the deploy-time setup alone: the index itself
    readers = [serverless.logical_id(f"{p}Role", "AWS::IAM::Role")
               for p in ("ApiHandler", "ReviewWorker", "ReviewSweeper", "DecayWorker")]
    first, second = text.split('{"Rules"')[1:]
    assert '"Permission":["aoss:ReadDocument","aoss:WriteDocument"]' in first
    assert all("{%s.Arn}" % r in first for r in readers) and "OpensearchIndexSetupRole" not in first
    assert '"Permission":["aoss:CreateIndex","aoss:DescribeIndex","aoss:UpdateIndex"]' in second
    assert "OpensearchIndexSetupRole" in second and not any(r in second for r in readers)
    assert "ApiKeyAuthorizerRole" not in text  # the authorizer reaches no OpenSearch at all

    api = actions_on(role_statements(serverless, "ApiHandlerRole"))
    assert api["aoss:APIAccessAll"] == {"{Collection.Arn}"}
    assert not any(a.startswith("aoss:") for a in actions_on(role_statements(serverless, "ApiKeyAuthorizerRole")))
    assert not serverless.of_type("AWS::OpenSearchService::Domain")
    for fn in serverless.of_type("AWS::Serverless::Function").values():
        env = fn["Properties"]["Environment"]["Variables"]
        assert env["HINDSIGHT_OPENSEARCH_SERVICE"] == "aoss"
        assert env["HINDSIGHT_OPENSEARCH_ENDPOINT"] == {"Fn::GetAtt": ["Collection", "CollectionEndpoint"]}


def test_managed_domain_runs_opensearch_2_19_encrypted_for_the_two_roles_only(domain):
    name = f"hindsight-{domain.stage}"
    _, d = domain.one("AWS::OpenSearchService::Domain")
    p = d["Properties"]
    assert p["EngineVersion"] == "OpenSearch_2.19"
    assert p["DomainName"] == name
    assert p["EncryptionAtRestOptions"] == {"Enabled": True}
    assert p["NodeToNodeEncryptionOptions"] == {"Enabled": True}
    assert p["DomainEndpointOptions"]["EnforceHTTPS"] is True
    documents, setup = p["AccessPolicies"]["Statement"]
    readers = sorted(domain.logical_id(f"{x}Role", "AWS::IAM::Role")
                     for x in ("ApiHandler", "ReviewWorker", "ReviewSweeper", "DecayWorker", "TenantJobs"))
    assert sorted(r["Fn::GetAtt"][0] for r in documents["Principal"]["AWS"]) == readers
    index = f":domain/{name}/hindsight-experiences"
    # the functions: search, count and bulk under the index's path, nothing that makes or changes it
    assert sorted(render(r).split(index)[1] for r in documents["Resource"]) == ["/_bulk", "/_count", "/_msearch", "/_search"]
    assert documents["Action"] == ["es:ESHttpGet", "es:ESHttpPost"]
    assert [r["Fn::GetAtt"][0] for r in setup["Principal"]["AWS"]] == [domain.logical_id("OpensearchIndexSetupRole", "AWS::IAM::Role")]
    assert sorted(render(r).split(index)[1] for r in setup["Resource"]) == ["", "/*"]
    api = actions_on(role_statements(domain, "ApiHandlerRole"))
    es = {a: r for a, r in api.items() if a.startswith("es:")}
    assert set(es) == {"es:ESHttpGet", "es:ESHttpPost"}
    assert all(r == {render(x) for x in documents["Resource"]} for r in es.values())
    assert not any(a.startswith("es:") for a in actions_on(role_statements(domain, "ApiKeyAuthorizerRole")))
    assert not domain.of_type("AWS::OpenSearchServerless::Collection")
    for fn in domain.of_type("AWS::Serverless::Function").values():
        env = fn["Properties"]["Environment"]["Variables"]
        assert env["HINDSIGHT_OPENSEARCH_SERVICE"] == "es"
        assert render(env["HINDSIGHT_OPENSEARCH_ENDPOINT"]) == f"https://{{{next(iter(domain.of_type('AWS::OpenSearchService::Domain')))}.DomainEndpoint}}"


# --- alarms -------------------------------------------------------------------------------------


def test_every_function_of_the_app_has_an_errors_alarm(translated):
    import app as app_module

    chalice_app = app_module.app
    expected = {"api_handler"} | {e.name for e in chalice_app.event_sources} \
        | {a.name for a in chalice_app.builtin_auth_handlers} | {f.name for f in chalice_app.pure_lambda_functions}
    prefix = f"hindsight-{translated.stage}-"
    assert set(functions(translated)) == {prefix + n for n in expected}
    alarmed = {}
    for alarm in translated.of_type("AWS::CloudWatch::Alarm").values():
        p = alarm["Properties"]
        if p.get("MetricName") == "Errors":
            assert p["Namespace"] == "AWS/Lambda" and p["Statistic"] == "Sum"
            assert p["ComparisonOperator"] == "GreaterThanThreshold" and p["Threshold"] == 0
            (dim,) = p["Dimensions"]
            alarmed[dim["Value"]] = p
    assert set(alarmed) == set(functions(translated))


def test_each_dlq_depth_alarm_fires_on_one_message(template):
    topic = template.logical_id("AlarmTopic", "AWS::SNS::Topic")
    alarms = [a["Properties"] for a in template.of_type("AWS::CloudWatch::Alarm").values()
              if a["Properties"].get("Namespace") == "AWS/SQS"]
    queues = {template.logical_id(name, "AWS::SQS::Queue")
              for name in ("ReviewDeadLetterQueue", "MaintenanceDeadLetterQueue", "DecayDeadLetterQueue")}
    assert {p["Dimensions"][0]["Value"]["Fn::GetAtt"][0] for p in alarms} == queues and len(alarms) == 3
    for p in alarms:
        assert p["MetricName"] == "ApproximateNumberOfMessagesVisible"
        assert p["ComparisonOperator"] == "GreaterThanThreshold" and p["Threshold"] == 0
        assert p["AlarmActions"] == [{"Ref": topic}]


def test_every_alarm_notifies_the_topic_and_the_topic_mails_the_operator(template):
    topic = template.logical_id("AlarmTopic", "AWS::SNS::Topic")
    alarms = template.of_type("AWS::CloudWatch::Alarm")
    assert len(alarms) >= 7  # DLQ, 5 functions' errors, iterator age
    assert all(a["Properties"]["AlarmActions"] == [{"Ref": topic}] for a in alarms.values())
    (sub,) = template.of_type("AWS::SNS::Subscription").values()
    assert sub["Properties"]["Protocol"] == "email" and sub["Properties"]["Endpoint"] == ALARM_EMAIL


# --- validity -----------------------------------------------------------------------------------


def test_the_stub_template_refuses_to_deploy(template):
    assert "StubPackageIsNotDeployable" in template.doc["Rules"]


def test_the_expanded_template_passes_cfn_lint(translated):
    pytest.importorskip("cfnlint", reason="cfn-lint validates every resource against CloudFormation's schemas")
    from cfnlint.api import ManualArgs, lint

    # W8003: the stub rule's Fn::Equals is always false -- on purpose
    matches = lint(json.dumps(translated.doc), config=ManualArgs(ignore_checks=["W8003"], regions=["us-east-1"]))
    # W1020 where the SAM transform resolved the CDK asset bucket's Fn::Sub (to hash the code of a
    # function published under an alias) and left a Sub with nothing to substitute: its output, not ours
    matches = [m for m in matches if not (m.rule.id == "W1020" and list(m.path)[-2:] == ["S3Bucket", "Fn::Sub"])]
    assert not matches, "\n".join(f"{m} at {list(m.path)}" for m in matches)


def test_stage_parameters():
    from infra.hindsight_infra.config import load_stage

    dev, prod = load_stage("dev"), load_stage("prod")
    assert dev.table_prefix == "hindsight-dev-" and prod.table_prefix == "hindsight-prod-"
    assert not dev.retain_data and prod.retain_data
    assert prod.serverless_standby_replicas and not dev.serverless_standby_replicas
    assert load_stage("dev", {"opensearch": "domain"}).opensearch_service == "es"
    assert load_stage("alice").table_prefix == "hindsight-alice-"  # an unlisted stage takes the defaults
    assert load_stage("dev", {"lambda_timeout_s": '{"review_worker": 600}'}).timeout("review_worker") == 600
    for bad in ("Dev", "a-stage-name-that-is-too-long", "1st"):
        with pytest.raises(ValueError):
            load_stage(bad)
    with pytest.raises(ValueError):
        load_stage("dev", {"no_such_parameter": 1})
    with pytest.raises(ValueError):
        load_stage("dev", {"opensearch": "elasticsearch"})
    with pytest.raises(ValueError):
        load_stage("dev", {"environment": {"OPENAI_API_KEY": "x"}})


def test_stacks_stand_alone(template, cdk_out):
    """Two stages synthesized together share nothing: no export, no import, no stack dependency."""
    text = json.dumps(template.doc)
    assert "Fn::ImportValue" not in text
    assert not any("Export" in o for o in template.doc.get("Outputs", {}).values())
    manifest = json.loads((cdk_out / "manifest.json").read_text())
    assert manifest["artifacts"][f"hindsight-{template.stage}"]["dependencies"] == [f"hindsight-{template.stage}.assets"]


def test_api_gateways_own_refusals_keep_the_contracts_error_shape(translated):
    (api,) = translated.of_type("AWS::ApiGateway::RestApi").values()
    responses = api["Properties"]["Body"]["x-amazon-apigateway-gateway-responses"]
    assert {"UNAUTHORIZED", "MISSING_AUTHENTICATION_TOKEN", "ACCESS_DENIED", "DEFAULT_4XX", "DEFAULT_5XX"} <= set(responses)
    assert str(responses["UNAUTHORIZED"]["statusCode"]) == "401"
    assert str(responses["MISSING_AUTHENTICATION_TOKEN"]["statusCode"]) == "404"
    assert "statusCode" not in responses["DEFAULT_4XX"]  # API Gateway's own status is kept
    # an authorizer that raised (its store failed) and the stage's throttling are retryable
    for name, status in (("AUTHORIZER_FAILURE", "503"), ("THROTTLED", "429")):
        assert str(responses[name]["statusCode"]) == status
        assert responses[name]["responseParameters"] == {"gatewayresponse.header.Retry-After": "'1'"}
    for name, response in responses.items():
        body = response["responseTemplates"]["application/json"]
        if name == "ACCESS_DENIED":  # the authorizer's reason, or API Gateway's (test_edge reads both branches)
            assert '{"error": {"code": "unauthorized", "message": $context.error.messageString}}' in body
            continue
        assert body.startswith('{"error": {"code": "') and "$context.error.messageString" in body


def test_the_recalls_table_expires_served_recalls_and_credit_markers_with_the_models_ttl(serverless):
    from chalicelib.adapters.dynamo.models import RecallItem

    props = tables_by_name(serverless)[table_name(serverless, "recalls")]
    assert props["KeySchema"] == [{"AttributeName": "tenant_id", "KeyType": "HASH"}, {"AttributeName": "key", "KeyType": "RANGE"}]
    assert props["TimeToLiveSpecification"] == {"AttributeName": RecallItem._ttl_attribute().attr_name, "Enabled": True}
    assert "StreamSpecification" not in props


def test_tenant_jobs_reach_the_exports_prefix_only_and_the_bucket_is_private_encrypted_and_expiring(translated, template):
    """The exports bucket: no public access, SSE, TLS only, no versions (a deleted tenant's exports
    are gone, not kept as old versions), the exports expire; the tenant jobs' role may write, read,
    delete and list the exports' prefix and nothing else of S3; the API's may read the parts."""
    (bucket_id, bucket), = template.of_type("AWS::S3::Bucket").items()
    p = bucket["Properties"]
    assert p["PublicAccessBlockConfiguration"] == {"BlockPublicAcls": True, "BlockPublicPolicy": True,
                                                   "IgnorePublicAcls": True, "RestrictPublicBuckets": True}
    assert p["BucketEncryption"]["ServerSideEncryptionConfiguration"][0]["ServerSideEncryptionByDefault"] == {
        "SSEAlgorithm": "AES256"}
    assert "VersioningConfiguration" not in p
    (rule,) = p["LifecycleConfiguration"]["Rules"]
    assert rule["Prefix"] == "exports/" and rule["ExpirationInDays"] == 7 and rule["Status"] == "Enabled"
    (policy,) = template.of_type("AWS::S3::BucketPolicy").values()
    assert any(s["Effect"] == "Deny" and s["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
               for s in policy["Properties"]["PolicyDocument"]["Statement"])
    jobs = actions_on(role_statements(translated, "TenantJobsRole"))
    s3 = {a: r for a, r in jobs.items() if a.startswith("s3:")}
    prefix = {f"{{{translated.logical_id('ExportsBucket', 'AWS::S3::Bucket')}.Arn}}/exports/*"}
    assert s3 == {"s3:PutObject": prefix, "s3:GetObject": prefix, "s3:DeleteObject": prefix,
                  "s3:ListBucket": {f"{{{translated.logical_id('ExportsBucket', 'AWS::S3::Bucket')}.Arn}}"}}
    api = actions_on(role_statements(translated, "ApiHandlerRole"))
    assert {a: r for a, r in api.items() if a.startswith("s3:")} == {"s3:GetObject": prefix}
    for role in ("ReviewWorkerRole", "ReviewSweeperRole", "DecayScheduleRole", "ApiKeyAuthorizerRole"):
        assert not any(a.startswith("s3:") for a in actions_on(role_statements(translated, role))), role
    fns = {f["Properties"]["FunctionName"]: f["Properties"] for f in template.of_type("AWS::Serverless::Function").values()}
    assert fns[f"hindsight-{template.stage}-tenant_jobs"]["Timeout"] > 10 + 30  # the run's reserve and a step
    assert bucket_id


# --- the decay fan-out ---------------------------------------------------------------------------


def test_the_decay_queue_feeds_the_decay_worker_with_partial_failures_a_dlq_and_an_alarm(translated, template):
    """The schedule fans a pass out to the decay queue, one message per tenant; the decay worker's
    event source mapping reads it ten at a time, reports failed messages one by one, and is capped
    in concurrency; a message failed five times goes to the decay DLQ, whose alarm notifies."""
    cfg = load_stage(translated.stage)
    queue = translated.logical_id("DecayQueue", "AWS::SQS::Queue")
    dlq = translated.logical_id("DecayDeadLetterQueue", "AWS::SQS::Queue")
    q = translated.resources[queue]["Properties"]
    assert q["QueueName"] == f"hindsight-{translated.stage}-decay" and q["SqsManagedSseEnabled"] is True
    assert q["RedrivePolicy"] == {"deadLetterTargetArn": {"Fn::GetAtt": [dlq, "Arn"]}, "maxReceiveCount": 5}
    assert q["VisibilityTimeout"] >= 6 * cfg.timeout("decay_worker")  # Lambda's rule for an SQS event source
    (esm,) = [m["Properties"] for m in translated.of_type("AWS::Lambda::EventSourceMapping").values()
              if m["Properties"].get("EventSourceArn") == {"Fn::GetAtt": [queue, "Arn"]}]
    assert esm["FunctionName"] == {"Ref": translated.logical_id("DecayWorkerAlias", "AWS::Lambda::Alias")}
    assert esm["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert esm["BatchSize"] == 10
    assert esm["ScalingConfig"] == {"MaximumConcurrency": max(2, cfg.decay_max_concurrency)}
    # who may do what with it: the schedule sends, the worker reads, deletes and sends a tenant back
    schedule = actions_on(role_statements(translated, "DecayScheduleRole"))
    worker = actions_on(role_statements(translated, "DecayWorkerRole"))
    arn = f"{{{queue}.Arn}}"
    assert {a for a, rs in schedule.items() if arn in rs} == {"sqs:SendMessage"}
    assert {a for a, rs in worker.items() if arn in rs} == {
        "sqs:ChangeMessageVisibility", "sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:ReceiveMessage", "sqs:SendMessage"}
    for role in ("ApiHandlerRole", "ReviewWorkerRole", "ReviewSweeperRole", "ApiKeyAuthorizerRole", "OpensearchIndexSetupRole"):
        assert not any(arn in rs for rs in actions_on(role_statements(translated, role)).values()), role
    # the schedule reads no lesson and no index: the worker does
    assert not any(a.startswith(("es:", "aoss:")) for a in schedule)
    assert "{ExperiencesTable.Arn}" not in schedule.get("dynamodb:GetItem", set())
    assert "{ExperiencesTable.Arn}" in worker["dynamodb:PutItem"]
    fns = {f["Properties"]["FunctionName"]: f["Properties"] for f in template.of_type("AWS::Serverless::Function").values()}
    env = fns[f"hindsight-{template.stage}-decay_schedule"]["Environment"]["Variables"]
    assert render(env["HINDSIGHT_DECAY_QUEUE_URL"]) == f"{{{queue}}}" or "HINDSIGHT_DECAY_QUEUE_URL" in env
    alarms = {a["Properties"]["AlarmName"]: a["Properties"] for a in translated.of_type("AWS::CloudWatch::Alarm").values()}
    alarm = alarms[f"hindsight-{translated.stage}-decay-dlq-not-empty"]
    assert alarm["MetricName"] == "ApproximateNumberOfMessagesVisible" and alarm["Threshold"] == 0
    assert alarm["Dimensions"] == [{"Name": "QueueName", "Value": {"Fn::GetAtt": [dlq, "QueueName"]}}]
    assert alarm["AlarmActions"]


def test_the_index_is_created_with_the_stages_shards_on_a_domain_and_none_on_serverless(template):
    """The custom resource creates the index with the functions' settings: a managed domain's
    shards and replicas are the stage's (HINDSIGHT_OPENSEARCH_SHARDS); Serverless has none."""
    cfg = load_stage(template.stage)
    for fn in template.of_type("AWS::Serverless::Function").values():
        env = fn["Properties"]["Environment"]["Variables"]
        if cfg.opensearch == "domain" or template.stage == "cidomain":
            assert env["HINDSIGHT_OPENSEARCH_SHARDS"] == str(cfg.opensearch_shards)
        else:
            assert "HINDSIGHT_OPENSEARCH_SHARDS" not in env
