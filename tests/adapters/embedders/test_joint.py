"""Two embedders side by side: one cosine that is the mean of both models' rebased cosines."""
from __future__ import annotations

import numpy as np
import pytest

from chalicelib.adapters.embedders.hash import HashEmbedder
from chalicelib.adapters.embedders.joint import JointEmbedder
from chalicelib.domain.vectors import rebased


class Raised(HashEmbedder):
    """Hash vectors pulled towards one shared direction: unrelated texts sit high, as e5's do."""

    similarity_floor = 0.6

    def __init__(self) -> None:
        super().__init__(64)
        self.queries: list[bool] = []

    def embed(self, texts, query=False):
        self.queries.append(query)
        base = super().embed(texts)
        out = base + np.float32(1.2) * np.eye(1, self.dim, 0, dtype=np.float32)
        return out / np.linalg.norm(out, axis=1, keepdims=True)


def test_the_joint_cosine_rebased_is_the_mean_of_the_two_rebased_cosines():
    first, second = HashEmbedder(32), Raised()
    joint = JointEmbedder(first, second)
    texts = ["the invoice was sent twice", "refund the duplicate invoice", "reset the router password"]
    j, a, b = joint.embed(texts), first.embed(texts), second.embed(texts)
    assert j.shape == (3, 96) and joint.dim == 96
    np.testing.assert_allclose(np.linalg.norm(j, axis=1), 1.0, atol=1e-5)
    for x, y in ((0, 1), (0, 2), (1, 2)):
        want = (float(a[x] @ a[y]) + rebased(float(b[x] @ b[y]), 0.6)) / 2
        assert rebased(float(j[x] @ j[y]), joint.similarity_floor) == pytest.approx(want, abs=1e-5)


def test_the_query_side_reaches_both_models():
    second = Raised()
    JointEmbedder(HashEmbedder(32), second).embed(["where is my parcel"], query=True)
    assert second.queries == [True]


def test_the_first_model_must_put_unrelated_texts_at_0():
    with pytest.raises(ValueError):
        JointEmbedder(Raised(), HashEmbedder())
