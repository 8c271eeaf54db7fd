"""The Lambda package's checks and the stub project, without CDK (tests import this freely).

See ``packaging.py`` for the two package modes, ``stub`` and ``full``.
"""
from __future__ import annotations

import re
import shutil
import zipfile
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
