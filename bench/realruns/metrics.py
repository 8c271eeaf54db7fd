"""The figures of learning from real runs, from what a system said before each held-out call.

A *template* is an error with its values masked ("Error: 5426915165 not found" and a lesson's
"Error: <n> not found" are both ``<v> not found``). A warning is *relevant* to a failing call when
it comes from a lesson about the same tool that cites the same template. The figures:

* ``warned_before_error``: of the failing calls whose (tool, template) failed in training, the
  share with a relevant warning before them;
* ``names_error``: of the warnings before failing calls, the share whose own text cites the
  template that followed;
* ``fix_speaks``: of the relevant warnings (the first per call), the share whose fix, outside any
  quoted text, names what the error is about (``Subjects``);
* ``false_warnings``: of the calls that worked, of tools that failed in training, the share warned;
* ``precision``: of the warned calls, the share that failed;
* ``escape_fixes`` / ``literal_fixes``: lessons whose fix is an escape or scratch tool, or holds a
  value of one training run;
* ``recall_hit@3``: of the failed runs, the share whose start-of-run recall put an item about the
  error that followed (or, without an error, the decision where the run went wrong) in its top 3.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from statistics import mean
from typing import Any, Collection, Iterable, Mapping, Sequence

_PLACEHOLDER = re.compile(r"<[^<>\s]{1,40}>")
_VALUE = re.compile(r"#?[A-Za-z_]*\d[\w.#@-]*")
_QUOTED = re.compile(r'"([^"]{2,400})"')
_ERROR = re.compile(r"^\s*error:\s*", re.I)


def template(text: str) -> str:
    """An error with its values masked, lower case, without its ``Error:`` prefix."""
    t = _ERROR.sub("", str(text).strip())
    t = _PLACEHOLDER.sub("<v>", t)
    t = _VALUE.sub("<v>", t)
    return " ".join(t.lower().split()).rstrip(".")


def quoted(text: str) -> list[str]:
    return _QUOTED.findall(text or "")


def outside_quotes(text: str) -> str:
    return _QUOTED.sub(" ", text or "")


def cites(text: str, tmpl: str, known: Collection[str] = ()) -> bool:
    """Whether ``text`` cites the error template ``tmpl``: a quoted excerpt of it (whole, or cut with
    "…"), or, unquoted, the template where no longer known template holds it."""
    for q in quoted(text):
        q_t = template(q)
        if q_t == tmpl:
            return True
        if q_t.endswith("…") and len(q_t) > 12 and tmpl.startswith(q_t[:-1].rstrip()):
            return True
    masked = template(outside_quotes(text))
    if tmpl not in masked:
        return False
    longer = [k for k in known if k != tmpl and tmpl in k and k in masked]
    return not longer


@dataclass(frozen=True)
class Subjects:
    """What each error template is about, as words a fix names ("balance", "`payment_method_id`"):
    ``rules`` are (pattern over the template, words)."""

    rules: tuple[tuple[str, tuple[str, ...]], ...]

    def of(self, tmpl: str) -> tuple[str, ...]:
        return next((words for pattern, words in self.rules if re.search(pattern, tmpl)), ())

    def spoken(self, fix: str, tmpl: str) -> bool:
        words = self.of(tmpl)
        text = outside_quotes(fix).lower()
        return bool(words) and any(w.lower() in text for w in words)


@dataclass
class Warned:
    """A warning before a call, as the figures see it: the tools of the lesson it comes from, the
    lesson's texts (to tell which error it is about), the warning's own message and its fix."""

    tools: tuple[str, ...]
    lesson_text: str
    message: str
    fix: str


@dataclass
class CallRecord:
    run: str
    tool: str
    failed: bool
    tmpl: str | None
    warnings: list[Warned] = field(default_factory=list)


@dataclass
class RunRecord:
    run: str
    failed: bool
    target_tool: str | None  # the first failing call's tool, or the decision's
    target_tmpl: str | None  # the first failing call's template (None: a decision)
    decision: Mapping[str, Any] | None
    top: list[Warned] = field(default_factory=list)  # start-of-run recall, best first


def about(w: Warned, tool: str, tmpl: str, known: Collection[str]) -> bool:
    return tool in w.tools and (cites(w.lesson_text, tmpl, known) or cites(w.message, tmpl, known))


def about_decision(w: Warned, decision: Mapping[str, Any]) -> bool:
    """An item about the decision where a run went wrong: it names the tool of the decision (and,
    for a skipped call, the call it had to come before; for an argument, the argument)."""
    text = outside_quotes(f"{w.lesson_text} {w.message} {w.fix}")
    names = [decision["tool"]] + [decision[k] for k in ("before", "param") if decision.get(k)]
    return all(f"`{n}`" in text or n in w.tools for n in names)


def _share(xs: Sequence[bool]) -> float | None:
    return round(mean(xs), 4) if xs else None


def call_figures(calls: Sequence[CallRecord], seen: Collection[tuple[str, str]], failed_tools: Collection[str],
                 subjects: Subjects) -> dict[str, Any]:
    known = {t for _, t in seen}
    failing = [c for c in calls if c.failed and c.tmpl is not None]
    seen_failing = [c for c in failing if (c.tool, c.tmpl) in seen]
    relevant = [next((w for w in c.warnings if about(w, c.tool, c.tmpl or "", known)), None) for c in seen_failing]
    on_failing = [(c, w) for c in failing for w in c.warnings]
    ok_of_failed_tools = [c for c in calls if not c.failed and c.tool in failed_tools]
    warned = [c for c in calls if c.warnings]
    return {
        "calls": len(calls),
        "failing_calls": len(failing),
        "failing_seen": len(seen_failing),
        "warned_before_error": _share([w is not None for w in relevant]),
        "names_error": _share([cites(f"{w.message}", c.tmpl or "", known) for c, w in on_failing]),
        "fix_speaks": _share([subjects.spoken(w.fix, c.tmpl or "") for c, w in zip(seen_failing, relevant) if w]),
        "false_warnings": _share([bool(c.warnings) for c in ok_of_failed_tools]),
        "precision": _share([c.failed for c in warned]),
        "warned_calls": len(warned),
    }


def recall_figures(runs: Sequence[RunRecord], known: Collection[str], k: int = 3) -> dict[str, Any]:
    failed = [r for r in runs if r.failed and r.target_tool]

    def hit(r: RunRecord) -> bool:
        top = r.top[:k]
        if r.target_tmpl is not None:
            return any(about(w, r.target_tool or "", r.target_tmpl, known) for w in top)
        return r.decision is not None and any(about_decision(w, r.decision) for w in top)

    with_error = [r for r in failed if r.target_tmpl is not None]
    quiet = [r for r in failed if r.target_tmpl is None]
    return {
        "failed_runs": len(failed),
        f"recall_hit@{k}": _share([hit(r) for r in failed]),
        f"recall_hit@{k}_error": _share([hit(r) for r in with_error]),
        f"recall_hit@{k}_decision": _share([hit(r) for r in quiet]),
    }


def lesson_figures(lessons: Iterable[Mapping[str, Any]], escape_tools: Collection[str],
                   one_run_literals: Collection[str]) -> dict[str, Any]:
    """Lessons whose fix is an escape or scratch tool (named outside quoted text as what to do), or
    holds a literal value that only one training run used."""
    escape, literal, n = [], [], 0
    for exp in lessons:
        n += 1
        advice = outside_quotes(str(exp.get("advice") or ""))
        if any(f"`{t}`" in advice for t in escape_tools):
            escape.append(exp["experience_id"])
        if any(v in advice for v in one_run_literals):
            literal.append(exp["experience_id"])
    return {"lessons": n, "escape_fixes": len(escape), "literal_fixes": len(literal),
            "escape_ids": escape[:10], "literal_ids": literal[:10]}


def one_run_literals(runs_params: Mapping[str, Iterable[Any]], min_len: int = 5) -> set[str]:
    """The scalar values (texts of ``min_len`` characters or more) of the calls of exactly one run:
    ``runs_params`` gives each run's parameter values."""
    count: dict[str, int] = {}
    for values in runs_params.values():
        for v in set(_scalars(list(values))):
            count[v] = count.get(v, 0) + 1
    return {v for v, n in count.items() if n == 1 and len(v) >= min_len}


def _scalars(value: Any) -> list[str]:
    if isinstance(value, Mapping):
        return [s for v in value.values() for s in _scalars(v)]
    if isinstance(value, (list, tuple)):
        return [s for v in value for s in _scalars(v)]
    if value is None or isinstance(value, bool):
        return []
    return [str(value)]
