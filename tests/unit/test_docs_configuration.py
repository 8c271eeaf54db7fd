"""docs/configuration.md names every environment variable the service reads, and only those."""
from __future__ import annotations

import re
from pathlib import Path

from chalicelib.settings import ENV_PREFIX, Settings

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "configuration.md"
NAME = re.compile(r"\bHINDSIGHT_[A-Z0-9_]*[A-Z0-9]\b")


def documented() -> set[str]:
    """The variables the document's tables name in their first column."""
    rows = [line.split("|")[1] for line in DOC.read_text().splitlines() if line.startswith("| `")]
    return {name for row in rows for name in NAME.findall(row)}


def python_files(*folders: str) -> list[Path]:
    found = [p for p in ROOT.glob("*.py")]
    for folder in folders:
        found += (ROOT / folder).rglob("*.py") if (ROOT / folder).is_dir() else []
    return found


def names_in(files: list[Path]) -> set[str]:
    return {name for f in files for name in NAME.findall(f.read_text(encoding="utf-8"))}


def test_every_setting_has_its_line():
    settings = {f"{ENV_PREFIX}{field.upper()}" for field in Settings.model_fields}
    assert settings - documented() == set()


def test_every_variable_the_service_and_the_sdk_read_has_its_line():
    read = names_in(python_files("chalicelib", "local", "sdk"))
    read -= {"HINDSIGHT_WEIGHT"}  # the prefix of the HINDSIGHT_WEIGHT_* settings, named in prose
    assert read - documented() == set()


def test_every_documented_variable_is_read_somewhere():
    settings = {f"{ENV_PREFIX}{field.upper()}" for field in Settings.model_fields}
    used = names_in(python_files("chalicelib", "local", "sdk", "tests", "bench", "devtools", "infra", "scripts"))
    assert documented() - settings - used == set()
