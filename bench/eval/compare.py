"""Two ``make eval --out`` runs side by side, test by test, with how far the difference can be read.

    .venv/bin/python -m bench.eval.compare BEFORE.json AFTER.json [--sets blind2,blind3,blind4]
        [--resamples 4000] [--seed 7]
    .venv/bin/python -m bench.eval.compare REPLAY.json#base REPLAY.json#VARIANT   (bench.eval.replay --out --tasks)

A change to the engine moves a handful of tests on each blind set, some up and some down; whether it
would move a set nobody tuned on the same way is the question. The tests of one family are not
independent draws (they share its lesson, its sibling and its wording), so the interval resamples
*families*, with their tests, not tests: a paired cluster bootstrap of the after - before difference
over the families of each set and over the families of all the sets pooled. An interval that holds 0
says the change is inside what another choice of families would have read; only one that excludes
0 on the pooled row says it generalises beyond the families it was decided on.

Tests are matched by set, family and query (a query asked twice in one family by its order), so the
two runs must be of the same families files; a test in one run only is counted and left out. The
eval is deterministic, so a run repeated gives the same figures: the noise this measures is that of
the sample of families, which is what a held-out set draws anew.
"""
from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np

from .independent import BLIND_SETS, PATHS, load, strict_first

# metric key -> (label, which recalls it reads, lower is better)
METRICS = {
    "hit@1": ("hit@1", "known", False),
    "strict_hit@1": ("strict@1", "known", False),
    "hit@3": ("hit@3", "known", False),
    "sibling@1": ("sib1st", "known", True),
    "unknown_hit@3": ("unk@3", "unknown", False),
}


def signed(x: float) -> str:
    return f"{x:+.3f}"


def outcome(metric: str, rec: dict[str, Any], family: str, sibling: str | None) -> float | None:
    """One test's value of ``metric`` (1 or 0), or None where the metric does not count it
    (sibling first counts only the tests of a family that has a sibling). The same definitions as
    ``independent.metrics``."""
    ranked = rec.get("ranked") or []
    rank = next((i for i, fams in enumerate(ranked) if family in fams), None)
    if metric == "hit@1":
        return float(rank == 0)
    if metric == "strict_hit@1":
        return float(strict_first(family, ranked))
    if metric in ("hit@3", "unknown_hit@3"):
        return float(rank is not None and rank < 3)
    if metric == "sibling@1":
        if not sibling:
            return None
        return float(bool(ranked) and family not in ranked[0] and sibling in ranked[0])
    raise ValueError(f"unknown metric {metric!r}")


def _keyed(recs: Iterable[dict[str, Any]]) -> dict[tuple[str, str, int], dict[str, Any]]:
    seen: Counter = Counter()
    out = {}
    for r in recs:
        k = (r["family"], r["query"])
        out[(*k, seen[k])] = r
        seen[k] += 1
    return out


@dataclass
class Paired:
    """Per family (the resampled unit): the sum of each run's outcomes and how many tests count."""
    clusters: list[tuple[str, str]]  # (set, family)
    before: np.ndarray  # (families,) sums
    after: np.ndarray
    counts: np.ndarray
    won: int  # tests 0 -> 1 (1 -> 0 for a lower-is-better metric)
    lost: int
    unmatched: int

    @property
    def n(self) -> int:
        return int(self.counts.sum())


def families_path(set_name: str, *results: dict[str, Any]) -> Path:
    """The families file a run of ``set_name`` was scored on: the path it recorded, or this
    checkout's file of that set when the run came from another checkout."""
    for r in results:
        if r.get("path") and Path(r["path"]).exists():
            return Path(r["path"])
    if set_name in PATHS:
        return PATHS[set_name]
    raise ValueError(f"{set_name}: its families file ({results[0].get('path') if results else None}) is not here")


def paired(before: dict[str, Any], after: dict[str, Any], set_name: str, metric: str,
           siblings: dict[str, str | None]) -> Paired:
    """The tests of ``set_name`` in both runs, grouped by family, for ``metric``."""
    _, which, lower = METRICS[metric]
    b, a = _keyed(before["tasks"][which]), _keyed(after["tasks"][which])
    fams: dict[str, list[float]] = {}
    won = lost = 0
    for key in sorted(b.keys() & a.keys()):
        fam = key[0]
        x, y = outcome(metric, b[key], fam, siblings.get(fam)), outcome(metric, a[key], fam, siblings.get(fam))
        if x is None or y is None:
            continue
        s = fams.setdefault(fam, [0.0, 0.0, 0])
        s[0] += x
        s[1] += y
        s[2] += 1
        if y != x:
            better = (y < x) if lower else (y > x)
            won, lost = won + better, lost + (not better)
    order = sorted(fams)
    return Paired(
        clusters=[(set_name, f) for f in order],
        before=np.array([fams[f][0] for f in order]), after=np.array([fams[f][1] for f in order]),
        counts=np.array([fams[f][2] for f in order], dtype=float),
        won=won, lost=lost, unmatched=len(b.keys() ^ a.keys()),
    )


def pooled(parts: Sequence[Paired]) -> Paired:
    return Paired(
        clusters=[c for p in parts for c in p.clusters],
        before=np.concatenate([p.before for p in parts]) if parts else np.zeros(0),
        after=np.concatenate([p.after for p in parts]) if parts else np.zeros(0),
        counts=np.concatenate([p.counts for p in parts]) if parts else np.zeros(0),
        won=sum(p.won for p in parts), lost=sum(p.lost for p in parts), unmatched=sum(p.unmatched for p in parts),
    )


def interval(values: np.ndarray, counts: np.ndarray, resamples: int, seed: int, level: float = 0.95) -> tuple[float, float]:
    """The percentile interval of sum(values) / sum(counts) over families drawn with replacement
    (``values``: per-family sums, a difference of two runs or one run's outcomes)."""
    k = len(counts)
    if k == 0 or counts.sum() == 0:
        return (float("nan"), float("nan"))
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, k, size=(resamples, k))
    num, den = values[idx].sum(axis=1), counts[idx].sum(axis=1)
    stats = num / np.where(den == 0, 1, den)
    tail = (1 - level) / 2
    return float(np.quantile(stats, tail)), float(np.quantile(stats, 1 - tail))


@dataclass(frozen=True)
class Row:
    set: str
    metric: str
    n: int
    families: int
    before: float
    after: float
    delta: float
    ci: tuple[float, float]
    won: int
    lost: int

    @property
    def readable(self) -> bool:
        """The interval excludes 0: the difference holds for another draw of families."""
        return self.ci[0] > 0 or self.ci[1] < 0


def spread(set_result: dict[str, Any], metric: str, siblings: dict[str, str | None],
           resamples: int = 4000, seed: int = 7) -> tuple[float, tuple[float, float]] | None:
    """One run's ``metric`` on one blind set and its 95% interval over families drawn with
    replacement: how far the figure would move on another draw of families like these."""
    if not (set_result.get("tasks") or {}).get(METRICS[metric][1]):
        return None
    p = paired(set_result, set_result, "", metric, siblings)
    if not p.n:
        return None
    return float(p.after.sum() / p.n), interval(p.after, p.counts, resamples, seed)


def over_raw(set_result: dict[str, Any], metric: str, siblings: dict[str, str | None],
             resamples: int = 4000, seed: int = 7) -> Row | None:
    """hindsight (tools known) against the raw-trajectory baseline of the same run, test by test:
    whether lessons beat raw retrieval beyond the draw of families. None for a run that did not
    keep the baseline's rankings, or a metric of the tools-unknown recalls (raw ignores tools)."""
    tasks = set_result.get("tasks") or {}
    if METRICS[metric][1] != "known" or not tasks.get("raw") or not tasks.get("known"):
        return None
    p = paired({"tasks": {"known": tasks["raw"]}}, {"tasks": {"known": tasks["known"]}}, "", metric, siblings)
    return row(p, "", metric, resamples, seed)


def spreads(set_result: dict[str, Any], metrics: Sequence[str] = ("hit@1", "sibling@1", "unknown_hit@3"),
            resamples: int = 4000, seed: int = 7) -> str:
    """``spread`` of a few metrics, then hindsight - raw (``over_raw``), as one line:
    "hit@1 0.880 [0.826, 0.924], ...; hindsight - raw: hit@1 +0.114 [+0.049, +0.179], ..."."""
    path = set_result.get("path")
    if not path or not Path(path).exists():
        return ""
    siblings = {f.id: f.sibling for f in load(path)}
    parts, gains = [], []
    for m in metrics:
        got = spread(set_result, m, siblings, resamples, seed)
        if got is not None:
            value, (lo, hi) = got
            parts.append(f"{METRICS[m][0]} {value:.3f} [{lo:.3f}, {hi:.3f}]")
        if (r := over_raw(set_result, m, siblings, resamples, seed)) is not None:
            gains.append(f"{METRICS[m][0]} {signed(r.delta)} [{signed(r.ci[0])}, {signed(r.ci[1])}]")
    return ", ".join(parts) + (f"; hindsight - raw: {', '.join(gains)}" if gains else "")


def row(p: Paired, set_name: str, metric: str, resamples: int, seed: int) -> Row:
    n = p.counts.sum()
    before = float(p.before.sum() / n) if n else float("nan")
    after = float(p.after.sum() / n) if n else float("nan")
    return Row(set_name, metric, int(n), len(p.clusters), before, after, after - before,
               interval(p.after - p.before, p.counts, resamples, seed), p.won, p.lost)


def compare(before: dict[str, Any], after: dict[str, Any], sets: Sequence[str] | None = None,
            metrics: Sequence[str] = tuple(METRICS), resamples: int = 4000, seed: int = 7) -> tuple[list[Row], dict[str, int]]:
    """Every metric of every blind set both runs hold, then pooled over those sets (when more than one)."""
    names = [s for s in (sets or BLIND_SETS) if s in before.get("sets", {}) and s in after.get("sets", {})
             and "tasks" in before["sets"][s] and "tasks" in after["sets"][s]]
    siblings = {s: {f.id: f.sibling for f in load(families_path(s, after["sets"][s], before["sets"][s]))} for s in names}
    rows: list[Row] = []
    unmatched: dict[str, int] = {}
    for m in metrics:
        parts = []
        for s in names:
            which = METRICS[m][1]
            if which not in before["sets"][s]["tasks"] or which not in after["sets"][s]["tasks"]:
                continue
            p = paired(before["sets"][s], after["sets"][s], s, m, siblings[s])
            unmatched[s] = max(unmatched.get(s, 0), p.unmatched)
            if not p.n:
                continue  # no test of the set counts for this metric
            parts.append(p)
            rows.append(row(p, s, m, resamples, seed))
        if len(parts) > 1:
            rows.append(row(pooled(parts), "pooled", m, resamples, seed))
    return rows, unmatched


def print_rows(rows: Sequence[Row], unmatched: dict[str, int], resamples: int, seed: int, out=print) -> None:
    out(f"paired comparison, after - before (tests matched by set, family and query; 95% intervals from "
        f"{resamples} resamples of families with their tests, seed {seed})")
    header = f"{'set':10} {'metric':9} {'tests':>5} {'fams':>4} {'before':>7} {'after':>7} {'diff':>7}  {'95% interval':17} {'won':>4} {'lost':>4}  reading"
    out(header)
    out("-" * len(header))
    for r in rows:
        lower = METRICS[r.metric][2]
        if not r.won and not r.lost:
            reading = "no test moved"
        elif not r.readable:
            reading = "inside the families' noise"
        else:
            reading = "better" if (r.delta < 0) == lower else "worse"
        out(f"{r.set:10} {METRICS[r.metric][0]:9} {r.n:>5} {r.families:>4} {r.before:7.3f} {r.after:7.3f} {signed(r.delta):>7}  "
            f"[{signed(r.ci[0])}, {signed(r.ci[1])}] {r.won:>4} {r.lost:>4}  {reading}")
    for s, n in unmatched.items():
        if n:
            out(f"{s}: {n} tests in one run only, left out (not the same families file?)")
    out("sib1st: lower is better (won = a test whose sibling no longer ranks first). A reading of better or")
    out("worse needs the interval to exclude 0; decide on the pooled row, never on one set's.")


def read_run(spec: str) -> dict[str, Any]:
    """An eval run (``python -m bench.eval --out``), or one variant of a replay report
    (``python -m bench.eval.replay --out F --tasks``) as ``F#variant`` (``F`` alone: its ``base``),
    in the eval's shape. A replay recalls the tools-known tests only, so its runs hold no unk@3."""
    path, _, variant = spec.partition("#")
    data = json.loads(Path(path).read_text())
    if "variants" not in data:
        if variant:
            raise ValueError(f"{path} is an eval run, not a replay report: it has no variant {variant!r}")
        return data
    name = variant or "base"
    if name not in data["variants"]:
        raise ValueError(f"{path} has no variant {name!r} (it has {', '.join(data['variants'])})")
    tasks = data["variants"][name].get("tasks")
    if not tasks:
        raise ValueError(f"{path}: replayed without --tasks, so it holds no per-test rankings")
    return {"sets": {s: {"path": str(PATHS[s]), "tasks": {"known": recs}} for s, recs in tasks.items() if s in PATHS}}


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.eval.compare", description=__doc__.split("\n\n")[0])
    p.add_argument("before", help="a `python -m bench.eval --out` JSON (the code before), or REPLAY.json#variant")
    p.add_argument("after", help="the same sets' JSON of the code after, or REPLAY.json#variant")
    p.add_argument("--sets", help=f"comma-separated subset of {','.join(BLIND_SETS)} (default: every one both hold)")
    p.add_argument("--resamples", type=int, default=4000)
    p.add_argument("--seed", type=int, default=7)
    args = p.parse_args(argv)
    if args.resamples < 100:
        p.error("--resamples must be at least 100")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    sets = [s.strip() for s in args.sets.split(",") if s.strip()] if args.sets else None
    try:
        before, after = read_run(args.before), read_run(args.after)
        rows, unmatched = compare(before, after, sets, resamples=args.resamples, seed=args.seed)
    except (OSError, ValueError) as exc:  # a file missing or malformed, a families file not here
        print(f"cannot read the runs: {exc}", file=sys.stderr)
        return 2
    if not rows:
        print("no blind set with per-test results in both runs (run `python -m bench.eval --out` on blind sets)", file=sys.stderr)
        return 2
    print_rows(rows, unmatched, args.resamples, args.seed)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
