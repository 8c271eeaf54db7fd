"""``chalice package`` of this project, offline from AWS, and what the zip holds.

Used by tests/infra/test_package.py (what may not be in the Lambda package, and its size) and
bench/package_size.py. The zip is finished as infra/ finishes it for a deployment
(``infra/hindsight_infra/lambda_package.finish_package``). The project (app.py, chalicelib/, requirements.txt, .chalice/config.json,
vendor/ if any) is copied into a temporary directory, so nothing is written into the work tree.
Chalice runs pip, which downloads the Lambda platform's wheels from the package index: packaging
needs the index (or pip's cache), never AWS. Dummy credentials keep it from looking for real ones.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
import zipfile
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from infra.hindsight_infra.lambda_package import finish_package

REPO = Path(__file__).resolve().parent.parent
DUMMY_AWS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1"}
# Lambda refuses a directly uploaded zip over 50 MB; 30 MB leaves room for a dependency or two
MAX_ZIP_BYTES = 30 * 1024 * 1024
# What no Lambda function imports: the embedded backend (numpy, the ONNX model), opensearch-py and
# requests (chalicelib/adapters/opensearch/http.py speaks to the index) and 3.1+'s gRPC transport, the
# openai SDK and its transport (chalicelib/adapters/openai_http.py speaks to the endpoint), the
# embedded server, the test tools. protobuf (``google``) is in: the OTLP route decodes with it, and
# grpc stays out (docs/decisions/0036-otlp-on-lambda.md)
FORBIDDEN = ("numpy", "numpy.libs", "grpc", "onnxruntime", "tokenizers", "openai", "httpx", "httpx2",
             "opensearchpy", "requests", "waitress", "moto", "pytest", "hypothesis", "_pytest", "respx", "freezegun",
             "responses")


def requirement_name(line: str) -> str | None:
    line = line.split("#", 1)[0].strip()
    m = re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*)", line)
    return re.sub(r"[-_.]+", "_", m[1]).lower() if m and not line.startswith("-") else None


@dataclass
class Package:
    zips: list[Path]
    zipped: int  # bytes of the zip files
    unzipped: int  # bytes of the files they hold
    files: int
    seconds: float
    by_top: dict[str, int] = field(default_factory=dict)  # top-level entry -> unzipped bytes
    zipped_by_top: dict[str, int] = field(default_factory=dict)  # top-level entry -> compressed bytes
    dists: set[str] = field(default_factory=set)  # distributions, normalised names
    requirements: list[str] = field(default_factory=list)

    @property
    def tops(self) -> set[str]:
        """Importable top-level names (modules and packages) the package holds."""
        out = set()
        for name in self.by_top:
            if name.endswith((".dist-info", ".egg-info")) or name.startswith("."):
                continue
            out.add(name[:-3] if name.endswith(".py") else name.split(".cpython-")[0])
        return out


def build(work: Path, overrides: list[str] = (), stage: str = "dev", timeout: float = 900.0, finish: bool = True) -> Package:
    """``chalice package`` of a copy of the project into ``work``, finished as infra/ finishes it for
    a deployment (``finish_package``: bytecode in, unused botocore models out; ``finish=False``
    leaves chalice's zip as it is). ``overrides``: requirement lines that replace the pin of the
    same package in the copy, or are added when it has none."""
    proj = work / "project"
    proj.mkdir(parents=True)
    shutil.copy2(REPO / "app.py", proj / "app.py")
    lines = (REPO / "requirements.txt").read_text().splitlines()
    for o in overrides:
        if any(requirement_name(ln) == requirement_name(o) for ln in lines):
            lines = [o if requirement_name(ln) == requirement_name(o) else ln for ln in lines]
        else:
            lines.append(o)
    (proj / "requirements.txt").write_text("\n".join(lines) + "\n")
    shutil.copytree(REPO / "chalicelib", proj / "chalicelib", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    shutil.copytree(REPO / ".chalice", proj / ".chalice", ignore=shutil.ignore_patterns("deployments", "venv"))
    if (REPO / "vendor").is_dir():
        shutil.copytree(REPO / "vendor", proj / "vendor")
    config = json.loads((proj / ".chalice" / "config.json").read_text())
    policy = proj / ".chalice" / f"policy-{stage}.json"
    if config.get("autogen_policy") is False and not policy.exists():
        # chalice package refuses to run without it; IAM comes from infra/ (CDK), not from here
        policy.write_text(json.dumps({"Version": "2012-10-17", "Statement": []}))
    out = work / "out"
    bindir = Path(sys.executable).parent
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "PYTHON"))}
    env.update(DUMMY_AWS, PATH=f"{bindir}:{env.get('PATH', '')}")  # chalice runs pip from this venv
    t0 = time.perf_counter()
    proc = subprocess.run([str(bindir / "chalice"), "--project-dir", str(proj), "package", "--stage", stage, str(out)],
                          env=env, cwd=str(proj), capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"chalice package failed ({proc.returncode}):\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}")
    if finish:
        finish_package(out)
    seconds = time.perf_counter() - t0
    pkg = Package(zips=sorted(out.glob("*.zip")), zipped=0, unzipped=0, files=0, seconds=seconds,
                  requirements=[n for n in map(requirement_name, lines) if n])
    by_top: dict[str, int] = defaultdict(int)
    zipped_by_top: dict[str, int] = defaultdict(int)
    for zpath in pkg.zips:  # deployment.zip, and layer-deployment.zip with automatic_layer
        pkg.zipped += zpath.stat().st_size
        with zipfile.ZipFile(zpath) as zf:
            for info in zf.infolist():
                if info.is_dir():
                    continue
                name = info.filename
                if name.startswith("python/lib/"):  # a layer's python/lib/pythonX.Y/site-packages/
                    name = name.split("/site-packages/", 1)[-1]
                top = name.split("/", 1)[0]
                pkg.files += 1
                pkg.unzipped += info.file_size
                by_top[top] += info.file_size
                zipped_by_top[top] += info.compress_size
                if top.endswith(".dist-info"):
                    pkg.dists.add(requirement_name(top[: -len(".dist-info")].rsplit("-", 1)[0]) or top)
    pkg.by_top, pkg.zipped_by_top = dict(by_top), dict(zipped_by_top)
    return pkg


def describe(pkg: Package, label: str, top: int = 12) -> str:
    mb = 1024 * 1024
    rows = [f"{label}: {pkg.zipped / mb:.1f} MiB zipped, {pkg.unzipped / mb:.1f} MiB unzipped, {pkg.files} files "
            f"({' + '.join(z.name for z in pkg.zips)}; packaged in {pkg.seconds:.0f} s)"]
    for name, size in sorted(pkg.zipped_by_top.items(), key=lambda x: -x[1])[:top]:
        rows.append(f"    {name:<34}{size / mb:7.2f} MiB zipped {pkg.by_top[name] / mb:7.2f} MiB unzipped")
    return "\n".join(rows)
