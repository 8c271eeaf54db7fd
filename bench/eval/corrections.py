"""The corrections set (bench/corrections): a lesson, a later human lesson that amends it, and the
question a user would ask later. Both are written through the public API seconds apart, with no
``supersedes``; the figure is how often recall serves the amendment above the original, beside
BM25 over the same lessons (situation and advice) in the same run."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Sequence

from bench import sets

from .offline import Bm25

SET = sets.SETS["corrections"].path


def load(path: Path = SET) -> list[dict[str, Any]]:
    """The cases, checked by ``bench.sets.corrections_errors``."""
    return read(path)["cases"]


def read(path: Path = SET) -> dict[str, Any]:
    """The whole set (cases and lookalikes), checked by ``bench.sets.corrections_errors``."""
    doc = sets.read(path)
    errors = sets.corrections_errors(doc)
    if errors:
        raise ValueError(f"{path}: " + "; ".join(errors[:5]))
    return doc


def first(ranking: list[str], amend: str, orig: str) -> bool:
    """The amendment is served, and above the original if that is served too."""
    return amend in ranking and (orig not in ranking or ranking.index(amend) < ranking.index(orig))


def run(api, cases: list[dict[str, Any]], nonce: str, top_k: int, log: Callable[[str], None],
        lookalikes: Sequence[dict[str, Any]] = ()) -> dict[str, Any]:
    log(f"corrections: writing {2 * len(cases)} lessons...")
    flagged, stray = 0, 0
    for case in cases:
        ids = {k: f"{nonce}-{case['id']}-{k}" for k in ("original", "amendment")}
        for kind in ("original", "amendment"):
            body = dict(case[kind], experience_id=ids[kind], agent_id=case["agent_id"], lesson=case[kind]["advice"])
            answer = api.call("POST", "/v1/experiences", json=body)
            named = answer.get("correction_of", [])
            if kind == "amendment" and ids["original"] in named:
                flagged += 1
            stray += len(set(named) - {ids["original"]})  # another case's lesson of the same agent
    false_flags = []
    for pair in lookalikes:
        older, newer = (f"{nonce}-look-{pair['id']}-{k}" for k in ("first", "second"))
        for exp_id, kind in ((older, "first"), (newer, "second")):
            body = dict(pair[kind], experience_id=exp_id, agent_id=pair["agent_id"], lesson=pair[kind]["advice"])
            answer = api.call("POST", "/v1/experiences", json=body)
        if older in answer.get("correction_of", []):
            false_flags.append(pair["id"])
    per_case, bm25_first = [], 0
    docs = [(f"{nonce}-{c['id']}-{k}", f"{c[k]['situation']} {c[k]['advice']}") for c in cases for k in ("original", "amendment")]
    bm25 = Bm25([t for _, t in docs])
    for case in cases:
        orig, amend = f"{nonce}-{case['id']}-original", f"{nonce}-{case['id']}-amendment"
        hits = api.call("POST", "/v1/recall", json={"query": case["query"], "agent_id": case["agent_id"], "top_k": top_k})["hits"]
        ranking = [h["experience"]["experience_id"] for h in hits]
        scores = bm25.scores(case["query"])
        order = [docs[i][0] for i in sorted(range(len(docs)), key=lambda i: (-scores[i], i))][:top_k]
        ok, base = first(ranking, amend, orig), first(order, amend, orig)
        bm25_first += base
        per_case.append({"id": case["id"], "amendment_first": ok, "bm25_amendment_first": base,
                         "explained": any(orig in h["explanation"].get("corrects", []) for h in hits)})
    n = len(cases)
    return {
        "cases": n,
        "hindsight": {"amendment_first": sum(c["amendment_first"] for c in per_case) / n, "flagged": flagged / n,
                      "explained": sum(c["explained"] for c in per_case) / n,
                      # lessons named as probable corrections that are not: another case's lesson of
                      # the same agent, or the first of a look-alike pair
                      "stray_flags": stray, "lookalikes": len(lookalikes), "lookalikes_flagged": len(false_flags)},
        "lookalikes_flagged": false_flags,
        "bm25": {"amendment_first": bm25_first / n},
        "per_case": per_case,
    }
