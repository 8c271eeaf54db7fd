"""One CDK synthesis per test session (two stacks: the prod stage as stages.json gives it, on
Serverless OpenSearch, and a stage of the defaults on a managed domain).

The synthesis runs ``infra/synth.py`` in a subprocess (aws-cdk-lib starts a Node.js jsii runtime;
it stays out of the test process), with the stub package: offline, no AWS credentials. It takes
about 20-35 s; every test of this folder reads the same templates.

The templates carry the SAM transform (Chalice's functions are AWS::Serverless::Function). The
``translated`` fixture expands them offline with aws-sam-translator, as CloudFormation will at
deploy time, so the tests see the real event source mapping, Lambda functions and permissions.
"""
from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
SYNTH = ROOT / "infra" / "synth.py"
SERVERLESS_STAGE, DOMAIN_STAGE = "prod", "cidomain"  # prod: the template the issue asks about
ALARM_EMAIL = "alarms@example.com"


def render(value: Any) -> str:
    """An intrinsic-function expression as readable text (``{Res.Attr}`` for GetAtt, ``{Res}`` for Ref)."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and len(value) == 1:
        (fn, arg), = value.items()
        if fn == "Ref":
            return "{%s}" % arg
        if fn == "Fn::GetAtt":
            return "{%s}" % ".".join(arg if isinstance(arg, list) else arg.split("."))
        if fn == "Fn::Join":
            sep, parts = arg
            return sep.join(render(p) for p in parts)
        if fn == "Fn::Sub":
            return arg if isinstance(arg, str) else arg[0]
    return json.dumps(value, sort_keys=True)


class Template:
    """A synthesized template with a few lookups."""

    def __init__(self, doc: dict[str, Any], stage: str) -> None:
        self.doc = doc
        self.stage = stage
        self.resources: dict[str, dict[str, Any]] = doc["Resources"]

    def of_type(self, type_: str) -> dict[str, dict[str, Any]]:
        return {k: r for k, r in self.resources.items() if r["Type"] == type_}

    def one(self, type_: str) -> tuple[str, dict[str, Any]]:
        found = self.of_type(type_)
        assert len(found) == 1, f"expected one {type_}, found {sorted(found)}"
        return next(iter(found.items()))

    def logical_id(self, prefix: str, type_: str) -> str:
        """The logical id of the one resource of ``type_`` whose id starts with ``prefix`` (CDK adds a hash)."""
        ids = [k for k in self.of_type(type_) if k.startswith(prefix)]
        assert len(ids) == 1, f"{prefix}*: {ids}"
        return ids[0]


def _skip_reason() -> str | None:
    try:
        import aws_cdk  # noqa: F401
        import chalice.cdk  # noqa: F401
    except ImportError as exc:
        return f"CDK synthesis needs chalice[cdkv2] (aws-cdk-lib, constructs): {exc}"
    if shutil.which("node") is None:
        return "CDK synthesis needs Node.js (the jsii runtime of aws-cdk-lib)"
    return None


def synthesize(out: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "CDK_"))}  # no credentials, no CLI context
    proc = subprocess.run(
        [sys.executable, str(SYNTH), "--package", "stub", "--out", str(out),
         "--stack", f"{SERVERLESS_STAGE}:serverless", "--stack", f"{DOMAIN_STAGE}:domain",
         "--set", f"alarm_email={ALARM_EMAIL}"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=900,
    )
    assert proc.returncode == 0, f"synthesis failed:\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"


@pytest.fixture(scope="session")
def cdk_out(tmp_path_factory) -> Path:
    """The assembly, synthesized once per session; ``HINDSIGHT_INFRA_CDK_OUT=dir`` reuses one made
    by ``python -c 'from tests.infra.conftest import *; synthesize(Path("dir"))'`` (while changing
    tests only: a change to infra/ or app.py needs a new synthesis)."""
    reason = _skip_reason()
    if reason:
        pytest.skip(reason)
    reuse = os.environ.get("HINDSIGHT_INFRA_CDK_OUT")
    if reuse:
        return Path(reuse)
    out = tmp_path_factory.mktemp("cdk") / "cdk.out"
    synthesize(out)
    return out


def _load(cdk_out: Path, stage: str) -> Template:
    return Template(json.loads((cdk_out / f"hindsight-{stage}.template.json").read_text()), stage)


@pytest.fixture(scope="session")
def serverless(cdk_out) -> Template:
    return _load(cdk_out, SERVERLESS_STAGE)


@pytest.fixture(scope="session")
def domain(cdk_out) -> Template:
    return _load(cdk_out, DOMAIN_STAGE)


@pytest.fixture(scope="session", params=[SERVERLESS_STAGE, DOMAIN_STAGE])
def template(request, cdk_out) -> Template:
    return _load(cdk_out, request.param)


def sam_translate(template: Template) -> Template:
    samtranslator = pytest.importorskip("samtranslator", reason="aws-sam-translator expands the SAM transform offline")
    from samtranslator.translator.transform import transform

    class _NoManagedPolicies:  # the functions name their roles: SAM looks up no managed policy
        def load(self) -> dict[str, str]:
            return {}

    params = {"AWS::Region": "us-east-1", "AWS::Partition": "aws", "AWS::AccountId": "123456789012"}
    previous = os.environ.get("AWS_DEFAULT_REGION")
    os.environ["AWS_DEFAULT_REGION"] = "us-east-1"  # the translator asks boto3 for a region
    try:
        doc = transform(copy.deepcopy(template.doc), params, _NoManagedPolicies())
    finally:
        if previous is None:
            os.environ.pop("AWS_DEFAULT_REGION", None)
        else:
            os.environ["AWS_DEFAULT_REGION"] = previous
    assert samtranslator  # imported for the skip above
    return Template(doc, template.stage)


@pytest.fixture(scope="session")
def translated_serverless(serverless) -> Template:
    return sam_translate(serverless)


@pytest.fixture(scope="session")
def translated(template) -> Template:
    return sam_translate(template)
