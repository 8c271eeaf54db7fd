"""LoCoMo (snap-research/LoCoMo ``data/locomo10.json``) through the HTTP API, measured as issue 17
fixes it so that figures compare, beside offline BM25, dense MiniLM and their RRF fusion.

One tenant; every turn of conversation i is a manual experience: situation = lesson =
"speaker: text [image: caption]", action = result = "", tags ["dia:<dia_id>", "session:<n>"],
agent_id "conv-<i>", source "human". Every category 1-4 question with evidence is recalled with
{query, agent_id, top_k: 10}. Turn any@10: an evidence turn is among the 10 hits. Session R@10:
the hits' sessions, deduplicated in rank order, cover which fraction of the evidence sessions.
A failed recall scores 0. The data set is never committed: the eval reads it where
``HINDSIGHT_LOCOMO`` points.
"""
from __future__ import annotations

import json
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from statistics import mean
from typing import Any, Callable, Sequence

import httpx
import numpy as np

from . import offline

TOP_K = 10
CATEGORIES = (1, 2, 3, 4)
_DIA = re.compile(r"D(\d+):(\d+)")


@dataclass(frozen=True)
class Turn:
    conv: int
    dia_id: str
    session: int
    text: str


@dataclass(frozen=True)
class Question:
    conv: int
    query: str
    category: int
    evidence: tuple[str, ...]  # dia ids

    @property
    def sessions(self) -> set[int]:
        return {session_of(d) for d in self.evidence}


def session_of(dia_id: str) -> int:
    m = _DIA.match(dia_id)
    return int(m.group(1)) if m else -1


def turn_text(t: dict[str, Any]) -> str:
    text = f"{t['speaker']}: {t['text']}"
    if t.get("blip_caption"):
        text += f" [image: {t['blip_caption']}]"
    return text


def load(path: str | Path) -> tuple[list[Turn], list[Question]]:
    data = json.loads(Path(path).read_text())
    turns, questions = [], []
    for i, conv in enumerate(data):
        c = conv["conversation"]
        for key, value in c.items():
            m = re.fullmatch(r"session_(\d+)", key)
            if m and isinstance(value, list):
                turns += [Turn(i, t["dia_id"], int(m.group(1)), turn_text(t)) for t in value]
        for q in conv["qa"]:
            # Some evidence entries hold several ids ("D8:6; D9:17"): every id counts.
            ev = tuple(f"D{s}:{n}" for e in q.get("evidence") or () for s, n in _DIA.findall(str(e)))
            if q.get("category") in CATEGORIES and ev:
                questions.append(Question(i, str(q["question"]), int(q["category"]), ev))
    return turns, questions


def score(q: Question, ranked_dias: Sequence[Sequence[str]]) -> tuple[float, float]:
    """(turn any@10, session R@10) of one question, from the dia ids of each ranked hit."""
    top = list(ranked_dias)[:TOP_K]
    any_turn = 1.0 if any(d in q.evidence for dias in top for d in dias) else 0.0
    sessions: list[int] = []
    for dias in top:
        for d in dias:
            s = session_of(d)
            if s not in sessions:
                sessions.append(s)
    return any_turn, len(q.sessions & set(sessions[:TOP_K])) / len(q.sessions)


def summarize(questions: Sequence[Question], per_q: Sequence[tuple[float, float]]) -> dict[str, Any]:
    out: dict[str, Any] = {"n": len(per_q), "turn_any@10": mean(a for a, _ in per_q), "session_r@10": mean(s for _, s in per_q)}
    for c in CATEGORIES:
        sub = [p for q, p in zip(questions, per_q) if q.category == c]
        if sub:
            out[f"cat{c}"] = {"n": len(sub), "turn_any@10": mean(a for a, _ in sub), "session_r@10": mean(s for _, s in sub)}
    return out


def _client(url: str, key: str) -> httpx.Client:
    return httpx.Client(base_url=url.rstrip("/"), headers={"Authorization": f"Bearer {key}"}, timeout=120,
                        limits=httpx.Limits(max_connections=16, max_keepalive_connections=16))


def _post(http: httpx.Client, path: str, body: dict[str, Any]) -> httpx.Response:
    for attempt in range(6):
        resp = http.post(path, json=body)
        if resp.status_code not in (429, 503) or attempt == 5:
            return resp
        time.sleep(float(resp.headers.get("Retry-After", 0.5 * 2**attempt)))
    return resp


def through_http(url: str, key: str, turns: Sequence[Turn], questions: Sequence[Question], threads: int, log,
                 top_k: int = TOP_K) -> dict[str, Any]:
    """Write every turn, recall every question; per-question scores (a failed recall scores 0) and
    each question's hits as ``{"dias", "explanation"}`` (``top_k`` above 10 serves the weight fit)."""
    http = _client(url, key)
    errors: dict[str, int] = {}
    lock = threading.Lock()

    def fail(what: str) -> None:
        with lock:
            errors[what] = errors.get(what, 0) + 1

    def write(t: Turn) -> None:
        body = {"situation": t.text, "lesson": t.text, "action": "", "result": "",
                "tags": [f"dia:{t.dia_id}", f"session:{t.session}"], "agent_id": f"conv-{t.conv}", "source": "human"}
        try:
            if _post(http, "/v1/experiences", body).status_code != 201:
                fail("write")
        except httpx.HTTPError:
            fail("write")

    def ask(q: Question) -> list[dict[str, Any]]:
        try:
            resp = _post(http, "/v1/recall", {"query": q.query, "agent_id": f"conv-{q.conv}", "top_k": top_k})
            if resp.status_code != 200:
                fail("recall")
                return []
            return [{"dias": [t[4:] for t in h["experience"].get("tags", []) if t.startswith("dia:")],
                     "score": h["score"], "explanation": h["explanation"]} for h in resp.json()["hits"]]
        except httpx.HTTPError:
            fail("recall")
            return []

    try:
        t0 = time.monotonic()
        log(f"LoCoMo: writing {len(turns)} turns through HTTP ({threads} threads)...")
        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(write, turns))
        write_s = time.monotonic() - t0
        t0 = time.monotonic()
        log(f"LoCoMo: {len(questions)} recalls...")
        with ThreadPoolExecutor(threads) as pool:
            hits = list(pool.map(ask, questions))
        recall_s = time.monotonic() - t0
    finally:
        http.close()
    per_q = [score(q, [h["dias"] for h in hs]) for q, hs in zip(questions, hits)]
    return {**summarize(questions, per_q), "errors": errors, "write_s": write_s, "recall_s": recall_s,
            "turns_per_s": len(turns) / write_s if write_s else None, "per_question": per_q, "hits": hits}


def offline_baselines(turns: Sequence[Turn], questions: Sequence[Question],
                      embed: Callable[[list[str]], np.ndarray], log) -> dict[str, dict[str, Any]]:
    """BM25 alone, dense alone and their RRF fusion over each conversation's own turns."""
    t0 = time.monotonic()
    log("LoCoMo: offline baselines (BM25, dense MiniLM, RRF)...")
    vecs = offline.cached("minilm-doc", [t.text for t in turns], embed)
    qvecs = offline.cached("minilm-q", [q.query for q in questions], embed)
    by_conv: dict[int, list[int]] = {}
    for i, t in enumerate(turns):
        by_conv.setdefault(t.conv, []).append(i)
    bm25 = {c: offline.Bm25([turns[i].text for i in idx]) for c, idx in by_conv.items()}
    ranked: dict[str, list[list[list[str]]]] = {"bm25": [], "dense": [], "rrf": []}
    depth = 100
    for q, qv in zip(questions, qvecs):
        idx = by_conv[q.conv]
        lex = offline.top(bm25[q.conv].scores(q.query), depth, only_positive=True)
        dense = offline.top(vecs[idx] @ qv, depth)
        fused = offline.rrf([lex, dense], TOP_K)
        for name, order in (("bm25", lex[:TOP_K]), ("dense", dense[:TOP_K]), ("rrf", fused)):
            ranked[name].append([[turns[idx[j]].dia_id] for j in order])
    out = {name: summarize(questions, [score(q, r) for q, r in zip(questions, rs)]) for name, rs in ranked.items()}
    out["seconds"] = time.monotonic() - t0  # type: ignore[assignment]
    return out
