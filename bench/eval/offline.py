"""Offline retrieval baselines computed in the benchmark process: BM25, dense cosine, and their
reciprocal-rank fusion. They see the same texts as the service, with none of its rules."""
from __future__ import annotations

import hashlib
import math
import os
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Callable, Iterable, Sequence

import numpy as np

from chalicelib.domain.lexical import terms

RRF_K = 60
CACHE = Path(os.environ.get("HINDSIGHT_EVAL_CACHE") or Path(__file__).resolve().parents[2] / ".locomo")


class Bm25:
    """Okapi BM25 (k1 1.2, b 0.75) over one collection; the tokenizer is the service's (identifiers
    kept whole and split, plurals folded), so the baseline differs from the service only in ranking."""

    def __init__(self, texts: Sequence[str], k1: float = 1.2, b: float = 0.75,
                 tokenize: Callable[[str], list[str]] = terms) -> None:
        self.k1, self.b, self.tokenize = k1, b, tokenize
        self.docs = [Counter(tokenize(t)) for t in texts]
        self.lens = np.array([sum(d.values()) for d in self.docs], dtype=np.float64)
        self.avg = float(self.lens.mean()) if len(self.docs) else 0.0
        df: Counter[str] = Counter()
        for d in self.docs:
            df.update(d.keys())
        n = len(self.docs)
        self.idf = {t: math.log(1 + (n - c + 0.5) / (c + 0.5)) for t, c in df.items()}
        self.postings: dict[str, list[tuple[int, int]]] = {}
        for i, d in enumerate(self.docs):
            for t, tf in d.items():
                self.postings.setdefault(t, []).append((i, tf))

    def scores(self, query: str) -> np.ndarray:
        out = np.zeros(len(self.docs))
        for t in set(self.tokenize(query)):
            idf = self.idf.get(t)
            if idf is None:
                continue
            for i, tf in self.postings[t]:
                norm = tf + self.k1 * (1 - self.b + self.b * self.lens[i] / max(self.avg, 1e-9))
                out[i] += idf * tf * (self.k1 + 1) / norm
        return out


def top(scores: np.ndarray, k: int, only_positive: bool = False) -> list[int]:
    """Indexes of the k best scores, best first; ties broken by index, so runs repeat exactly."""
    order = np.lexsort((np.arange(len(scores)), -scores))[:k]
    return [int(i) for i in order if not only_positive or scores[i] > 0]


def rrf(rankings: Iterable[Sequence[int]], k: int, c: int = RRF_K) -> list[int]:
    """Reciprocal-rank fusion: sum of 1 / (c + rank) over the rankings a document appears in."""
    fused: dict[int, float] = {}
    for ranking in rankings:
        for rank, doc in enumerate(ranking):
            fused[doc] = fused.get(doc, 0.0) + 1.0 / (c + rank + 1)
    return [d for d, _ in sorted(fused.items(), key=lambda kv: (-kv[1], kv[0]))][:k]


def minilm() -> Callable[[list[str]], np.ndarray]:
    """The service's own offline MiniLM embedder, batched (unit vectors, float32)."""
    from chalicelib.adapters.embedders.onnx import OnnxMiniLMEmbedder

    model = OnnxMiniLMEmbedder()

    def embed(texts: list[str]) -> np.ndarray:
        out = [model.embed(texts[i : i + 64]) for i in range(0, len(texts), 64)]
        return np.vstack(out).astype(np.float32) if out else np.zeros((0, 384), dtype=np.float32)

    return embed


def cached(name: str, texts: list[str], compute: Callable[[list[str]], np.ndarray]) -> np.ndarray:
    """``compute(texts)``, kept under ``.locomo/`` (ignored by git; ``HINDSIGHT_EVAL_CACHE`` moves it)
    by model name and texts: the models are deterministic, and embedding LoCoMo's 5,882 turns takes
    minutes on 2 shared cores. Delete the folder after changing a model."""
    key = hashlib.sha256("\x00".join(texts).encode()).hexdigest()[:16]
    path = CACHE / f"{name}-{key}.npy"
    if path.exists():
        return np.load(path, allow_pickle=False)
    t0 = time.monotonic()
    out = compute(texts)
    CACHE.mkdir(parents=True, exist_ok=True)
    np.save(path, out)
    print(f"  {name}: {len(texts)} texts embedded in {time.monotonic() - t0:.0f}s (cached in {CACHE})", file=sys.stderr, flush=True)
    return out
