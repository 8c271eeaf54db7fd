"""The Lambda deployment package (``chalice package``): what it holds, its size, and that it imports.

Packaging runs pip, which downloads the Lambda platform's wheels: it needs the package index (or
pip's cache), never AWS. Once per session (~1 min).
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from devtools import lambda_package
from infra.hindsight_infra.lambda_package import BOTOCORE_SERVICES

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def package(tmp_path_factory):
    work = tmp_path_factory.mktemp("lambda-package")
    pkg = lambda_package.build(work)
    target = work / "unzipped"
    for zpath in pkg.zips:
        with zipfile.ZipFile(zpath) as zf:
            zf.extractall(target)
    return pkg, target


def test_the_package_holds_nothing_the_functions_never_import(package):
    pkg, _ = package
    print(lambda_package.describe(pkg, "chalice package"))
    forbidden = sorted(pkg.tops & set(lambda_package.FORBIDDEN))
    assert not forbidden, f"the Lambda package holds {forbidden}:\n{lambda_package.describe(pkg, 'package')}"
    # protobuf is in, for the OTLP route alone (docs/decisions/0036-otlp-on-lambda.md); grpc is not
    assert pkg.dists.isdisjoint({"numpy", "grpcio", "opensearch_protobufs", "onnxruntime", "tokenizers",
                                 "openai", "httpx", "httpx2", "opensearch_py", "requests", "waitress", "moto", "pytest",
                                 "hypothesis"}), sorted(pkg.dists)


def test_the_otlp_route_decodes_with_the_package_alone_and_no_other_route_imports_protobuf(package):
    """protobuf and opentelemetry-proto are in the package for ``POST /v1/otlp/v1/traces`` alone:
    ``import app`` (every other route's cold start) loads neither; the route's decoding works from
    the package with protobuf's compiled (upb) backend, as Lambda runs it."""
    _, target = package
    code = (
        "import sys, app\n"
        "assert not [m for m in sys.modules if m.startswith(('google', 'opentelemetry'))], 'import app loaded protobuf'\n"
        "from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest\n"
        "from google.protobuf.internal import api_implementation\n"
        "from chalicelib.api import otlp\n"
        "req = ExportTraceServiceRequest()\n"
        "s = req.resource_spans.add().scope_spans.add().spans.add()\n"
        "s.trace_id, s.span_id, s.name = bytes(range(16)), bytes(range(8)), 'execute_tool get_weather'\n"
        "(span,) = otlp.spans(otlp.decode(req.SerializeToString(), otlp.PROTOBUF))\n"
        "print(api_implementation.Type(), span.trace_id, span.name)\n"
    )
    proc = _package_python(target, code, HINDSIGHT_BACKEND="aws")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split("\n")[0] == "upb 000102030405060708090a0b0c0d0e0f execute_tool get_weather"


def test_the_zip_is_at_most_30_mb(package):
    pkg, _ = package
    assert pkg.zipped <= lambda_package.MAX_ZIP_BYTES, lambda_package.describe(pkg, "too large")


def test_every_requirement_is_in_the_package(package):
    # chalice only warns when it finds no wheel for the Lambda runtime, and leaves the package out
    pkg, _ = package
    assert set(pkg.requirements) <= pkg.dists, sorted(set(pkg.requirements) - pkg.dists)


# the embedded backend's modules: never imported with HINDSIGHT_BACKEND=aws
EMBEDDED_ONLY = {"chalicelib.adapters.embedded.index", "chalicelib.adapters.embedded.sign_codes",
                 *(f"chalicelib.adapters.embedded.{m}" for m in ("partition", "bm25", "search", "changes", "token_vectors")),
                 "chalicelib.adapters.embedders.onnx",
                 "chalicelib.adapters.embedders.hash", "chalicelib.adapters.embedded.db", "chalicelib.adapters.embedded.stores"}


def test_the_functions_import_from_the_package_alone(package):
    """``import app`` and every other module of chalicelib but the embedded backend's, with nothing
    but the package and the standard library on the path (-S: no site-packages to fall back on)."""
    _, target = package
    code = (
        "import pkgutil, importlib, sys, app, chalicelib\n"
        f"skip = {sorted(EMBEDDED_ONLY)!r}\n"
        "names = [m.name for m in pkgutil.walk_packages(chalicelib.__path__, 'chalicelib.') if m.name not in skip]\n"
        "for name in names:\n    importlib.import_module(name)\n"
        "assert 'numpy' not in sys.modules, 'numpy was imported'\n"
        "try:\n    import numpy\nexcept ImportError:\n    pass\nelse:\n    raise SystemExit('numpy is importable')\n"
        "print(len(names))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HINDSIGHT_", "PYTHON"))}
    env.update(lambda_package.DUMMY_AWS, HINDSIGHT_BACKEND="aws", PYTHONPATH=str(target), PYTHONNOUSERSITE="1")
    proc = subprocess.run([sys.executable, "-S", "-c", code], cwd=str(target), env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert int(proc.stdout.split()[-1]) > 30, proc.stdout  # the walk found chalicelib's modules


def _package_python(target, code: str, **env: str) -> subprocess.CompletedProcess:
    """``code`` in a fresh interpreter with the package alone on the path, as Lambda runs it."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HINDSIGHT_", "PYTHON"))} | env
    env.update(lambda_package.DUMMY_AWS, PYTHONPATH=str(target), PYTHONNOUSERSITE="1")
    return subprocess.run([sys.executable, "-S", "-c", code], cwd=str(target), env=env, capture_output=True,
                          text=True, timeout=120)


def test_every_module_has_bytecode_the_runtime_uses_without_checking_or_writing_it(package):
    """Lambda's /var/task is read-only: a module without a .pyc is compiled at every cold start."""
    pkg, target = package
    sources = [p for p in target.rglob("*.py") if "__pycache__" not in p.parts]
    assert len(sources) > 500
    tag = sys.implementation.cache_tag
    missing = [str(p.relative_to(target)) for p in sources
               if not (p.parent / "__pycache__" / f"{p.stem}.{tag}.pyc").is_file()]
    assert len(missing) <= len(sources) // 100, missing[:20]  # only files that do not compile (templates, py2)
    assert not [p for p in target.rglob("*.opt-*.pyc")]  # the runtime runs without -O: it would not read them
    code = (
        "import os, sys\n"
        "import app, chalicelib.adapters.dynamo.models, pynamodb.models, botocore.session, pydantic\n"
        "flags = set()\n"
        "ours = [m for m in sys.modules.values() if (getattr(m, '__cached__', None) or '').startswith(os.getcwd())]\n"
        "assert len(ours) > 100, len(ours)\n"
        "for m in ours:\n"
        "    with open(m.__cached__, 'rb') as f:\n"
        "        flags.add(int.from_bytes(f.read(8)[4:8], 'little'))\n"
        "print(sorted(flags))\n"
    )
    # PYTHONDONTWRITEBYTECODE off: any module compiled at import would leave a new .pyc behind
    before = {p: p.stat().st_mtime_ns for p in target.rglob("*.pyc")}
    proc = _package_python(target, code, HINDSIGHT_BACKEND="aws")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split("\n")[0] == "[1]"  # PEP 552: hash-based (bit 0), unchecked (bit 1 clear)
    assert {p: p.stat().st_mtime_ns for p in target.rglob("*.pyc")} == before


def test_botocore_keeps_the_models_of_the_services_the_functions_call_and_no_other(package):
    _, target = package
    models = {p.name for p in (target / "botocore" / "data").iterdir() if p.is_dir()}
    assert models == set(BOTOCORE_SERVICES)
    asked = set()
    for path in [ROOT / "app.py", *(ROOT / "chalicelib").rglob("*.py")]:
        asked |= set(re.findall(r"""\b(?:create_)?client\(\s*["']([a-z0-9-]+)["']""", path.read_text()))
    assert asked and asked <= set(BOTOCORE_SERVICES), asked  # a new client needs its model kept
    # boto3 comes with the Lambda runtime, on top of the package's botocore: botocore's clients here,
    # and their endpoints in two partitions, from the trimmed endpoint data
    code = (
        "import botocore.session\n"
        f"for name in {sorted(BOTOCORE_SERVICES)!r}:\n"
        "    for region in ('eu-west-3', 'cn-north-1'):\n"
        "        print(botocore.session.get_session().create_client(name, region_name=region).meta.endpoint_url)\n"
        "print('ok')\n"
    )
    proc = _package_python(target, code)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split() == ["https://dynamodb.eu-west-3.amazonaws.com", "https://dynamodb.cn-north-1.amazonaws.com.cn",
                                   "https://s3.eu-west-3.amazonaws.com", "https://s3.cn-north-1.amazonaws.com.cn",
                                   "https://secretsmanager.eu-west-3.amazonaws.com",
                                   "https://secretsmanager.cn-north-1.amazonaws.com.cn",
                                   "https://sqs.eu-west-3.amazonaws.com", "https://sqs.cn-north-1.amazonaws.com.cn", "ok"]
    assert (target / "botocore" / "data" / "endpoints.json").stat().st_size < 100_000
    # each model as plain JSON without its documentation (parsed at every client's creation)
    for name in BOTOCORE_SERVICES:
        (model,) = (target / "botocore" / "data" / name).glob("*/service-2.json*")
        assert model.name == "service-2.json" and b'"documentation"' not in model.read_bytes(), model


def test_the_handlers_build_their_tracer_from_the_package_alone(package):
    """Tracing on (prod): Powertools' Tracer needs aws-xray-sdk (and wrapt) in the layer; with
    Lambda's LAMBDA_TASK_ROOT the X-Ray SDK samples locally and calls no X-Ray API (whose botocore
    model the package leaves out)."""
    _, target = package
    code = (
        "import app, chalicelib.review_worker_lambda, aws_xray_sdk, wrapt\n"
        "from chalicelib import observability\n"
        "print(type(observability.tracer()).__name__)\n"
    )
    proc = _package_python(target, code, HINDSIGHT_BACKEND="aws", HINDSIGHT_TRACING="true", LAMBDA_TASK_ROOT=str(target))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split()[-1] == "Tracer"
