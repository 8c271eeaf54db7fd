"""Embeddings from any OpenAI-compatible ``/embeddings`` endpoint (the cloud deployment's embedder:
no model in the Lambda package). The client (``openai_http.OpenAICompatibleClient``) is built by the
composition root and injected.

Returns ``domain.vectors.Vector`` rows, pure Python: the Lambda package carries no numpy."""
from __future__ import annotations

from typing import Any, Sequence

from chalicelib.domain.vectors import Vector, texts_of


class OpenAIEmbedder:
    similarity_floor = 0.0

    def __init__(self, client: Any, model: str, dim: int, batch_size: int = 64) -> None:
        self.client = client
        self.model = model
        self.dim = dim
        self.name = f"openai:{model}:{dim}"
        self.batch_size = batch_size

    def embed(self, texts: Sequence[str], query: bool = False) -> list[Vector]:
        """One unit vector per text, in order (a zero vector stays zero). The OpenAI API embeds
        searches and documents alike."""
        texts = texts_of(texts)
        out: list[Vector | None] = [None] * len(texts)
        for start in range(0, len(texts), self.batch_size):
            batch = [t if t.strip() else " " for t in texts[start : start + self.batch_size]]  # the API refuses ""
            # ``index`` says which input an embedding belongs to; their order is not promised
            for item in self.client.embeddings(model=self.model, input=batch, dimensions=self.dim):
                if len(item.embedding) != self.dim:
                    raise ValueError(f"the endpoint returned {len(item.embedding)} dimensions, {self.dim} expected")
                out[start + item.index] = Vector(item.embedding).unit()
        missing = [i for i, v in enumerate(out) if v is None]
        if missing:
            raise ValueError(f"the endpoint returned no embedding for inputs {missing[:5]}")
        return out  # type: ignore[return-value]
