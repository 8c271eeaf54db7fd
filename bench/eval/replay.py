"""Recall variants scored in process on the lessons of one recorded eval run, in seconds.

    .venv/bin/python -m bench.eval --sets reuse,blind2,blind3,blind4,locomo --reuse-tasks dev --keep-data DIR
    .venv/bin/python -m bench.eval.replay DIR [--variant NAME:FIELD=VALUE,...]... [--margins] [--out F]

``--keep-data`` keeps the fresh server's data directory (its SQLite stores and vector index: every
lesson with its text, vector, tags and sources) and the run's ids. The replay opens a copy of it with
the embedded backend in this process and recalls the dev sets' test queries (experience_reuse dev,
blind2, blind3, blind4 and LoCoMo when they were recorded) through ``services.recall.recall``, the function
the HTTP route calls, then scores them with the eval's own metrics. Every variant therefore ranks the same lessons;
only recall differs. A variant sets fields of the service's ``Deps`` (``recall_negation=false``,
``weights.lexical=0.3``). The held-out sets are never recalled here. The clock is fixed at the end of
the recording, so freshness is the same in every replay.

The first row, ``base``, is the recorded settings; it should match the HTTP figures of the run that
kept the data (same lessons, same code), which checks the replay itself. A decision still comes from
``python -m bench.eval`` runs of both codes in the same period.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Sequence

FILES = ("hindsight.db", "vectors.db", "admin_key")
RUN_FILE = "run.json"


def keep(server, dest: str | Path, nonce: str, locomo_path: str | None) -> None:
    """Stop ``server`` (so SQLite is at rest) and copy its data and the run's ids to ``dest``."""
    from devtools.process import terminate

    terminate(server.proc)
    dest = Path(dest)
    (dest / "data").mkdir(parents=True, exist_ok=True)
    for f in server.data_dir.iterdir():
        if f.name.startswith(FILES):
            shutil.copy2(f, dest / "data" / f.name)
    (dest / RUN_FILE).write_text(json.dumps({
        "nonce": nonce, "locomo": locomo_path, "recorded_at": datetime.now(timezone.utc).isoformat(),
    }, indent=2))
    print(f"server data kept in {dest} (python -m bench.eval.replay {dest})", file=sys.stderr, flush=True)


@dataclasses.dataclass(frozen=True)
class FixedClock:
    at: datetime

    def now(self) -> datetime:
        return self.at


def open_deps(kept: Path, workdir: Path):
    """The embedded backend over a copy of the kept data, the clock at the recording's end."""
    from chalicelib.container import build_embedded
    from chalicelib.settings import Settings

    run = json.loads((kept / RUN_FILE).read_text())
    data = workdir / "data"
    shutil.copytree(kept / "data", data)
    deps = build_embedded(Settings(data_dir=str(data), embedder="minilm", backend="embedded"))
    return dataclasses.replace(deps, clock=FixedClock(datetime.fromisoformat(run["recorded_at"]))), run


def _convert(old: Any, value: str) -> Any:
    if isinstance(old, bool):
        if value.lower() not in ("true", "false", "1", "0"):
            raise ValueError(f"not a boolean: {value!r}")
        return value.lower() in ("true", "1")
    if isinstance(old, int):
        return int(value)
    if isinstance(old, float) or old is None:
        return float(value)
    return value


def with_settings(deps, assignments: Sequence[str]):
    """``deps`` with fields replaced: ``field=value`` or ``weights.field=value``."""
    for a in assignments:
        key, _, value = a.partition("=")
        key = key.strip()
        if "." in key:
            outer, inner = key.split(".", 1)
            sub = getattr(deps, outer)
            deps = dataclasses.replace(deps, **{outer: dataclasses.replace(sub, **{inner: _convert(getattr(sub, inner), value)})})
        else:
            if not hasattr(deps, key):
                raise SystemExit(f"Deps has no field {key!r}")
            deps = dataclasses.replace(deps, **{key: _convert(getattr(deps, key), value)})
    return deps


def parse_variant(spec: str) -> tuple[str, list[str]]:
    name, _, rest = spec.partition(":")
    return name, [a for a in rest.split(",") if a.strip()]


class InProcessApi:
    """The ``Api.recall`` of the eval's recall loops, answered by the service in this process with
    the HTTP route's answer shape."""

    def __init__(self, deps, tenant_id: str) -> None:
        self.deps, self.tenant_id = deps, tenant_id
        self.calls, self.seconds = 0, 0.0

    def recall(self, **body: Any) -> dict[str, Any]:
        from chalicelib.api.presenters import hit_out
        from chalicelib.services import recall as recall_service

        body = {k: v for k, v in body.items() if v not in (None, [], ())}
        t0 = time.perf_counter()
        hits, advice = recall_service.recall(self.deps, self.tenant_id, **body)
        self.seconds += time.perf_counter() - t0
        self.calls += 1
        return {"hits": [hit_out(h).model_dump(mode="json") for h in hits], "advice": advice}


def tenants(deps) -> dict[str, str]:
    return {t.name: t.tenant_id for t in deps.tenants.list_tenants()}


def score_reuse(deps, tenant_id: str, nonce: str, top_k: int) -> tuple[dict[str, Any], list]:
    from bench.experience_reuse import run as xr
    from bench.experience_reuse.dataset import select

    from . import reuse

    fams = select(None)
    tasks = xr.with_tasks(fams, "dev")  # never the held-out tasks
    api = InProcessApi(deps, tenant_id)
    agent = f"xr-agent-{nonce}"
    known = xr.recall_condition(api, tasks, nonce, agent, top_k, known=True)
    unknown = xr.recall_condition(api, tasks, nonce, agent, top_k, known=False)
    xr.simulate(known, {f.id: f for f in tasks}, seed=7)
    return {**reuse._row(fams, known, unknown), "ms": 1000 * api.seconds / max(api.calls, 1)}, known


def score_blind(deps, tenant_id: str, nonce: str, top_k: int, path: Path) -> tuple[dict[str, Any], list]:
    """The figures of the blind dev set whose families.json is ``path``."""
    from . import independent

    fams = independent.load(path)
    api = InProcessApi(deps, tenant_id)
    agent = f"{independent.PREFIX}-agent-{nonce}"
    known = independent.recall(api, fams, nonce, agent, top_k, known=True)
    unknown = independent.recall(api, fams, nonce, agent, top_k, known=False)
    return {**independent.metrics(fams, known, unknown), "ms": 1000 * api.seconds / max(api.calls, 1)}, known


def score_locomo(deps, tenant_id: str, path: str) -> dict[str, Any]:
    from chalicelib.services import recall as recall_service

    from . import locomo

    turns, questions = locomo.load(path)
    per_q = []
    t0 = time.perf_counter()
    for q in questions:
        hits, _ = recall_service.recall(deps, tenant_id, q.query, agent_id=f"conv-{q.conv}", top_k=locomo.TOP_K)
        per_q.append(locomo.score(q, [[t[4:] for t in h.experience.tags if t.startswith("dia:")] for h in hits]))
    out = locomo.summarize(questions, per_q)
    return {"turn_any@10": out["turn_any@10"], "session_r@10": out["session_r@10"], "n": out["n"],
            "ms": 1000 * (time.perf_counter() - t0) / max(len(questions), 1)}


def margins(deps, tenant_id: str, nonce: str, recs: list, path: Path, depth: int = 10) -> list[dict[str, Any]]:
    """A blind set's sibling-first cases (its families at ``path``): the sibling's first hit against
    the test's own best one, each with its score parts, so that what decided the order shows."""
    from chalicelib.services import recall as recall_service

    from . import independent

    fams = {f.id: f for f in independent.load(path)}
    agent = f"{independent.PREFIX}-agent-{nonce}"
    out = []
    for r in recs:
        fam = fams[r.family]
        if not r.ranked or r.family in r.ranked[0] or fam.sibling not in r.ranked[0]:
            continue
        hits, _ = recall_service.recall(deps, tenant_id, r.query, agent_id=agent, tools=fam.tools,
                                        task_type=fam.task_type, top_k=depth)
        fams_of = [independent.families_of(h.experience.sources, nonce) for h in hits]
        own = next((h for h, f in zip(hits, fams_of) if r.family in f), None)
        first = hits[0]

        def parts(h) -> dict[str, Any]:
            e = h.explanation
            return {"score": h.score, "semantic": e.semantic, "lexical": e.lexical, "tag_match": e.tag_match,
                    "situation": h.experience.situation[:160], "advice": h.experience.advice[:160],
                    "families": independent.families_of(h.experience.sources, nonce)}

        out.append({"family": r.family, "query": r.query, "first": parts(first), "own": parts(own) if own else None})
    return out


def cost(deps, tenant_id: str, nonce: str, assignments: Sequence[str], rounds: int = 2) -> dict[str, float]:
    """In-process recall time (ms, p50) of blind2's queries (tools known) under ``base`` and the
    variant, interleaved query by query; the variant twice: with its embedder's token-vector cache
    emptied before each recall (cold: every candidate's tokens computed) and kept (warm)."""
    from statistics import median

    from chalicelib.services import recall as recall_service

    from . import independent

    fams = independent.load(independent.PATHS["blind2"])
    agent = f"{independent.PREFIX}-agent-{nonce}"
    variant = with_settings(deps, assignments)
    cache = getattr(variant.embedder, "_tokens", None)
    times: dict[str, list[float]] = {"base": [], "cold": [], "warm": []}
    for _ in range(rounds):
        for f in fams:
            for query in f.tests:
                for label, d in (("base", deps), ("cold", variant), ("warm", variant)):
                    if label == "cold" and cache is not None:
                        cache.clear()
                    t0 = time.perf_counter()
                    recall_service.recall(d, tenant_id, query, agent_id=agent, tools=f.tools, task_type=f.task_type)
                    times[label].append(1000 * (time.perf_counter() - t0))
    return {k: median(v) for k, v in times.items()}


def print_rows(rows: list[tuple[str, str, dict[str, Any]]]) -> None:
    from .run import COLUMNS, cell

    cols = [c for c in COLUMNS if any(c[0] in m for _, _, m in rows)] + [("ms", "ms/recall", False)]
    header = f"{'set':18} {'variant':22} " + " ".join(f"{h:>9}" for _, h, _ in cols)
    print(header)
    print("-" * len(header))
    for name, variant, m in rows:
        print(f"{name:18} {variant:22} " + " ".join(
            f"{(f'{m[k]:.1f}' if k == 'ms' and m.get(k) is not None else cell(m.get(k), pct)):>9}" for k, _, pct in cols))


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.eval.replay", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("kept", help="the directory `python -m bench.eval --keep-data` wrote")
    p.add_argument("--variant", action="append", default=[], metavar="NAME:FIELD=VALUE,...",
                   help="a recall variant (Deps fields; weights.X for a weight); repeatable")
    p.add_argument("--sets", default="reuse,blind2,blind3,blind4,locomo")
    p.add_argument("--top-k", type=int, default=5)
    p.add_argument("--margins", action="store_true", help="print the blind sets' sibling-first cases of each variant")
    p.add_argument("--out", help="write every variant's figures (and margins) as JSON here")
    p.add_argument("--tasks", action="store_true", help="with --out: each blind test's ranked families too")
    p.add_argument("--cost", metavar="NAME", help="time blind2's recalls under base and this variant (cold and warm)")
    args = p.parse_args(argv)
    kept = Path(args.kept)
    sets = [s.strip() for s in args.sets.split(",") if s.strip()]
    if set(sets) - {"reuse", "blind2", "blind3", "blind4", "locomo"}:
        p.error("replay scores the dev sets only: reuse, blind2, blind3, blind4, locomo")
    from . import independent

    with tempfile.TemporaryDirectory(prefix="hindsight-replay-") as tmp:
        base, run = open_deps(kept, Path(tmp))
        ids = tenants(base)
        nonce = run["nonce"]
        variants = [("base", [])] + [parse_variant(v) for v in args.variant]
        rows: list[tuple[str, str, dict[str, Any]]] = []
        report: dict[str, Any] = {"kept": str(kept), "variants": {}}
        for name, assignments in variants:
            deps = with_settings(base, assignments)
            res: dict[str, Any] = {"settings": assignments}
            if "reuse" in sets and f"eval-reuse-{nonce}" in ids:
                res["reuse"], _ = score_reuse(deps, ids[f"eval-reuse-{nonce}"], nonce, args.top_k)
                rows.append(("experience_reuse", name, res["reuse"]))
            for blind in ("blind2", "blind3", "blind4"):
                path = independent.PATHS[blind]
                if blind in sets and f"eval-{blind}-{nonce}" in ids:
                    res[blind], recs = score_blind(deps, ids[f"eval-{blind}-{nonce}"], nonce, args.top_k, path)
                    rows.append((blind, name, res[blind]))
                    if args.tasks:
                        res.setdefault("tasks", {})[blind] = [{"family": r.family, "query": r.query, "ranked": r.ranked}
                                                              for r in recs]
                    if args.margins:
                        res.setdefault("margins", []).extend(margins(deps, ids[f"eval-{blind}-{nonce}"], nonce, recs, path))
            if "locomo" in sets and run.get("locomo") and f"eval-locomo-{nonce}" in ids:
                res["locomo"] = score_locomo(deps, ids[f"eval-locomo-{nonce}"], run["locomo"])
                rows.append(("LoCoMo", name, res["locomo"]))
            report["variants"][name] = res
            print(f"  {name} done", file=sys.stderr, flush=True)
        print_rows(sorted(rows, key=lambda r: r[0]))
        if args.cost:
            spec = dict(variants)[args.cost]
            c = cost(base, ids[f"eval-blind2-{nonce}"], nonce, spec)
            report["cost"] = c
            print(f"\nin-process recall p50, blind2 queries interleaved: base {c['base']:.1f} ms, {args.cost} with "
                  f"token vectors computed {c['cold']:.1f} ms ({c['cold'] / c['base']:.2f}x), cached {c['warm']:.1f} ms "
                  f"({c['warm'] / c['base']:.2f}x)")
        if args.margins:
            for name, res in report["variants"].items():
                for m in res.get("margins", []):
                    f, o = m["first"], m["own"]
                    print(f"\n[{name}] {m['family']}: {m['query']}")
                    print(f"  first {f['families']} {f['score']:.4f} sem {f['semantic']:.3f} lex {f['lexical']:.3f} tag {f['tag_match']:.3f}: {f['advice']}")
                    if o:
                        print(f"  own   {o['families']} {o['score']:.4f} sem {o['semantic']:.3f} lex {o['lexical']:.3f} tag {o['tag_match']:.3f}: {o['advice']}")
                    else:
                        print("  own   not in the top 10")
        if args.out:
            Path(args.out).write_text(json.dumps(report, indent=2, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
