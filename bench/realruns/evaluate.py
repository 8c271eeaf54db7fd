"""The real-runs set through the public HTTP API, beside raw retrieval measured in the same run.

1. Runs are replayed against the environment's tools (``runs``, the environment's catalog): for
   every task a gold run and runs with realistic mistakes. Tasks are split: the training tasks'
   runs are recorded (``POST /v1/trajectories``, events, finalize with the run's outcome) and
   reviewed by the server; the dev and held-out tasks' runs are never recorded as training.
2. Each dev and held-out run is then played as an agent with memory plays it: a trajectory of its
   own (its own ``user_id``, so nothing one run teaches reaches another), a recall at its start
   (``POST /v1/recall`` with the goal, top 3), and before every call ``POST /v1/advise`` with the
   call and the trajectory's id, then the call's real answer appended as an event. The runs are
   never finalized.
3. ``metrics`` turns what was said before each call into the figures, for the service and for raw
   retrieval (``raw``), and audits the lessons learned (``GET /v1/experiences``).
"""
from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from . import metrics as m
from .env import Environment, Task
from .raw import RawErrors, RawRuns, failed_tools, params_by_run
from .runs import Catalog, Run, build, events, render, trajectory

PREFIX = "rr"


@dataclass(frozen=True)
class Roles:
    train: tuple[Task, ...]
    dev: tuple[Task, ...]
    heldout: tuple[Task, ...]


def retail_roles(env: Environment, train_tasks: int) -> Roles:
    """Training: the first ``train_tasks`` tasks of the train split but every fourth; dev: every
    fourth of them and the dev split; held-out: the test split (report only, never tuned on)."""
    first = env.tasks["train"][:train_tasks]
    return Roles(tuple(t for t in first if t.index % 4 != 3),
                 tuple([t for t in first if t.index % 4 == 3] + list(env.tasks.get("dev", ()))),
                 tuple(env.tasks.get("test", ())))


def make_runs(env: Environment, catalog: Catalog, roles: Roles, nonce: str, mistakes: int, seed: int,
              which: Sequence[str]) -> dict[str, list[Run]]:
    out = {"train": build(env, catalog, roles.train, mistakes, seed, f"{PREFIX}.{nonce}.train")}
    for n, role in enumerate(("dev", "heldout"), start=1):
        if role in which:
            out[role] = build(env, catalog, getattr(roles, role), mistakes, seed + n, f"{PREFIX}.{nonce}.{role}")
    return out


def record_training(api, runs: Sequence[Run], agent_id: str, tools: Sequence[str]) -> list[str]:
    for r in runs:
        api.record(trajectory(r, agent_id, tools), events(r), r.outcome)
    return [r.id for r in runs]


def _lesson_text(exp: dict[str, Any]) -> str:
    return " ".join(str(exp.get(k) or "") for k in ("situation", "lesson", "advice"))


class Lessons:
    """The experiences the warnings and hits name, read once each."""

    def __init__(self, api) -> None:
        self.api = api
        self.by_id: dict[str, dict[str, Any]] = {}

    def add(self, exps: Sequence[dict[str, Any]]) -> None:
        for e in exps:
            self.by_id[e["experience_id"]] = e

    def get(self, exp_id: str) -> dict[str, Any]:
        if exp_id not in self.by_id:
            self.by_id[exp_id] = self.api.call("GET", f"/v1/experiences/{exp_id}")
        return self.by_id[exp_id]

    def warned(self, w: dict[str, Any]) -> m.Warned:
        exp = self.get(w["experience_id"])
        return m.Warned(tuple(exp.get("tools") or ()), _lesson_text(exp), str(w.get("message") or ""), str(w.get("fix") or ""))

    def hit(self, h: dict[str, Any]) -> m.Warned:
        exp = h["experience"]
        self.by_id.setdefault(exp["experience_id"], exp)
        return m.Warned(tuple(exp.get("tools") or ()), _lesson_text(exp), "", str(exp.get("advice") or ""))


def play(api, run: Run, agent_id: str, tools: Sequence[str], lessons: Lessons) -> tuple[list[m.CallRecord], m.RunRecord]:
    """One evaluation run as an agent with memory plays it (see the module's docstring)."""
    user = f"u.{run.id}"
    api.call("POST", "/v1/trajectories", trajectory(run, agent_id, tools, user_id=user))
    recalled = api.recall(query=run.goal, agent_id=agent_id, user_id=user, tools=list(tools), top_k=3)
    top = [lessons.hit(h) for h in recalled.get("hits", [])]
    evs = events(run)
    api.call("POST", f"/v1/trajectories/{run.id}/events", {"events": evs[:1]})
    calls = []
    for i, c in enumerate(run.calls, start=1):
        adv = api.call("POST", "/v1/advise", {"tool": c.tool, "params": dict(c.params), "goal": run.goal,
                                               "agent_id": agent_id, "user_id": user, "trajectory_id": run.id})
        warned = [lessons.warned(w) for w in adv.get("warnings", [])]
        calls.append(m.CallRecord(run.id, c.tool, c.failed, m.template(c.answer) if c.failed else None, warned))
        api.call("POST", f"/v1/trajectories/{run.id}/events", {"events": [evs[i]]})
    return calls, run_record(run, top)


def run_record(run: Run, top: list[m.Warned]) -> m.RunRecord:
    k = run.first_error()
    d = run.plan.decision
    decision = None if d is None else {"kind": d.kind, "tool": d.tool, "before": d.before, "param": d.param}
    if k is not None:
        c = run.calls[k]
        return m.RunRecord(run.id, run.outcome == "failure", c.tool, m.template(c.answer), decision, top)
    return m.RunRecord(run.id, run.outcome == "failure", d.tool if d else None, None, decision, top)


def raw_side(train: Sequence[Run], runs: Sequence[Run], raw: RawErrors, raw_runs: RawRuns) -> tuple[list[m.CallRecord], list[m.RunRecord]]:
    calls, recs = [], []
    for run in runs:
        for c in run.calls:
            calls.append(m.CallRecord(run.id, c.tool, c.failed, m.template(c.answer) if c.failed else None,
                                      raw.warn(run.goal, c)))
        top = []
        for r in raw_runs.top(run.goal):
            k = r.first_error()
            first = r.calls[k] if k is not None else None
            d = r.plan.decision
            names = [f"`{d.tool}`"] + [f"`{x}`" for x in (d.before, d.param) if x] if d else []
            top.append(m.Warned((first.tool,) if first else ((d.tool,) if d else ()),
                                f'"{first.answer}"' if first else "", "", " ".join(names)))
        recs.append(run_record(run, top))
    return calls, recs


def tool_ever_failed(runs: Sequence[Run], failed: set[str]) -> list[m.CallRecord]:
    """The trivial reference: a warning on every call of a tool that ever failed in training."""
    return [m.CallRecord(r.id, c.tool, c.failed, m.template(c.answer) if c.failed else None,
                         [m.Warned((c.tool,), "", f"`{c.tool}` failed before", "")] if c.tool in failed else [])
            for r in runs for c in r.calls]


def figures(calls, recs, seen, failed, subjects, known) -> dict[str, Any]:
    f = m.call_figures(calls, seen, failed, subjects)
    f["warned_any_before_error"] = m._share([bool(c.warnings) for c in calls if c.failed and (c.tool, c.tmpl) in seen])
    if recs is not None:
        f |= m.recall_figures(recs, known)
    return f


def run(api, env: Environment, catalog: Catalog, subjects: m.Subjects, roles: Roles, nonce: str, review_timeout: float,
        log: Callable[[str], None], which: Sequence[str] = ("dev", "heldout"), mistakes: int = 2, seed: int = 7) -> dict[str, Any]:
    agent_id = f"rr-agent-{nonce}"
    tools = sorted(env.tools)
    runs = make_runs(env, catalog, roles, nonce, mistakes, seed, which)
    train = runs["train"]
    log(f"real runs ({env.name}): recording {len(train)} training runs of {len(roles.train)} tasks...")
    ids = record_training(api, train, agent_id, tools)
    reviewed = api.wait_reviewed(ids, review_timeout)
    lessons = Lessons(api)
    learned = api.experiences(agent_id)
    lessons.add(learned)
    seen = {(c.tool, m.template(c.answer)) for r in train for c in r.calls if c.failed}
    known = {t for _, t in seen}
    failed = failed_tools(train)
    raw = RawErrors(train)
    threshold = raw.fit_threshold(train)
    raw_runs = RawRuns(train, render)
    out: dict[str, Any] = {
        "environment": env.name,
        "tasks": {"train": len(roles.train), **{w: len(getattr(roles, w)) for w in which}},
        "runs": {k: dict(Counter(r.outcome for r in v)) for k, v in runs.items()},
        "mistakes": dict(Counter(r.plan.mistake for r in train if r.plan.mistake)),
        "training_templates": len(seen),
        "review_failed": sum(1 for t in reviewed.values() if t["status"] == "review_failed"),
        "raw_threshold": threshold,
        "lessons": m.lesson_figures(learned, (*env.escape_tools, *env.scratch_tools), m.one_run_literals(params_by_run(train))),
        "lesson_kinds": dict(Counter(_kind(e) for e in learned)),
    }
    for role in which:
        log(f"real runs ({env.name}): advising and recalling {len(runs[role])} {role} runs...")
        calls, recs = [], []
        for r in runs[role]:
            c, rec = play(api, r, agent_id, tools, lessons)
            calls += c
            recs.append(rec)
        raw_calls, raw_recs = raw_side(train, runs[role], raw, raw_runs)
        out[role] = {
            "hindsight": figures(calls, recs, seen, failed, subjects, known),
            "raw": figures(raw_calls, raw_recs, seen, failed, subjects, known),
            "tool_ever_failed": figures(tool_ever_failed(runs[role], failed), None, seen, failed, subjects, known),
            "examples": examples(calls, seen, known),
        }
    return out


def _kind(exp: dict[str, Any]) -> str:
    advice = str(exp.get("advice") or "")
    for key, name in (("instead of", "swap"), ("Do not retry", "retry"), ("before", "order"), ("When you call", "param"),
                      ("objected", "feedback")):
        if key in advice:
            return name
    return "other"


def examples(calls: Sequence[m.CallRecord], seen, known, n: int = 12) -> list[dict[str, Any]]:
    """One warning per (tool, template) that failed: what the agent was told before the error."""
    out, done = [], set()
    for c in calls:
        if not c.failed or (c.tool, c.tmpl) in done or not c.warnings:
            continue
        done.add((c.tool, c.tmpl))
        w = next((w for w in c.warnings if m.about(w, c.tool, c.tmpl or "", known)), c.warnings[0])
        out.append({"tool": c.tool, "error": c.tmpl, "seen": (c.tool, c.tmpl) in seen, "message": w.message, "fix": w.fix})
        if len(out) >= n:
            break
    return out


# --- the table ---------------------------------------------------------------------------------------

COLUMNS = (  # key, header
    ("warned_before_error", "warned"), ("warned_any_before_error", "any"), ("names_error", "names"),
    ("fix_speaks", "fix"), ("false_warnings", "false"), ("precision", "prec"), ("recall_hit@3", "hit@3"),
    ("recall_hit@3_error", "h3 err"), ("recall_hit@3_decision", "h3 dec"),
)
TARGETS = {"warned_before_error": (">=", 0.9), "fix_speaks": (">=", 0.8), "false_warnings": ("<=", 0.25),
           "precision": (">=", 0.75), "recall_hit@3": (">=", 0.6)}


def cell(v: Any) -> str:
    return "-" if v is None else f"{v:.3f}"


def print_table(res: dict[str, Any], p=print) -> None:
    p()
    p(f"real runs ({res['environment']}): tasks {res['tasks']}, runs {res['runs']}; "
      f"{res['training_templates']} (tool, error template) pairs in training; raw threshold {res['raw_threshold']}")
    header = f"{'role':9} {'system':22} " + " ".join(f"{h:>7}" for _, h in COLUMNS)
    p(header)
    p("-" * len(header))
    for role in ("dev", "heldout"):
        if role not in res:
            continue
        for system, label in (("hindsight", "hindsight"), ("raw", "raw TF-IDF errors"), ("tool_ever_failed", "tool ever failed")):
            f = res[role][system]
            p(f"{role:9} {label:22} " + " ".join(f"{cell(f.get(k)):>7}" for k, _ in COLUMNS))
    lf = res["lessons"]
    p(f"lessons: {lf['lessons']} active, {lf['escape_fixes']} with an escape tool as the fix, "
      f"{lf['literal_fixes']} with one run's literal; kinds {res['lesson_kinds']}")
    p("warned: failing calls (of a tool and error template seen in training) with a warning about that tool and")
    p("template; any: with any warning; names: warnings before failing calls whose message cites the error; fix: relevant")
    p("warnings whose fix names what the error is about; false: working calls of tools that failed in training that")
    p("were warned; prec: warned calls that failed; hit@3: failed runs whose start recall had the error or decision in")
    p("its top 3 (h3 err: of the runs with a tool error, about that error; h3 dec: of the runs that failed without any")
    p("tool error, about the decision where they left the way of the successful runs). Targets: "
      + ", ".join(f"{k} {op} {v}" for k, (op, v) in TARGETS.items()) + ".")


def to_json(res: dict[str, Any]) -> str:
    return json.dumps(res, indent=2, default=str)
