"""The Lambda package's checks, its finishing step and the stub project, without CDK (tests and
devtools/lambda_package.py import this freely).

See ``packaging.py`` for the two package modes, ``stub`` and ``full``.
"""
from __future__ import annotations

import compileall
import gzip
import os
import py_compile
import re
import shutil
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

PACKAGE_MODES = ("stub", "full")
_APP_FILES = ("app.py", "chalicelib", ".chalice/config.json")


def stage_stub_project(project_dir: Path, build_dir: Path) -> Path:
    """A copy of the Chalice project with no dependencies to download (see the module docstring)."""
    stub = build_dir / "stub-project"
    if stub.exists():
        shutil.rmtree(stub)
    (stub / ".chalice").mkdir(parents=True)
    for name in _APP_FILES:
        src, dst = project_dir / name, stub / name
        if src.is_dir():
            shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(src, dst)
    (stub / "requirements.txt").write_text("# stub package: no dependencies (synthesis only, never deployed)\n")
    # a non-empty vendor/ keeps the managed layer in the template, as in a full package
    (stub / "vendor" / "hindsight_stub_layer").mkdir(parents=True)
    (stub / "vendor" / "hindsight_stub_layer" / "README.txt").write_text("stub layer: synthesis only\n")
    return stub


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def pinned_requirements(requirements: Path) -> dict[str, str]:
    """{normalized name: version} of the ``name==version`` lines of a requirements file."""
    pins = {}
    for line in requirements.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        m = re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(\[[^\]]*\])?\s*==\s*([^\s;]+)", line)
        if m:
            pins[_normalize(m.group(1))] = m.group(3)
    return pins


def missing_from_layer(layer_zip: Path, requirements: Path) -> list[str]:
    """The pinned requirements the packaged layer lacks (Chalice only warns when it finds no wheel
    for the Lambda runtime -- e.g. a wheel that needs a newer glibc than the runtime's -- and goes on)."""
    with zipfile.ZipFile(layer_zip) as z:
        installed = {}
        for name in z.namelist():
            m = re.search(r"/site-packages/([^/]+)-([^-/]+)\.dist-info/", name)
            if m:
                installed[_normalize(m.group(1))] = m.group(2)
    return [f"{name}=={version}" for name, version in sorted(pinned_requirements(requirements).items())
            if installed.get(name) != version]


# The botocore service models the functions use: DynamoDB (pynamodb, Powertools idempotency),
# Secrets Manager (container.resolve_secrets), S3 (tenant exports, adapters/s3_exports.py) and SQS
# (the decay queue, adapters/sqs_queue.py). The other services' models are most of botocore's
# size; the package's botocore shadows the runtime's, so a client of another service would fail in
# Lambda alone: tests/infra/test_package.py checks that chalicelib asks for no other.
BOTOCORE_SERVICES = ("dynamodb", "s3", "secretsmanager", "sqs")
_BOTOCORE_MODEL = re.compile(r"(?:^|/)botocore/data/([^/]+)/")


@dataclass
class Finished:
    dropped: int  # files of other services' models
    compiled: int  # .pyc added


def kept(name: str) -> bool:
    m = _BOTOCORE_MODEL.search(name)
    return m is None or m.group(1) in BOTOCORE_SERVICES


def trimmed_endpoints(raw: bytes) -> bytes:
    """botocore's endpoints.json (1.2 MB of JSON, parsed by every new botocore session) with the
    kept services' entries alone; each partition's regions and defaults stay as they are."""
    import json

    data = json.loads(raw)
    for partition in data["partitions"]:
        partition["services"] = {k: v for k, v in partition["services"].items() if k in BOTOCORE_SERVICES}
    return json.dumps(data, separators=(",", ":")).encode()


_SERVICE_MODEL = re.compile(r"(?:^|/)botocore/data/[^/]+/[^/]+/service-2\.json\.gz$")


def undocumented_model(raw: bytes) -> bytes:
    """A botocore service model (``service-2.json``) without its documentation: the operations',
    shapes' and members' ``documentation`` strings are four fifths of DynamoDB's 556 kB, which
    every client's creation parses (~6 ms of a cold start here). botocore reads them for docstrings
    and help alone, with ``""`` where a model has none; every other key stays, and so does a member
    that happens to be named ``documentation``."""
    import json

    def bare(spec: object) -> object:
        if isinstance(spec, dict):
            spec = {k: v for k, v in spec.items() if k not in ("documentation", "documentationUrl")}
            for key in ("member", "key", "value", "input", "output"):  # lists' and maps' members, operations' shapes
                if isinstance(spec.get(key), dict):
                    spec[key] = bare(spec[key])
            if isinstance(spec.get("errors"), list):
                spec["errors"] = [bare(e) for e in spec["errors"]]
        return spec

    model = json.loads(raw)
    model.pop("documentation", None)
    model["operations"] = {name: bare(op) for name, op in model.get("operations", {}).items()}
    shapes = {}
    for name, shape in model.get("shapes", {}).items():
        shape = bare(shape)
        if isinstance(shape.get("members"), dict):
            shape["members"] = {member: bare(spec) for member, spec in shape["members"].items()}
        shapes[name] = shape
    model["shapes"] = shapes
    if isinstance(model.get("clientContextParams"), dict):  # S3's: a description per parameter
        model["clientContextParams"] = {name: bare(spec) for name, spec in model["clientContextParams"].items()}
    return json.dumps(model, separators=(",", ":")).encode()


def runtime_of(sam_template: Path) -> str:
    """The Python runtime of the functions of Chalice's SAM template (``python3.11``)."""
    import json

    resources = json.loads(sam_template.read_text())["Resources"].values()
    runtimes = {r["Properties"]["Runtime"] for r in resources if r.get("Type") == "AWS::Serverless::Function"}
    if len(runtimes) != 1:
        raise RuntimeError(f"expected one runtime in {sam_template}, found {sorted(runtimes)}")
    return runtimes.pop()


def finish_package(package_dir: Path) -> dict[str, Finished]:
    """``finish_zip`` on each zip that ``chalice package`` wrote into ``package_dir`` (the app's, and
    its layer's with ``automatic_layer``)."""
    runtime = runtime_of(package_dir / "sam.json")
    return {z.name: finish_zip(z, runtime) for z in sorted(package_dir.glob("*.zip"))}


def finish_zip(path: Path, runtime: str) -> Finished:
    """Rewrite a zip of ``chalice package`` (the app's, or its layer's) for a cold start: without the
    botocore models of services the functions never call, and with bytecode beside every module.

    botocore's endpoint data keeps those services alone too (``trimmed_endpoints``).
    Lambda's /var/task and /opt are read-only: without a .pyc in the zip, every cold start compiles
    every module it imports, and cannot keep the result. The bytecode is for optimization level 0
    (the runtime runs python without -O) and unchecked-hash: the sources cannot change, so the
    interpreter neither stats them against a timestamp (the zip's are lost at extraction anyway)
    nor hashes them. It can only be produced by the runtime's Python version: ``runtime`` (the
    SAM template's, e.g. ``python3.11``) must be this interpreter's."""
    here = f"python{sys.version_info.major}.{sys.version_info.minor}"
    if runtime != here:
        raise RuntimeError(f"the functions run {runtime}; bytecode from {here} would be ignored there")
    with tempfile.TemporaryDirectory(prefix="hindsight-zip-") as tmp:
        root = Path(tmp)
        with zipfile.ZipFile(path) as zf:
            infos = zf.infolist()
            keep = [i for i in infos if kept(i.filename)]
            for info in keep:
                zf.extract(info, root)
        for info in keep:
            if info.filename.endswith("botocore/data/endpoints.json"):
                target = root / info.filename
                target.write_bytes(trimmed_endpoints(target.read_bytes()))
        # the kept service models without their documentation, as plain JSON (botocore looks for
        # service-2.json before service-2.json.gz; the zip compresses it anyway)
        for i, info in enumerate(keep):
            if _SERVICE_MODEL.search(info.filename):
                gz = root / info.filename
                plain = info.filename[: -len(".gz")]
                (root / plain).write_bytes(undocumented_model(gzip.decompress(gz.read_bytes())))
                entry = zipfile.ZipInfo(plain, date_time=info.date_time)
                entry.external_attr = info.external_attr
                entry.compress_type = zipfile.ZIP_DEFLATED
                keep[i] = entry
        sources = {i.filename: i for i in keep if i.filename.endswith(".py") and not i.is_dir()}
        # a module that does not compile (a template, a file for another Python) gets no .pyc: it
        # cannot be imported either
        compileall.compile_dir(str(root), quiet=2, optimize=0, workers=1,
                               invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
        added = []
        for name, info in sources.items():
            pyc = Path(name).parent / "__pycache__" / f"{Path(name).stem}.{sys.implementation.cache_tag}.pyc"
            if (root / pyc).is_file():
                added.append((pyc.as_posix(), info))
        known = {i.filename for i in keep}
        partial = path.with_suffix(".zip.partial")
        with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as out:
            for info in keep:
                out.writestr(info, b"" if info.is_dir() else (root / info.filename).read_bytes())
            for name, source in added:
                if name in known:
                    continue
                entry = zipfile.ZipInfo(name, date_time=source.date_time)  # the source's: the same zip every time
                entry.external_attr = source.external_attr
                entry.compress_type = zipfile.ZIP_DEFLATED
                out.writestr(entry, (root / name).read_bytes())
        os.replace(partial, path)
    return Finished(dropped=len(infos) - len(keep), compiled=len(added))
