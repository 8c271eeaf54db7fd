"""The Chalice application inside the CDK stack, packaged one of two ways.

``full``   the real Lambda package: Chalice builds the app zip and a managed layer with
           requirements.txt's dependencies (manylinux wheels, fetched by pip from the package
           index the first time, then cached in .chalice/deployments by the requirements' hash).
           This is what ``cdk deploy`` must ship.
``stub``   the same template without dependencies: Chalice packages a copy of the app whose
           requirements.txt is empty, so nothing is downloaded and synthesis works offline. The
           only difference in the template is the code assets' hashes; the stack carries a rule
           that makes CloudFormation refuse to deploy it (see stack.py).
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any, Callable

from chalice import api
from chalice.cdk import Chalice

from .lambda_package import PACKAGE_MODES, finish_package, missing_from_layer, stage_stub_project

__all__ = ["PACKAGE_MODES", "ChaliceApp", "stage_stub_project"]


class ChaliceApp(Chalice):
    """``chalice.cdk.Chalice`` with the Chalice stage named explicitly.

    The stock construct names the Chalice stage after its CDK scope (the stack's path); here the
    stack may be called anything and the stage is the deployment stage (``dev``, ``prod``...).
    """

    def __init__(self, scope: Any, construct_id: str, *, source_dir: str, chalice_stage: str, stage_config: dict,
                 reshape: Callable[[dict], None] | None = None) -> None:
        """``reshape(sam)``: changes to Chalice's SAM template (a dict, changed in place) before
        the construct reads it (``api_shape``: what CDK's property overrides cannot reach)."""
        self._chalice_stage = chalice_stage
        self._reshape = reshape
        super().__init__(scope, construct_id, source_dir=source_dir, stage_config=stage_config)

    def _package_app(self) -> None:
        # Chalice imports app.py after putting the stage's environment variables in os.environ
        # (app.py reads HINDSIGHT_JOBS_STREAM_ARN at import). Import it afresh for every stack, and
        # leave os.environ as it was: a second stack of the same synthesis must not see the first
        # stack's tokens (CDK would turn them into a cross-stack export).
        saved_env = dict(os.environ)
        sys.modules.pop("app", None)
        try:
            api.package_app(
                project_dir=self.source_dir,
                output_dir=self._sam_package_dir,
                stage=self._chalice_stage,
                chalice_config=self.stage_config,
            )
            finish_package(Path(self._sam_package_dir))  # before the construct makes assets of the zips
            if self._reshape is not None:
                sam_path = Path(self._sam_package_dir) / "sam.json"
                sam = json.loads(sam_path.read_text())
                self._reshape(sam)
                sam_path.write_text(json.dumps(sam, indent=2))
        finally:
            sys.modules.pop("app", None)
            os.environ.clear()
            os.environ.update(saved_env)

    def verify_dependencies(self) -> None:
        """Refuse a full package whose layer lacks a pinned requirement (see ``missing_from_layer``)."""
        missing = missing_from_layer(Path(self._sam_package_dir) / "layer-deployment.zip", Path(self.source_dir) / "requirements.txt")
        if missing:
            raise RuntimeError(
                "the Lambda package lacks " + ", ".join(missing) + ": Chalice found no wheel of them for the Lambda "
                "runtime (python3.11 runs on Amazon Linux 2, glibc 2.26; manylinux_2_27+ wheels do not load there). "
                "Pin a version with a manylinux2014 wheel, or move the project to Python 3.12+ (glibc 2.34)."
            )
