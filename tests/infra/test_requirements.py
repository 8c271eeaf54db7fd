"""The requirement files agree: what `make run` installs pins what Lambda runs at the same versions."""
from __future__ import annotations

from pathlib import Path

from infra.hindsight_infra.lambda_package import pinned_requirements

ROOT = Path(__file__).resolve().parents[2]


def test_the_embedded_server_pins_what_lambda_runs_at_the_same_versions():
    lambda_pins = pinned_requirements(ROOT / "requirements.txt")
    for other in ("requirements/local.txt", "requirements/aws.txt", "requirements/sdk.txt", "requirements/dev.txt"):
        pins = pinned_requirements(ROOT / other)
        assert {n: v for n, v in pins.items() if n in lambda_pins} == {n: lambda_pins[n] for n in pins if n in lambda_pins}, other


def test_make_run_installs_no_aws_or_test_tooling():
    # `make run` installs these two files alone: the aws backend and the test tools come with `make test`
    run = pinned_requirements(ROOT / "requirements/local.txt") | pinned_requirements(ROOT / "requirements/sdk.txt")
    assert not {"pynamodb", "opensearch-py", "boto3", "moto", "aws-cdk-lib", "pytest", "schemathesis"} & set(run)
    for name in ("requirements/local.txt", "requirements/sdk.txt"):
        assert not [l for l in (ROOT / name).read_text().splitlines() if l.startswith("-r ")], name


# What a newcomer's first hour imports: the embedded server as `make run` starts it (the model
# loaded, the app, the worker, the LLM reviewer and its client), the CLI, the MCP server and the
# example's OpenAI client.
FIRST_HOUR = """
import importlib.metadata as md, json, os, sys, tempfile
os.environ.update(HINDSIGHT_DATA_DIR=tempfile.mkdtemp(), HINDSIGHT_EMBEDDER="minilm",
                  HINDSIGHT_OPENAI_BASE_URL="http://127.0.0.1:9/v1")
from chalicelib.container import get_deps
get_deps().embedder.embed(["warm up"])
assert type(get_deps().reviewer).__name__ == "LLMReviewer" and get_deps().reviewer.client.timeout
import app, local.server, local.worker, local.ingest, local.review, waitress
import hindsight_xp.cli, hindsight_xp.mcp_server, hindsight_xp.testing, openai
owners = md.packages_distributions()
loaded = {name.split(".")[0] for name in sys.modules}
found = {d for top in loaded for d in owners.get(top, []) if len(owners[top]) == 1}
# a namespace package (opentelemetry) has many owners: the ones whose files were loaded count
files = {os.path.realpath(m.__file__) for m in list(sys.modules.values()) if getattr(m, "__file__", None)}
for dist in {d for top in loaded for d in owners.get(top, []) if len(owners[top]) > 1}:
    if any(os.path.realpath(f.locate()) in files for f in md.distribution(dist).files or ()):
        found.add(dist)
print(json.dumps(sorted(found)))
"""


def _closure(names: set[str]) -> set[str]:
    """The distributions ``names`` need, following installed metadata and the extras asked for."""
    import importlib.metadata as md

    from packaging.requirements import Requirement

    seen: set[tuple[str, str]] = set()
    todo = [(n, "") for n in names]
    while todo:
        name, extra = todo.pop()
        if (_norm(name), extra) in seen:
            continue
        seen.add((_norm(name), extra))
        for spec in md.requires(name) or ():
            req = Requirement(spec)
            if req.marker is None or req.marker.evaluate({"extra": extra}):
                todo += [(req.name, "")] + [(req.name, e) for e in req.extras]
    return {name for name, _ in seen}


def _norm(name: str) -> str:
    import re

    return re.sub(r"[-_.]+", "-", name).lower()


def test_make_run_installs_everything_the_first_hour_imports():
    import json
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", FIRST_HOUR], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    imported = {_norm(d) for d in json.loads(out.stdout.splitlines()[-1])}
    with_deps = set(pinned_requirements(ROOT / "requirements/local.txt")) | set(pinned_requirements(ROOT / "requirements/sdk.txt"))
    with_deps |= {"hindsight-xp"}  # the SDK, installed editable by requirements/sdk.txt
    without_deps = set(pinned_requirements(ROOT / "requirements/local-nodeps.txt"))
    installed = _closure(with_deps) | without_deps | {"pip", "setuptools"}  # the last two come with every venv
    optional = {"zstandard"}  # httpx decodes zstd when it happens to be installed: used if there, not needed
    assert imported - installed - optional == set()
