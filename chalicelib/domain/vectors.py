"""A dense vector in pure Python, for the Lambda functions, whose package holds no numpy.

The services combine embeddings with ``sum(...)``, ``a @ b`` and ``v / norm``; numpy arrays (the
embedded backend's embedders) and ``Vector`` both answer those, so the services take either.
A vector of the OpenAI-compatible embedder is a few hundred floats, used a handful of times per
request: pure Python costs microseconds there, where numpy would cost ~25 MB of package.
"""
from __future__ import annotations

import math
from typing import Iterable, Sequence


class Vector(tuple[float, ...]):
    """An immutable sequence of floats with the vector operations the services use. ``+`` is
    element-wise (not tuple concatenation), and ``0 + v`` is ``v`` so that ``sum`` works."""

    __slots__ = ()

    def __new__(cls, values: Iterable[float]) -> "Vector":
        return super().__new__(cls, (float(x) for x in values))

    def _same_length(self, other: Sequence[float]) -> None:
        if len(other) != len(self):
            raise ValueError(f"vectors of {len(self)} and {len(other)} dimensions")

    def __add__(self, other: Sequence[float] | float) -> "Vector":  # type: ignore[override]
        if isinstance(other, (int, float)):
            if other == 0:
                return self
            raise TypeError(f"a vector plus {other!r}: only 0 adds to a vector")
        self._same_length(other)
        return Vector(a + b for a, b in zip(self, other))

    __radd__ = __add__

    def __matmul__(self, other: Sequence[float]) -> float:
        self._same_length(other)
        return math.fsum(a * b for a, b in zip(self, other))

    __rmatmul__ = __matmul__

    def __truediv__(self, scalar: float) -> "Vector":
        return Vector(a / scalar for a in self)

    def __mul__(self, scalar: float) -> "Vector":  # type: ignore[override]
        return Vector(a * scalar for a in self)

    __rmul__ = __mul__  # type: ignore[assignment]

    def norm(self) -> float:
        return math.sqrt(self @ self)

    def unit(self) -> "Vector":
        """This vector scaled to length 1; a zero vector stays zero (it has no direction)."""
        n = self.norm()
        return self / n if n > 0 else self

    def tolist(self) -> list[float]:
        return list(self)

    def __repr__(self) -> str:
        return f"Vector({len(self)} dims)"


def rebased(cosine: float, floor: float) -> float:
    """A cosine on the scale where unrelated texts score 0: models differ in where their unrelated
    pairs sit (MiniLM near 0, e5 near 0.7), and the recall weights and the merge thresholds were
    set on the first scale. Below the floor is negative, as a cosine below 0 is."""
    return cosine if floor == 0 else (cosine - floor) / (1.0 - floor)


def texts_of(texts: Sequence[str]) -> list[str]:
    """The texts of one ``embed()`` call as a list; a str, a Sequence[str] of its characters, is refused."""
    if isinstance(texts, str):
        raise TypeError("embed() takes a sequence of texts, not a single str")
    return list(texts)
