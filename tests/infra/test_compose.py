"""infra/docker/compose.yml and its Dockerfile (no Docker here: read as data) and the stage parameters' loader.

The compose file is for people with Docker; CI cannot run it. These tests keep it consistent
with the code: every HINDSIGHT_* variable is a setting, the endpoints name the services, the
images are the versions the project tests against, and the image copies files that exist.
"""
from __future__ import annotations

import importlib.metadata
import re
import zipfile
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "infra" / "docker" / "compose.yml"


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load((COMPOSE).read_text())


def setting_env_names() -> set[str]:
    from chalicelib.settings import Settings

    names = set()
    for name, field in Settings.model_fields.items():
        alias = field.validation_alias
        choices = getattr(alias, "choices", None) or ([alias] if isinstance(alias, str) else [])
        names |= {c for c in choices if isinstance(c, str)} or {f"HINDSIGHT_{name.upper()}"}
    return names


def test_three_services(compose):
    assert set(compose["services"]) == {"opensearch", "moto", "hindsight"}


def test_hindsight_runs_the_aws_backend_against_the_other_two(compose):
    from chalicelib.settings import Settings

    svc = compose["services"]["hindsight"]
    env = svc["environment"]
    unknown = {k for k in env if k.startswith("HINDSIGHT_")} - setting_env_names()
    assert not unknown, f"not settings: {sorted(unknown)}"
    assert env["HINDSIGHT_BACKEND"] == "aws"
    assert re.fullmatch(r"http://moto:5000", env["HINDSIGHT_DYNAMODB_ENDPOINT"])
    assert env["HINDSIGHT_OPENSEARCH_ENDPOINT"] == "http://opensearch:9200"
    assert env["HINDSIGHT_OPENSEARCH_SERVICE"] == "none"
    assert env["HINDSIGHT_HOST"] == "0.0.0.0"
    assert set(svc["depends_on"]) == {"opensearch", "moto"}
    assert all(dep["condition"] == "service_healthy" for dep in svc["depends_on"].values())
    plain = {k.removeprefix("HINDSIGHT_").lower(): v for k, v in env.items()
             if k.startswith("HINDSIGHT_") and k != "HINDSIGHT_ADMIN_KEY" and k != "HINDSIGHT_PORT"}
    settings = Settings.model_validate(plain)
    assert settings.backend == "aws" and settings.create_tables


def test_published_ports_listen_on_loopback_only(compose):
    for name, svc in compose["services"].items():
        for port in svc.get("ports", []):
            assert port.startswith("127.0.0.1:"), f"{name}: {port}"


def test_opensearch_is_2_19_single_node_without_security(compose):
    svc = compose["services"]["opensearch"]
    image, tag = svc["image"].rsplit(":", 1)
    assert image == "opensearchproject/opensearch" and tag.startswith("2.19.")
    env = svc["environment"]
    assert env["discovery.type"] == "single-node"
    assert env["DISABLE_SECURITY_PLUGIN"] == "true"
    env_sh = (ROOT / "devtools" / "opensearch" / "env.sh")
    if env_sh.exists():  # the node the tests start locally: same version
        assert tag in env_sh.read_text()


def test_moto_image_is_the_pinned_moto(compose):
    _, tag = compose["services"]["moto"]["image"].rsplit(":", 1)
    assert tag == importlib.metadata.version("moto")


def dockerfile_of(compose: dict) -> tuple[Path, Path]:
    """The image's Dockerfile and its build context, as compose resolves them."""
    build = compose["services"]["hindsight"]["build"]
    context = (COMPOSE.parent / build["context"]).resolve()
    return context / build["dockerfile"], context


def copied_paths(dockerfile: Path) -> list[str]:
    """The sources of the Dockerfile's COPY lines, relative to the build context."""
    out = []
    for line in dockerfile.read_text().splitlines():
        if line.startswith("COPY ") and "--from" not in line:
            out += [src.rstrip("/") for src in line.split()[1:-1]]
    return out


def in_context(rel: str, ignore: list[str]) -> bool:
    """Whether a .dockerignore of ``*`` then ``!path`` lines (the last matching line wins, as in
    BuildKit) keeps ``rel`` in the build context."""
    import fnmatch

    kept = True
    for raw in ignore:
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        negate, pattern = line.startswith("!"), line.lstrip("!").rstrip("/")
        if fnmatch.fnmatch(rel, pattern) or rel.startswith(pattern + "/") or fnmatch.fnmatch(rel, pattern.replace("**/", "*")):
            kept = negate
    return kept


def local_imports(start: list[Path], root: Path) -> set[Path]:
    """Every file of this repository that ``start`` imports, directly or through each other, at any
    depth of the code (imports inside functions included: the server imports lazily)."""
    import ast

    seen: set[Path] = set()
    todo = list(start)
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            for name in names:
                parts = name.split(".")
                for i in range(1, len(parts) + 1):
                    base = root.joinpath(*parts[:i])
                    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
                        if candidate.is_file():
                            todo.append(candidate)
    return seen


def test_the_image_copies_every_module_the_server_imports(compose):
    dockerfile, context = dockerfile_of(compose)
    assert context == ROOT
    assert 'CMD ["python", "-m", "local.server"]' in dockerfile.read_text()
    copied = copied_paths(dockerfile)
    for src in copied:
        assert (ROOT / src).exists(), f"{dockerfile.name}: COPY {src}"
    ignore = Path(str(dockerfile) + ".dockerignore").read_text().splitlines()
    assert "*" in ignore  # the context excludes everything but what the image copies
    needed = local_imports(sorted((ROOT / "local").glob("*.py")) + [ROOT / "app.py"], ROOT)
    for path in sorted(needed):
        rel = path.relative_to(ROOT).as_posix()
        assert any(rel == src or rel.startswith(src + "/") for src in copied), f"the image leaves out {rel}"
        assert in_context(rel, ignore), f"{dockerfile.name}.dockerignore leaves {rel} out of the build context"


def test_the_image_installs_the_requirements_it_copies(compose):
    dockerfile, _ = dockerfile_of(compose)
    text = dockerfile.read_text()
    ignore = Path(str(dockerfile) + ".dockerignore").read_text().splitlines()
    for src in copied_paths(dockerfile):
        assert in_context(src, ignore), f"{dockerfile.name}.dockerignore excludes COPY {src}"
    installed = re.findall(r"-r (\S+)", text)
    assert installed and all(name in copied_paths(dockerfile) for name in installed)
    assert "requirements.txt" in copied_paths(dockerfile)  # requirements/aws.txt includes it


def test_the_import_walk_sees_a_module_the_image_would_leave_out(tmp_path):
    (tmp_path / "local").mkdir()
    (tmp_path / "local" / "server.py").write_text("def main():\n    from extra import thing\n")
    (tmp_path / "extra.py").write_text("thing = 1\n")
    found = {p.relative_to(tmp_path).as_posix() for p in local_imports([tmp_path / "local" / "server.py"], tmp_path)}
    assert "extra.py" in found
    assert not in_context("extra.py", ["*", "!local/", "!chalicelib/"])
    assert in_context("local/server.py", ["*", "!local/", "!chalicelib/"])


# --- infra/ helpers that need no synthesis ------------------------------------------------------


def test_a_layer_without_a_pinned_requirement_is_refused(tmp_path):
    from infra.hindsight_infra.lambda_package import missing_from_layer, pinned_requirements

    req = tmp_path / "requirements.txt"
    req.write_text("# comment\npydantic==2.14.4\nmoto[server]==5.2.5  # extras\naws-lambda-powertools==3.37.0\n-r other.txt\n")
    assert pinned_requirements(req) == {"pydantic": "2.14.4", "moto": "5.2.5", "aws-lambda-powertools": "3.37.0"}
    layer = tmp_path / "layer.zip"
    site = "python/lib/python3.11/site-packages"
    with zipfile.ZipFile(layer, "w") as z:
        z.writestr(f"{site}/pydantic-2.14.4.dist-info/METADATA", "")
        z.writestr(f"{site}/aws_lambda_powertools-3.37.0.dist-info/METADATA", "")
        z.writestr(f"{site}/moto-5.2.4.dist-info/METADATA", "")  # the wrong version
    assert missing_from_layer(layer, req) == ["moto==5.2.5"]
