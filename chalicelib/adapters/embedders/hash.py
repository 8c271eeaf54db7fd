"""A deterministic small embedder for unit tests: hashed word and character-trigram features.

It knows no synonyms, but shares words and word pieces the way a real model does, so tests
of ranking and filtering stay meaningful without loading a model.
"""
from __future__ import annotations

import hashlib
import re
from typing import Sequence

import numpy as np

_WORD = re.compile(r"[a-z0-9_]+")


class HashEmbedder:
    name = "hash-256"
    similarity_floor = 0.0

    def __init__(self, dim: int = 256) -> None:
        self.dim = dim

    def _features(self, text: str) -> list[str]:
        words = _WORD.findall(text.lower())
        grams = [w[i : i + 3] for w in words for i in range(max(1, len(w) - 2))]
        return [f"w:{w}" for w in words] + [f"g:{g}" for g in grams]

    def embed(self, texts: Sequence[str], query: bool = False) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for feat in self._features(text):
                h = int.from_bytes(hashlib.blake2b(feat.encode(), digest_size=8).digest(), "little")
                weight = 2.0 if feat[0] == "w" else 1.0
                out[row, h % self.dim] += weight if (h >> 63) & 1 else -weight
            norm = np.linalg.norm(out[row])
            if norm > 0:
                out[row] /= norm
        return out
