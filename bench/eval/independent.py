"""The independent set (``bench/independent/families.json``, written from the contract alone by
someone who has not read the engine) through the public HTTP API, beside a raw-retrieval baseline.

Each training trajectory is posted under one agent as ``ind.<run>.<family>.<n>``, finalized, and
reviewed; each test query is recalled with the family's tools and task type (tools known) and with
the agent only (tools unknown); hits map to families through their ``sources``. The baseline ranks
a plain-text rendering of every whole training trajectory by MiniLM cosine, without any review.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from statistics import mean
from typing import Any, Callable, Sequence

import numpy as np

from bench import sets

from . import offline

PREFIX = "ind"
BLIND_SETS = sets.BLIND_SETS  # sets in this format, and their role
PATHS = {name: sets.SETS[name].path for name in BLIND_SETS}  # each set's file here


@dataclass(frozen=True)
class Fam:
    id: str
    domain: str
    tools: tuple[str, ...]
    sibling: str | None
    task_type: str | None
    fix: str
    fix_terms: tuple[str, ...]
    train: tuple[dict[str, Any], ...]
    tests: tuple[str, ...]


def load(path: str | Path) -> list[Fam]:
    """The families of a file in the blind format, checked by ``bench.sets.schema_errors`` so that a
    malformed file fails with a clear message."""
    data = sets.read(path)
    errors = sets.schema_errors(data)
    if errors:
        more = f" (and {len(errors) - 5} more)" if len(errors) > 5 else ""
        raise ValueError(f"{path}: " + "; ".join(errors[:5]) + more)
    return [Fam(id=f["id"], domain=str(f.get("domain", "")), tools=tuple(f["tools"]), sibling=f.get("sibling"),
                task_type=f.get("task_type"), fix=str(f.get("fix", "")), fix_terms=tuple(f.get("fix_terms") or ()),
                train=tuple(f["train"]), tests=tuple(t["query"] for t in f["tests"]))
            for f in data["families"]]


def traj_id(nonce: str, fam: str, n: int) -> str:
    return f"{PREFIX}.{nonce}.{fam}.{n}"


def families_of(sources: Sequence[str], nonce: str) -> list[str]:
    head = f"{PREFIX}.{nonce}."
    out: list[str] = []
    for s in sources or ():
        s = str(s)
        if s.startswith(head):
            fam = s[len(head):].rsplit(".", 1)[0]
            if fam not in out:
                out.append(fam)
    return out


def with_ids(events: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{**e, "event_id": f"e{i}"} for i, e in enumerate(events)]


def render(fam: Fam, run: dict[str, Any]) -> str:
    """A whole raw trajectory as plain text: goal, every event, outcome."""
    lines = [f"Goal: {run['goal']}", f"Task type: {fam.task_type or '-'}. Tools: {', '.join(fam.tools)}."]
    for e in run.get("events", []):
        c = e.get("content") or {}
        kind = e.get("type")
        if kind == "tool_call":
            params = json.dumps(c.get("params", {}), sort_keys=True, default=str)
            if c.get("status") == "error" or c.get("error"):
                lines.append(f"Call {c.get('tool')}({params}) -> error: {c.get('error')}")
            else:
                lines.append(f"Call {c.get('tool')}({params}) -> ok: {json.dumps(c.get('result'), default=str)}")
        elif kind == "feedback":
            lines.append(f"User feedback ({c.get('sentiment', '')}): {c.get('text', '')}")
        elif kind == "state_change":
            lines.append(f"State: {c.get('key')} = {json.dumps(c.get('value'), default=str)}")
        elif kind in ("user_input", "llm_reasoning"):
            lines.append(f"{'User' if kind == 'user_input' else 'Thought'}: {c.get('text', '')}")
    lines.append(f"Outcome: {run.get('outcome', 'success')}.")
    return "\n".join(lines)


def names_fix(text: str, fam: Fam) -> bool:
    """One of the family's fix terms occurs in the text (case-insensitive). The set's README: the
    terms are words an advice naming the fix would contain, alternatives ("alpha-2", "iso",
    "country code"), chosen not to name the sibling's fix."""
    low = text.lower()
    return any(t.lower() in low for t in fam.fix_terms)


@dataclass
class Rec:
    family: str
    query: str
    ranked: list[list[str]]  # families of each ranked item
    text: str = ""  # what the agent would read: the advice block, or the top raw trajectories
    top: list[dict[str, Any]] = field(default_factory=list)

    def rank(self) -> int | None:
        return next((i for i, fams in enumerate(self.ranked) if self.family in fams), None)


def strict_first(family: str, ranked: Sequence[Sequence[str]]) -> bool:
    """The first item was learned from the test's own family only: a lesson merged from the runs of
    both siblings ranks first for either sibling's tests, so hit@1 counts it twice; this does not."""
    return bool(ranked) and set(ranked[0]) == {family}


def same_tool_siblings(fams: Sequence[Fam]) -> set[str]:
    by = {f.id: f for f in fams}
    return {f.id for f in fams if f.sibling and set(f.tools) & set(by[f.sibling].tools)}


def metrics(fams: Sequence[Fam], recs: Sequence[Rec], unknown: Sequence[Rec] | None = None) -> dict[str, Any]:
    """hit@1/hit@3/MRR over every test; sibling first over the tests of families that have a sibling
    (and over those whose sibling shares a tool); the fix named in what the agent reads."""
    by = {f.id: f for f in fams}
    same_tool = same_tool_siblings(fams)
    ranks = [r.rank() for r in recs]

    def sib_first(rs: list[Rec]) -> float | None:
        if not rs:
            return None
        return mean(1.0 if r.ranked and r.family not in r.ranked[0] and by[r.family].sibling in r.ranked[0] else 0.0 for r in rs)

    out: dict[str, Any] = {
        "n": len(recs),
        "hit@1": mean(1.0 if k == 0 else 0.0 for k in ranks),
        "strict_hit@1": mean(1.0 if strict_first(r.family, r.ranked) else 0.0 for r in recs),
        "hit@3": mean(1.0 if k is not None and k < 3 else 0.0 for k in ranks),
        "mrr": mean(1.0 / (k + 1) if k is not None else 0.0 for k in ranks),
        "sibling@1": sib_first([r for r in recs if by[r.family].sibling]),
        "same_tool_sibling@1": sib_first([r for r in recs if r.family in same_tool]),
        "names_fix": mean(1.0 if names_fix(r.text, by[r.family]) else 0.0 for r in recs),
        "missing@3": sum(1 for k in ranks if k is None or k >= 3),
    }
    if unknown is not None:
        out["unknown_hit@3"] = mean(1.0 if (k := r.rank()) is not None and k < 3 else 0.0 for r in unknown)
    return out


def record(api, fams: Sequence[Fam], nonce: str, agent_id: str) -> list[str]:
    ids = []
    for f in fams:
        for n, run in enumerate(f.train):
            tid = traj_id(nonce, f.id, n)
            body = {"trajectory_id": tid, "agent_id": agent_id, "goal": run["goal"], "tools": list(f.tools)}
            if f.task_type:
                body["task_type"] = f.task_type
            api.record(body, with_ids(run.get("events", [])), run.get("outcome", "success"))
            ids.append(tid)
    return ids


def recall(api, fams: Sequence[Fam], nonce: str, agent_id: str, top_k: int, known: bool) -> list[Rec]:
    out = []
    for f in fams:
        for q in f.tests:
            body: dict[str, Any] = {"query": q, "agent_id": agent_id, "top_k": top_k}
            if known:
                body["tools"] = list(f.tools)
                if f.task_type:
                    body["task_type"] = f.task_type
            resp = api.recall(**body)
            hits = resp.get("hits", [])
            out.append(Rec(f.id, q, [families_of(h["experience"].get("sources", []), nonce) for h in hits],
                           text=resp.get("advice", ""),
                           top=[{"families": families_of(h["experience"].get("sources", []), nonce),
                                 "sources": h["experience"].get("sources", []),
                                 "score": h.get("score"), "advice": h["experience"].get("advice", "")} for h in hits]))
    return out


def raw_baseline(fams: Sequence[Fam], embed: Callable[[list[str]], np.ndarray], top_k: int, read: int = 3) -> list[Rec]:
    """Plain dense search over whole raw trajectories; the agent would read the top ``read`` of them."""
    docs = [(f.id, render(f, run)) for f in fams for run in f.train]
    vecs = embed([t for _, t in docs])
    tests = [(f, q) for f in fams for q in f.tests]
    qv = embed([q for _, q in tests])
    out = []
    for (f, q), v in zip(tests, qv):
        order = offline.top(vecs @ v, top_k)
        out.append(Rec(f.id, q, [[docs[j][0]] for j in order], text="\n".join(docs[j][1] for j in order[:read]),
                       top=[{"families": [docs[j][0]], "score": round(float(vecs[j] @ v), 4)} for j in order]))
    return out


def run(api, fams: Sequence[Fam], nonce: str, embed, top_k: int, review_timeout: float, log) -> dict[str, Any]:
    agent_id = f"ind-agent-{nonce}"
    log(f"independent set: recording {sum(len(f.train) for f in fams)} trajectories of {len(fams)} families...")
    ids = record(api, fams, nonce, agent_id)
    reviewed = api.wait_reviewed(ids, review_timeout)
    known = recall(api, fams, nonce, agent_id, top_k, known=True)
    unknown = recall(api, fams, nonce, agent_id, top_k, known=False)
    raw = raw_baseline(fams, embed, top_k)
    exps = [e for e in api.experiences(agent_id) if families_of(e.get("sources", []), nonce)]
    return {
        "families": len(fams), "tests": len(known), "trajectories": len(ids),
        "review_failed": sum(1 for t in reviewed.values() if t["status"] == "review_failed"),
        "experiences": len(exps), "same_tool_sibling_families": len(same_tool_siblings(fams)),
        "hindsight": metrics(fams, known, unknown),
        "raw": metrics(fams, raw, raw),
        # the raw baseline's ranking too (not the trajectories it would show), for paired intervals (``compare``)
        "tasks": {"known": [r.__dict__ for r in known], "unknown": [r.__dict__ for r in unknown],
                  "raw": [{"family": r.family, "query": r.query, "ranked": r.ranked} for r in raw]},
    }
