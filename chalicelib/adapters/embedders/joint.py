"""Two embedders as one: each text's vectors side by side, so that one cosine is the mean of both
models' cosines, each rebased on its own floor (``domain.vectors.rebased``).

For unit vectors ``a`` (floor 0) and ``b`` (floor ``f``), the unit vector ``[sqrt(w) a, sqrt(1-w) b]``
has cosine ``w ca + (1-w) cb``; with ``w = (1-f) / (2-f)`` that cosine rebased on the floor
``(1-w) f`` is ``(ca + rebased(cb, f)) / 2``: both models count alike whatever their scales.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from chalicelib.domain.vectors import texts_of

if TYPE_CHECKING:
    import numpy as np


class JointEmbedder:
    """Implements ``ports.Embedder`` over ``first`` (floor 0, e.g. MiniLM) and ``second``."""

    def __init__(self, first: Any, second: Any) -> None:
        if first.similarity_floor != 0:
            raise ValueError("the first embedder's floor must be 0")
        f = second.similarity_floor
        self.first, self.second = first, second
        self._w = (1 - f) / (2 - f)
        self.similarity_floor = (1 - self._w) * f
        self.dim = first.dim + second.dim
        self.name = f"{first.name}+{second.name}"

    def embed(self, texts: Sequence[str], query: bool = False) -> np.ndarray:
        import numpy as np

        texts = texts_of(texts)
        a = np.asarray(self.first.embed(texts, query=query), dtype=np.float32)
        b = np.asarray(self.second.embed(texts, query=query), dtype=np.float32)
        return np.hstack([a * np.float32(self._w**0.5), b * np.float32((1 - self._w) ** 0.5)])
