"""domain.vectors.Vector: the pure-Python vector the Lambda's embedder returns, against numpy."""
from __future__ import annotations

import numpy as np
import pytest

from chalicelib.domain.vectors import Vector, rebased


def test_the_operations_the_services_use_match_numpy():
    rng = np.random.default_rng(3)
    a, b, c = (rng.standard_normal(384) for _ in range(3))
    va, vb, vc = Vector(a), Vector(b), Vector(c)
    total = sum([va, vb, vc])  # how services.indexing sums a lesson's texts
    assert isinstance(total, Vector)
    np.testing.assert_allclose(total, a + b + c, rtol=1e-12)
    assert va @ vb == pytest.approx(float(a @ b), rel=1e-12)
    assert va @ b == pytest.approx(float(a @ b), rel=1e-12)  # against a numpy row too
    np.testing.assert_allclose(va / 2.0, a / 2.0)
    np.testing.assert_allclose(va.unit(), a / np.linalg.norm(a), rtol=1e-12)
    assert va.norm() == pytest.approx(float(np.linalg.norm(a)))


def test_plus_is_element_wise_and_lengths_must_match():
    assert Vector([1, 2]) + Vector([3, 4]) == Vector([4, 6])
    assert 0 + Vector([1, 2]) == Vector([1.0, 2.0])
    with pytest.raises(ValueError):
        Vector([1, 2]) + Vector([1, 2, 3])
    with pytest.raises(ValueError):
        Vector([1, 2]) @ Vector([1])


def test_a_zero_vector_has_no_direction_and_stays_zero():
    assert Vector([0.0, 0.0]).unit() == Vector([0.0, 0.0])


def test_rebased_puts_the_models_floor_at_0_and_keeps_1():
    assert rebased(0.85, 0.7) == pytest.approx(0.5)
    assert rebased(1.0, 0.7) == pytest.approx(1.0) and rebased(0.7, 0.7) == 0.0
    assert rebased(0.6, 0.7) < 0  # below the floor, as a cosine below 0
    assert rebased(0.42, 0.0) == 0.42
