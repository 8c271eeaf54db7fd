"""Embeddings from any OpenAI-compatible ``/embeddings`` endpoint (the cloud deployment's embedder:
no model in the Lambda package). The client is built by the composition root and injected."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

if TYPE_CHECKING:
    import numpy as np


class OpenAIEmbedder:
    def __init__(self, client: Any, model: str, dim: int, batch_size: int = 64) -> None:
        self.client = client
        self.model = model
        self.dim = dim
        self.name = f"openai:{model}:{dim}"
        self.batch_size = batch_size

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        import numpy as np  # here: a cold Lambda that only ingests never pays for numpy

        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of texts, not one string")
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for start in range(0, len(texts), self.batch_size):
            batch = [t if t.strip() else " " for t in texts[start : start + self.batch_size]]  # the API refuses ""
            response = self.client.embeddings.create(model=self.model, input=batch, dimensions=self.dim)
            for item in response.data:  # ``index`` says which input it belongs to; order is not promised
                vec = np.asarray(item.embedding, dtype=np.float32)
                if vec.shape[0] != self.dim:
                    raise ValueError(f"the endpoint returned {vec.shape[0]} dimensions, {self.dim} expected")
                out[start + item.index] = vec
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms > 0, norms, 1.0)
