"""infra/preflight.py: the account checks run before a deployment, on the synthesized template,
against moto (Secrets Manager, API Gateway) and a Lambda client that answers as a new account's."""
from __future__ import annotations

import json

import pytest

from infra import preflight
from tests.infra.conftest import Template

boto3 = pytest.importorskip("boto3")
moto = pytest.importorskip("moto")


class LambdaAccount:
    """Lambda's GetAccountSettings / GetFunctionConcurrency, which moto does not serve."""

    class exceptions:  # noqa: N801 -- botocore's shape
        class ResourceNotFoundException(Exception):
            pass

    def __init__(self, limit: int, reserved_elsewhere: int = 0, reserved: dict[str, int] | None = None) -> None:
        self.limit, self.reserved = limit, dict(reserved or {})
        self.unreserved = limit - reserved_elsewhere - sum(self.reserved.values())

    def get_account_settings(self) -> dict:
        return {"AccountLimit": {"ConcurrentExecutions": self.limit, "UnreservedConcurrentExecutions": self.unreserved}}

    def get_function_concurrency(self, FunctionName: str) -> dict:  # noqa: N803
        if FunctionName not in self.reserved:
            raise self.exceptions.ResourceNotFoundException(FunctionName)
        return {"ReservedConcurrentExecutions": self.reserved[FunctionName]}


@pytest.fixture()
def aws(monkeypatch):
    for key, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1"}.items():
        monkeypatch.setenv(key, value)
    with moto.mock_aws():
        yield boto3.client("secretsmanager"), boto3.client("apigateway")


def run(template: Template, lambda_client, aws) -> dict[str, preflight.Finding]:
    secrets, apigateway = aws
    return {f.check: f for f in preflight.run_checks(template.doc, lambda_client, secrets, apigateway)}


def test_the_template_says_what_the_stage_reserves_and_which_secret_it_reads(serverless):
    needs = preflight.template_needs(serverless.doc)
    assert needs == {"reserved": {"hindsight-prod-review_worker": 8}, "secrets": ["hindsight/prod/openai-api-key"],
                     "creates_logging_role": True}


def test_a_new_accounts_quota_and_a_missing_secret_fail_with_their_fix(serverless, aws):
    found = run(serverless, LambdaAccount(limit=10), aws)
    assert not found["lambda concurrency"].ok and "L-B99A9384" in found["lambda concurrency"].detail
    assert not found["openai secret"].ok and "create-secret --name hindsight/prod/openai-api-key" in found["openai secret"].detail
    assert found["api gateway logging role"].ok


def test_an_account_with_room_and_the_secret_passes(serverless, aws):
    aws[0].create_secret(Name="hindsight/prod/openai-api-key", SecretString="sk-test")
    found = run(serverless, LambdaAccount(limit=1000, reserved_elsewhere=800), aws)
    assert all(f.ok for f in found.values()), found
    assert "192 stay unreserved" in found["lambda concurrency"].detail


def test_an_update_counts_what_the_stage_reserves_already(serverless, aws):
    aws[0].create_secret(Name="hindsight/prod/openai-api-key", SecretString="sk-test")
    # 1000 - 892 elsewhere = 108 once the worker gives its 8 back; it takes them again: 100 left, the rule's floor
    account = LambdaAccount(limit=1000, reserved_elsewhere=892, reserved={"hindsight-prod-review_worker": 8})
    found = run(serverless, account, aws)["lambda concurrency"]
    assert found.ok and "100 stay unreserved" in found.detail
    tighter = LambdaAccount(limit=1000, reserved_elsewhere=893, reserved={"hindsight-prod-review_worker": 8})
    assert not run(serverless, tighter, aws)["lambda concurrency"].ok


def test_a_secret_without_a_value_and_an_account_without_a_logging_role_fail(serverless, aws):
    secrets, apigateway = aws
    secrets.create_secret(Name="hindsight/prod/openai-api-key")  # no value yet
    doc = json.loads(json.dumps(serverless.doc))
    doc["Resources"] = {k: r for k, r in doc["Resources"].items() if r["Type"] != "AWS::ApiGateway::Account"}
    found = {f.check: f for f in preflight.run_checks(doc, LambdaAccount(limit=1000), secrets, apigateway)}
    assert not found["openai secret"].ok and "put-secret-value" in found["openai secret"].detail
    assert not found["api gateway logging role"].ok


def test_the_command_reads_the_stages_template_and_exits_1_on_a_failure(serverless, aws, tmp_path, monkeypatch, capsys):
    path = tmp_path / "hindsight-prod.template.json"
    path.write_text(json.dumps(serverless.doc))
    real = boto3.session.Session.client
    monkeypatch.setattr(boto3.session.Session, "client",
                        lambda self, name, **kw: LambdaAccount(limit=10) if name == "lambda" else real(self, name, **kw))
    assert preflight.main(["--stack", "prod", "--template", str(path), "--region", "us-east-1"]) == 1
    out = capsys.readouterr().out
    assert "FAIL  lambda concurrency" in out and "FAIL  openai secret" in out and "ok    api gateway logging role" in out
    assert preflight.main(["--stack", "nosuch", "--template", str(tmp_path / "missing.json")]) == 2
