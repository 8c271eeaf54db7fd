"""What a Lambda cold start pays for, checked in fresh interpreters: importing the app builds no
validator and skips pydantic-settings; building the aws wiring connects to nothing and leaves
opensearch-py, numpy and the openai SDK unimported until a request searches, reviews or embeds."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run(code: str, **env: str) -> str:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT,
                         env={**os.environ, "HINDSIGHT_BACKEND": "aws", "AWS_DEFAULT_REGION": "us-east-1", **env})
    return out.stdout.strip()


def test_importing_the_app_builds_no_validator_and_skips_pydantic_settings():
    code = ("import sys, app; from chalicelib.api import schemas as s; "
            "built = [n for n, m in vars(s).items() if isinstance(m, type) and issubclass(m, s.BaseModel) "
            "and m is not s.BaseModel and m.__pydantic_complete__]; "
            "print('pydantic_settings' in sys.modules, built)")
    assert run(code) == "False []"


def test_the_aws_wiring_imports_the_index_client_on_first_use():
    code = ("import sys; from chalicelib import container; deps = container.get_deps(); "
            "print(*(m in sys.modules for m in ('opensearchpy', 'openai', 'numpy'))); "
            "deps.index.spec; print('opensearchpy' in sys.modules, type(deps.index._target()).__name__)")
    lines = run(code, HINDSIGHT_EMBEDDER="openai", HINDSIGHT_OPENAI_BASE_URL="http://127.0.0.1:9/v1").splitlines()
    assert lines == ["False False False", "True OpenSearchVectorIndex"]
