"""The Lambda deployment package (``chalice package``): what it holds, its size, and that it imports.

Packaging runs pip, which downloads the Lambda platform's wheels: it needs the package index (or
pip's cache), never AWS. Once per session (~1 min).
"""
from __future__ import annotations

import os
import subprocess
import sys
import zipfile

import pytest

from devtools import lambda_package

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
    assert pkg.dists.isdisjoint({"numpy", "grpcio", "protobuf", "opensearch_protobufs", "onnxruntime", "tokenizers",
                                 "waitress", "moto", "pytest", "hypothesis"}), sorted(pkg.dists)


def test_the_zip_is_at_most_30_mb(package):
    pkg, _ = package
    assert pkg.zipped <= lambda_package.MAX_ZIP_BYTES, lambda_package.describe(pkg, "too large")


def test_every_requirement_is_in_the_package(package):
    # chalice only warns when it finds no wheel for the Lambda runtime, and leaves the package out
    pkg, _ = package
    assert set(pkg.requirements) <= pkg.dists, sorted(set(pkg.requirements) - pkg.dists)


# the embedded backend's modules: never imported with HINDSIGHT_BACKEND=aws
EMBEDDED_ONLY = {"chalicelib.adapters.numpy_index", "chalicelib.adapters.onnx_embedder",
                 "chalicelib.adapters.hash_embedder", "chalicelib.adapters.sqlite_db", "chalicelib.adapters.sqlite_stores"}


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
