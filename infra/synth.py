#!/usr/bin/env python3
"""Synthesize hindsight's CloudFormation template(s) with CDK v2 -- offline, no AWS credentials.

    .venv/bin/python infra/synth.py                          # stage dev -> infra/cdk.out (stub package)
    .venv/bin/python infra/synth.py --stack prod --stack dev:domain --set alarm_email=ops@example.com
    .venv/bin/python infra/synth.py --stack dev --package full   # the deployable assembly

``--stack STAGE[:serverless|domain]`` (repeatable) picks the stage (stages.json) and optionally its
OpenSearch flavour; ``--set KEY=VALUE`` overrides any stage parameter for every stack.
``--package stub`` (default) packages the app without its dependencies: no network, a template
identical but for the code assets, and a rule that stops CloudFormation from deploying it.
``--package full`` builds the real Lambda package (pip fetches manylinux wheels the first time).

Under the ``cdk`` CLI (``cdk.json`` runs this file) the same choices come from context:
``-c stage=dev[,prod] -c opensearch=domain -c package=full -c alarm_email=...``; the CLI's default
package is ``full``, since it deploys.

Needs Node.js (the jsii runtime of aws-cdk-lib), not the ``cdk`` CLI.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from dataclasses import fields
from pathlib import Path

INFRA = Path(__file__).resolve().parent
PROJECT = INFRA.parent
BUILD = INFRA / ".build"
DEFAULT_OUT = INFRA / "cdk.out"
CONTEXT_KEYS_NOT_PARAMETERS = {"stage", "opensearch", "package"}


def _node_major() -> str | None:
    try:
        out = subprocess.run(["node", "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return out.lstrip("v").split(".")[0] or None


def _prepare_environment() -> None:
    major = _node_major()
    if major is None:
        sys.exit("synth.py: Node.js is required (aws-cdk-lib runs on the jsii runtime); `node --version` failed")
    # jsii prints a page-wide banner on a Node release past its end of life; the synthesis works
    for var in ("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION",
                "JSII_SILENCE_WARNING_UNTESTED_NODE_VERSION"):
        os.environ.setdefault(var, major)
    # Chalice's packager resolves service principals for a region; the template stays region-agnostic
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    for path in (str(PROJECT), str(INFRA)):
        if path not in sys.path:
            sys.path.insert(0, path)


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stack", action="append", metavar="STAGE[:OPENSEARCH]",
                        help="a stage to synthesize, optionally with serverless|domain (repeatable; default: dev)")
    parser.add_argument("--package", choices=("stub", "full"), default=os.environ.get("HINDSIGHT_INFRA_PACKAGE", "stub"))
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"cloud assembly directory (default {DEFAULT_OUT})")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override a stage parameter")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    started = time.monotonic()
    _prepare_environment()
    under_cli = "CDK_OUTDIR" in os.environ  # the cdk CLI runs us and owns the output directory

    import aws_cdk as cdk
    from hindsight_infra.config import StageConfig, load_stage
    from hindsight_infra.stack import HindsightStack

    if under_cli:
        app = cdk.App()
        ctx = lambda key, default=None: app.node.try_get_context(key) or default  # noqa: E731
        stages = [s.strip() for s in str(ctx("stage", "dev")).split(",") if s.strip()]
        specs = [(s, ctx("opensearch")) for s in stages]
        package = ctx("package", "full")
        overrides = {}
        for key in sorted(f.name for f in fields(StageConfig) if f.name != "stage"):
            value = app.node.try_get_context(key)
            if value is not None:
                overrides[key] = value
        out_dir = Path(os.environ["CDK_OUTDIR"])
    else:
        args = _parse_args(argv)
        specs = []
        for spec in args.stack or ["dev"]:
            stage, _, flavour = spec.partition(":")
            specs.append((stage, flavour or None))
        package = args.package
        overrides = {}
        for item in args.set:
            key, sep, value = item.partition("=")
            if not sep:
                sys.exit(f"synth.py: --set wants KEY=VALUE, got {item!r}")
            overrides[key] = value
        out_dir = args.out.resolve()
        if out_dir.exists():
            shutil.rmtree(out_dir)
        app = cdk.App(outdir=str(out_dir))

    # chalice.cdk writes its packages under the working directory's chalice.out/: keep them in .build
    if (BUILD / "chalice.out").exists():
        shutil.rmtree(BUILD / "chalice.out")
    BUILD.mkdir(parents=True, exist_ok=True)
    os.chdir(BUILD)

    stacks = []
    for stage, flavour in specs:
        stage_overrides = dict(overrides)
        if flavour:
            stage_overrides["opensearch"] = flavour
        cfg = load_stage(stage, stage_overrides)
        stacks.append(HindsightStack(app, cfg.resource_name, stack_name=cfg.resource_name, cfg=cfg,
                                     project_dir=PROJECT, build_dir=BUILD, package=package))
    app.synth()
    elapsed = time.monotonic() - started
    for stack in stacks:
        print(f"synthesized {stack.stack_name} ({stack.cfg.opensearch}, {package} package): "
              f"{out_dir / (stack.artifact_id + '.template.json')}", file=sys.stderr)
    print(f"synthesis took {elapsed:.1f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
