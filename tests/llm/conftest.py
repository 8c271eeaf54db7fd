"""The real small language model (devtools.local_llm), started once for the session."""
from __future__ import annotations

import pytest

from devtools.local_llm import LocalLLM, missing


@pytest.fixture(scope="session")
def local_llm():
    why = missing()
    if why:
        pytest.skip(f"the local model cannot run: {why}")
    with LocalLLM(n_ctx=2048, threads=1) as llm:
        yield llm
