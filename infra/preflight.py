#!/usr/bin/env python3
"""Before ``cdk deploy``: what the account must give a stage that the template cannot create.

    .venv/bin/python infra/synth.py --stack prod --package full   # the template to check
    .venv/bin/python infra/preflight.py --stack prod               # = make preflight STAGE=prod

With the credentials and region that will deploy, it checks:

* **Lambda concurrency.** Lambda keeps 100 of the account's concurrency unreserved; the functions'
  reserved concurrency (the review worker's) must fit above that. A new account's quota is 10,
  which no reservation fits: the deployment would fail on the function, after the tables.
* **The OpenAI-compatible API key's secret** the functions are given exists, with a current value.
* **API Gateway's logging role**, when the template does not create it (``apigateway_logging_role:
  false``): the account must have one, or the stage with access logs is refused.

Each failure says how to fix it; the exit status is 1 if any check failed. Read-only: it calls
``lambda:GetAccountSettings``, ``lambda:GetFunctionConcurrency``, ``secretsmanager:DescribeSecret``
and ``apigateway:GET`` on the account.
"""
from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

INFRA = Path(__file__).resolve().parent
UNRESERVED_MINIMUM = 100  # Lambda's rule: what reservations must leave to the account's other functions


@dataclass(frozen=True)
class Finding:
    check: str
    ok: bool
    detail: str


def template_needs(template: dict[str, Any]) -> dict[str, Any]:
    """What a synthesized template (before the SAM transform) asks of the account."""
    functions = [r["Properties"] for r in template["Resources"].values()
                 if r["Type"] in ("AWS::Serverless::Function", "AWS::Lambda::Function")]
    reserved = {p["FunctionName"]: int(p["ReservedConcurrentExecutions"]) for p in functions
                if p.get("ReservedConcurrentExecutions") is not None}
    secrets = {p.get("Environment", {}).get("Variables", {}).get("HINDSIGHT_OPENAI_API_KEY_SECRET") for p in functions}
    secrets.discard(None)
    creates_logging_role = any(r["Type"] == "AWS::ApiGateway::Account" for r in template["Resources"].values())
    return {"reserved": reserved, "secrets": sorted(secrets), "creates_logging_role": creates_logging_role}


def check_concurrency(account: dict[str, Any], reserved: dict[str, int], already: dict[str, int]) -> Finding:
    """``account``: Lambda's GetAccountSettings answer; ``already``: what the stage's functions
    reserve now (an update gives theirs back before taking the new values)."""
    limit = account["AccountLimit"]["ConcurrentExecutions"]
    unreserved = account["AccountLimit"]["UnreservedConcurrentExecutions"] + sum(already.values())
    wanted = sum(reserved.values())
    left = unreserved - wanted
    if left >= UNRESERVED_MINIMUM:
        return Finding("lambda concurrency", True, f"quota {limit}; the stage reserves {wanted}, {left} stay unreserved")
    return Finding(
        "lambda concurrency", False,
        f"quota {limit}, {unreserved} unreserved: reserving {wanted} ({', '.join(f'{k} {v}' for k, v in sorted(reserved.items()))}) "
        f"would leave {left}, under the {UNRESERVED_MINIMUM} Lambda keeps. Ask for more (Service Quotas, Lambda, "
        "'Concurrent executions', L-B99A9384) or lower review_worker_reserved_concurrency in infra/stages.json "
        "(null: no reservation)",
    )


def check_secret(describe: dict[str, Any] | None, name: str) -> Finding:
    """``describe``: Secrets Manager's DescribeSecret answer, None when there is no such secret."""
    fix = f"aws secretsmanager create-secret --name {name} --secret-string \"$OPENAI_API_KEY\""
    if describe is None:
        return Finding("openai secret", False, f"no secret {name}: {fix}")
    if describe.get("DeletedDate"):
        return Finding("openai secret", False, f"{name} is scheduled for deletion: aws secretsmanager restore-secret --secret-id {name}")
    if not any("AWSCURRENT" in stages for stages in (describe.get("VersionIdsToStages") or {}).values()):
        return Finding("openai secret", False, f"{name} has no current value: aws secretsmanager put-secret-value "
                       f"--secret-id {name} --secret-string \"$OPENAI_API_KEY\"")
    return Finding("openai secret", True, f"{name} exists with a current value")


def check_logging_role(creates: bool, account: dict[str, Any] | None) -> Finding:
    if creates:
        return Finding("api gateway logging role", True, "the stage sets the account's role (apigateway_logging_role)")
    if account and account.get("cloudwatchRoleArn"):
        return Finding("api gateway logging role", True, f"the account logs through {account['cloudwatchRoleArn']}")
    return Finding("api gateway logging role", False, "the account has no API Gateway CloudWatch role and the stage does not "
                   "create one: set apigateway_logging_role to true in infra/stages.json, or set the account's role")


def run_checks(template: dict[str, Any], lambda_client: Any, secrets_client: Any, apigateway_client: Any) -> list[Finding]:
    needs = template_needs(template)
    already = {}
    for name in needs["reserved"]:
        try:
            already[name] = int(lambda_client.get_function_concurrency(FunctionName=name).get("ReservedConcurrentExecutions") or 0)
        except lambda_client.exceptions.ResourceNotFoundException:
            already[name] = 0
    findings = [check_concurrency(lambda_client.get_account_settings(), needs["reserved"], already)]
    for name in needs["secrets"]:
        try:
            described = secrets_client.describe_secret(SecretId=name)
        except secrets_client.exceptions.ResourceNotFoundException:
            described = None
        findings.append(check_secret(described, name))
    account = None if needs["creates_logging_role"] else apigateway_client.get_account()
    findings.append(check_logging_role(needs["creates_logging_role"], account))
    return findings


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stack", default="dev", help="the stage (its template is infra/cdk.out/hindsight-<stage>.template.json)")
    parser.add_argument("--template", type=Path, help="a synthesized template (default: the stage's in infra/cdk.out)")
    parser.add_argument("--region", help="default: the deploying credentials' region")
    args = parser.parse_args(argv)
    path = args.template or INFRA / "cdk.out" / f"hindsight-{args.stack}.template.json"
    if not path.exists():
        print(f"preflight: {path} does not exist; synthesize it first (infra/synth.py --stack {args.stack})", file=sys.stderr)
        return 2
    import boto3

    session = boto3.session.Session(region_name=args.region)
    findings = run_checks(json.loads(path.read_text()), session.client("lambda"), session.client("secretsmanager"),
                          session.client("apigateway"))
    for f in findings:
        print(f"{'ok  ' if f.ok else 'FAIL'}  {f.check}: {f.detail}")
    return 0 if all(f.ok for f in findings) else 1


if __name__ == "__main__":
    sys.exit(main())
