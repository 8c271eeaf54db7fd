"""One role per function, each allowing what its function's code does and not much more.

Each function's code runs here on moto (the real DynamoDB stores, the in-memory index): the API's
routes, the authorizer, the review worker's stream batch, the sweeper and the decay. Every
DynamoDB call it makes is recorded, and must be one its role in the synthesized template allows
(an action short of it fails the first request in the cloud, where nothing here could see it).
The roles must not allow tables their function never touches.
"""
from __future__ import annotations

import json
import re
from collections import defaultdict
from datetime import datetime, timedelta, timezone

import pytest

from tests.infra.conftest import SERVERLESS_STAGE, Template, render
from tests.infra.test_template import actions_on, role_statements

pytest.importorskip("moto")
pytest.importorskip("samtranslator")

PREFIX = f"hindsight-{SERVERLESS_STAGE}-"
ADMIN = "admin-key-of-the-moto-run"
# batch and transaction members, by the item action IAM authorizes each with
TRANSACT = {"Put": "PutItem", "Update": "UpdateItem", "Delete": "DeleteItem", "ConditionCheck": "ConditionCheckItem"}
ROLE = {"api_handler": "ApiHandlerRole", "api_key_authorizer": "ApiKeyAuthorizerRole", "review_worker": "ReviewWorkerRole",
        "review_sweeper": "ReviewSweeperRole", "decay_schedule": "DecayScheduleRole", "tenant_jobs": "TenantJobsRole",
        "decay_worker": "DecayWorkerRole"}


def _camel(table: str) -> str:
    return "".join(p.capitalize() for p in table.split("-"))


def calls_of(operation: str, params: dict) -> list[tuple[str, str]]:
    """(IAM action, resource as the template renders it) of one DynamoDB request."""
    def resource(table: str, index: str | None = None) -> str:
        arn = "{%sTable.Arn}" % _camel(table.removeprefix(PREFIX))
        return f"{arn}/index/*" if index else arn

    if operation == "TransactWriteItems":
        out = []
        for item in params["TransactItems"]:
            ((kind, spec),) = item.items()
            out.append((f"dynamodb:{TRANSACT[kind]}", resource(spec["TableName"])))
        return out
    if operation in ("BatchGetItem", "BatchWriteItem"):
        return [(f"dynamodb:{operation}", resource(t)) for t in params["RequestItems"]]
    return [(f"dynamodb:{operation}", resource(params["TableName"], params.get("IndexName")))]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """{function: {(action, resource)}} of a run of every function on moto."""
    import boto3
    import moto

    from chalicelib import container, lambda_handlers
    from chalicelib.settings import Settings
    from devtools.gateway_client import GatewayClient
    from tests.support.container import installed
    from tests.support.fakes import FakeClock, InMemoryVectorIndex

    mp = pytest.MonkeyPatch()
    for key, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1",
                       "AWS_ACCOUNT_ID_ENDPOINT_MODE": "disabled"}.items():
        mp.setenv(key, value)
    calls: dict[str, set] = defaultdict(set)
    current = ["setup"]
    try:
        with moto.mock_aws():
            sqs = boto3.client("sqs", region_name="us-east-1")
            decay_queue = sqs.create_queue(QueueName=PREFIX + "decay")["QueueUrl"]
            settings = Settings(backend="aws", table_prefix=PREFIX, create_tables=True, embedder="hash", aws_region="us-east-1",
                                admin_key=ADMIN, idempotency_table=PREFIX + "idempotency", rate_limit_per_second=1000,
                                data_dir=str(tmp_path_factory.mktemp("unused")), export_bucket="exports-of-the-moto-run",
                                decay_queue_url=decay_queue)
            boto3.client("s3", region_name="us-east-1").create_bucket(Bucket="exports-of-the-moto-run")
            boto3.client("dynamodb", region_name="us-east-1").create_table(
                TableName=PREFIX + "idempotency", BillingMode="PAY_PER_REQUEST",
                KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
                AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}])
            deps = container.build_aws(settings)
            deps.index = InMemoryVectorIndex(deps.embedder.dim)
            client = deps.queue.tables.connection.client

            def record(model, params, **kwargs) -> None:
                calls[current[0]].update(calls_of(model.name, params))

            client.meta.events.register("before-parameter-build.dynamodb", record)
            lambda_handlers._idempotent_runner.cache_clear()
            lambda_handlers._vectors.cache_clear()
            with installed(deps, settings), GatewayClient(__import__("app").app) as api:
                def call(method: str, path: str, key: str | None, body=None):
                    headers = {"Content-Type": "application/json"} | ({"Authorization": f"Bearer {key}"} if key else {})
                    resp = getattr(api.http, method.lower())(path, headers=headers, body=json.dumps(body) if body is not None else None)
                    assert resp.status_code < 300, (method, path, resp.status_code, resp.body)
                    return json.loads(resp.body) if resp.body else None

                weather = [
                    {"event_id": "e1", "type": "user_input", "content": {"text": "Will it rain tomorrow?"}},
                    {"event_id": "e2", "type": "tool_call", "content": {"tool": "get_weather", "params": {"date": "tomorrow"},
                                                                         "status": "error", "error": "MissingParameter: city"}},
                    {"event_id": "e3", "type": "tool_call", "content": {"tool": "ask_user", "params": {"question": "Which city?"},
                                                                         "result": "Lyon"}},
                    {"event_id": "e4", "type": "tool_call", "content": {"tool": "get_weather",
                                                                         "params": {"date": "tomorrow", "city": "Lyon"},
                                                                         "status": "ok", "result": "rain"}},
                ]

                def trajectory(tid: str, recall_id: str | None = None) -> None:
                    call("POST", "/v1/trajectories", key, {"trajectory_id": tid, "agent_id": "a", "task_type": "query",
                                                           "goal": "Will it rain tomorrow in my city?",
                                                           "tools": ["get_weather", "ask_user"]})
                    served = [{"event_id": "r0", "type": "recall", "content": {"recall_id": recall_id}}] if recall_id else []
                    call("POST", f"/v1/trajectories/{tid}/events", key, {"events": served + weather})
                    call("POST", f"/v1/trajectories/{tid}/finalize", key, {"outcome": "success"})

                current[0] = "api_handler"
                created = call("POST", "/v1/tenants", ADMIN, {"name": "acme"})
                key, tenant_id = created["api_key"], created["tenant_id"]
                call("GET", "/v1/tenants", ADMIN)
                call("POST", f"/v1/tenants/{tenant_id}/keys", ADMIN, {"revoke_old": False})
                call("POST", "/v1/experiences", key, {"experience_id": "x1", "lesson": "Ask the city before the weather.",
                                                      "situation": "a weather question", "tools": ["get_weather"]})
                recall = call("POST", "/v1/recall", key, {"query": "Will it rain tomorrow?"})
                trajectory("tr1", recall["recall_id"])
                call("GET", "/v1/trajectories/tr1", key)
                call("GET", "/v1/trajectories/tr1/events", key)
                call("POST", "/v1/advise", key, {"tool": "get_weather", "params": {"date": "tomorrow"}})
                call("GET", "/v1/experiences", key)
                call("GET", "/v1/experiences/x1", key)
                call("POST", "/v1/experiences/x1/feedback", key, {"signal": "adopted"})
                call("GET", "/v1/stats", key)
                call("POST", "/v1/maintenance/reindex", key)
                call("POST", "/v1/maintenance/decay", ADMIN, {"tenant_id": tenant_id, "dry_run": True})
                call("GET", "/v1/maintenance/failed-reviews", ADMIN)
                call("POST", "/v1/maintenance/redrive", ADMIN, {})

                gone = call("POST", "/v1/tenants", ADMIN, {"name": "leaving"})  # exported, then deleted
                call("POST", "/v1/experiences", gone["api_key"], {"experience_id": "x9", "lesson": "Pack before you leave.",
                                                                  "situation": "leaving"})
                call("POST", "/v1/trajectories", gone["api_key"], {"trajectory_id": "tr9", "agent_id": "a", "goal": "leave"})
                call("POST", "/v1/trajectories/tr9/events", gone["api_key"], {"events": weather})
                export = call("POST", f"/v1/tenants/{gone['tenant_id']}/exports", ADMIN)
                current[0] = "tenant_jobs"
                assert lambda_handlers.tenant_jobs()["finished"] == 1
                current[0] = "api_handler"
                call("GET", f"/v1/tenants/{gone['tenant_id']}/exports/{export['export_id']}", ADMIN)
                part = api.http.get(f"/v1/tenants/{gone['tenant_id']}/exports/{export['export_id']}/data?part=1",
                                    headers={"Authorization": f"Bearer {ADMIN}"})
                assert part.status_code == 200 and b"Pack before you leave." in part.body  # JSON Lines, read from S3
                call("DELETE", f"/v1/tenants/{gone['tenant_id']}", ADMIN)
                current[0] = "tenant_jobs"
                assert lambda_handlers.tenant_jobs()["finished"] == 1
                current[0] = "api_handler"
                assert call("GET", f"/v1/tenants/{gone['tenant_id']}/deletion", ADMIN)["state"] == "done"

                current[0] = "api_key_authorizer"
                event = {"type": "TOKEN", "authorizationToken": f"Bearer {key}",
                         "methodArn": "arn:aws:execute-api:us-east-1:1:abc/api/GET/v1/stats"}
                assert api.lambda_.invoke("api_key_authorizer", event).payload["principalId"] == tenant_id
                event["authorizationToken"] = "Bearer hs_unknown"
                api.lambda_.invoke("api_key_authorizer", event)

                current[0] = "review_worker"  # tr1's review: lessons written, the recalled lesson credited
                record_event = {"Records": [{"eventID": "ev-1", "eventName": "INSERT", "dynamodb": {
                    "SequenceNumber": "1", "NewImage": {"state": {"S": "pending"}}}}]}
                assert lambda_handlers.review_stream(record_event, None) == {"batchItemFailures": []}

                current[0] = "api_handler"
                assert call("GET", "/v1/trajectories/tr1", key)["status"] == "reviewed"
                trajectory("tr2", call("POST", "/v1/recall", key, {"query": "Will it rain tomorrow?"})["recall_id"])
                current[0] = "review_sweeper"  # tr2's job, run by the sweeper (its stream record "lost")
                assert lambda_handlers.sweep()["ran"] == 1

                current[0] = "decay_schedule"  # a year on: the pass is fanned out, one message per tenant
                deps.clock = FakeClock(datetime.now(timezone.utc) + timedelta(days=365))
                assert lambda_handlers.decay()["enqueued"] == 1
                current[0] = "decay_worker"  # the tenant's share: its lessons are archived
                messages = sqs.receive_message(QueueUrl=decay_queue, MaxNumberOfMessages=10)["Messages"]
                records = [{"messageId": m["MessageId"], "body": m["Body"]} for m in messages]
                answer = lambda_handlers.decay_worker({"Records": records}, None)
                assert answer["batchItemFailures"] == [] and answer["archived"] >= 1
    finally:
        mp.undo()
        lambda_handlers._idempotent_runner.cache_clear()
        lambda_handlers._vectors.cache_clear()
    return calls


@pytest.mark.parametrize("function", sorted(ROLE))
def test_every_dynamodb_call_of_a_function_is_allowed_by_its_own_role(function, recorded, translated_serverless):
    granted = actions_on(role_statements(translated_serverless, ROLE[function]))
    missing = sorted((action, res) for action, res in recorded[function] if res not in granted.get(action, set()))
    assert not missing, f"{function} calls what its role does not allow: {missing}"


@pytest.mark.parametrize("function", sorted(ROLE))
def test_no_role_reaches_a_table_its_function_never_touches(function, recorded, translated_serverless):
    from infra.hindsight_infra.access import FUNCTIONS

    granted = actions_on(role_statements(translated_serverless, ROLE[function]))
    tables = {re.sub(r"/index/\*$", "", r) for action, rs in granted.items() if action.startswith("dynamodb:")
              for r in rs if "/stream/" not in r}
    touched = {re.sub(r"/index/\*$", "", r) for _, r in recorded[function]}
    assert tables == touched, (function, "granted, never touched:", sorted(tables - touched))
    declared = {"{%sTable.Arn}" % _camel(t) for t in FUNCTIONS[function].tables}
    assert tables == declared | ({"{IdempotencyTable.Arn}"} if FUNCTIONS[function].review_stream else set())


def test_the_authorizer_looks_keys_up_and_does_nothing_else(recorded, translated_serverless):
    assert recorded["api_key_authorizer"] == {("dynamodb:GetItem", "{TenantsTable.Arn}")}
    granted = actions_on(role_statements(translated_serverless, "ApiKeyAuthorizerRole"))
    dynamo = {a: r for a, r in granted.items() if a.startswith("dynamodb:")}
    assert dynamo == {"dynamodb:GetItem": {"{TenantsTable.Arn}", "{TenantsTable.Arn}/index/*"}}
    others = set(granted) - set(dynamo)
    assert others <= {"logs:CreateLogStream", "logs:PutLogEvents", "xray:PutTraceSegments", "xray:PutTelemetryRecords"}, others


def test_the_index_is_made_at_deploy_time_by_a_custom_resource(translated_serverless):
    t: Template = translated_serverless
    (logical_id, index), = t.of_type("Custom::OpenSearchIndex").items()
    p = index["Properties"]
    assert p["ServiceToken"] == {"Fn::GetAtt": ["OpensearchIndexSetup", "Arn"]}
    assert p["IndexName"] == "hindsight-experiences" and p["Dimension"] == "512"
    # the digest of the mapping the functions' settings make: a new field reaches the index as an Update
    from infra.hindsight_infra.stack import index_fingerprint

    env = t.resources["APIHandler"]["Properties"]["Environment"]["Variables"]
    assert p["Fingerprint"] == index_fingerprint(env, 512)
    assert index_fingerprint({**env, "HINDSIGHT_LEXICAL_K1": "0.9"}, 512) != p["Fingerprint"]
    # created once the setup role may reach the index; the API and the worker wait for it
    assert "CollectionDataAccessPolicy" in index["DependsOn"]
    assert t.logical_id("OpensearchIndexSetupPolicy", "AWS::IAM::Policy") in index["DependsOn"]
    for fn in ("APIHandler", "ReviewWorker"):
        assert logical_id in t.resources[fn]["DependsOn"], fn
    setup_env = t.resources["OpensearchIndexSetup"]["Properties"]
    assert setup_env["Handler"] == "chalicelib.index_setup_lambda.handler"
    assert render(setup_env["Role"]).startswith("{OpensearchIndexSetupRole")
