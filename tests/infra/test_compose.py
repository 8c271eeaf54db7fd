"""docker-compose.yml (no Docker here: read as data) and the stage parameters' loader.

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


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


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
    env_sh = (ROOT / "scripts" / "opensearch" / "env.sh")
    if env_sh.exists():  # the node the tests start locally: same version
        assert tag in env_sh.read_text()


def test_moto_image_is_the_pinned_moto(compose):
    _, tag = compose["services"]["moto"]["image"].rsplit(":", 1)
    assert tag == importlib.metadata.version("moto")


def test_the_image_copies_files_that_exist(compose):
    build = compose["services"]["hindsight"]["build"]
    dockerfile = ROOT / build["context"] / build["dockerfile"]
    text = dockerfile.read_text()
    for line in text.splitlines():
        if line.startswith("COPY "):
            for src in line.split()[1:-1]:
                assert (ROOT / src).exists(), f"{dockerfile.name}: COPY {src}"
    assert 'CMD ["python", "server.py"]' in text
    assert (ROOT / "server.py").exists() and not (ROOT / "chalicelib" / "server.py").exists()
    ignore = Path(str(dockerfile) + ".dockerignore").read_text()
    assert "*" in ignore.splitlines()  # the context excludes everything but what the image copies


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
