"""The requirement files agree: what `make run` installs pins what Lambda runs at the same versions."""
from __future__ import annotations

from pathlib import Path

from infra.hindsight_infra.lambda_package import pinned_requirements

ROOT = Path(__file__).resolve().parents[2]


def test_the_embedded_server_pins_what_lambda_runs_at_the_same_versions():
    lambda_pins = pinned_requirements(ROOT / "requirements.txt")
    for other in ("requirements-local.txt", "requirements-aws.txt", "requirements-sdk.txt", "requirements-dev.txt"):
        pins = pinned_requirements(ROOT / other)
        assert {n: v for n, v in pins.items() if n in lambda_pins} == {n: lambda_pins[n] for n in pins if n in lambda_pins}, other


def test_make_run_installs_no_aws_or_test_tooling():
    # `make run` installs these two files alone: the aws backend and the test tools come with `make test`
    run = pinned_requirements(ROOT / "requirements-local.txt") | pinned_requirements(ROOT / "requirements-sdk.txt")
    assert not {"pynamodb", "opensearch-py", "boto3", "moto", "aws-cdk-lib", "pytest", "schemathesis"} & set(run)
    for name in ("requirements-local.txt", "requirements-sdk.txt"):
        assert not [l for l in (ROOT / name).read_text().splitlines() if l.startswith("-r ")], name
