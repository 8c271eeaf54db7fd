"""Raw retrieval, the baseline every figure of the set is measured beside: TF-IDF over the raw
error events of the training runs (no review, no lesson), thresholded.

Before a call, the training errors of the same tool are ranked by the cosine of their TF-IDF
vectors (the run's goal, the tool and its parameters, the error) with the call's (goal, tool,
parameters); the best one warns when its cosine reaches the threshold. The threshold is chosen on
the training runs alone: each training call is scored against the other tasks' errors, and the
threshold that best separates the calls that failed from those that worked (true minus false
warning rate) is kept. The warning quotes the error; its "fix" is what the same run did next with
that tool (the call that worked after it), as a raw trajectory shows it.
"""
from __future__ import annotations

import json
import math
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

import numpy as np

from .metrics import Warned
from .runs import Call, Run

_TOKEN = re.compile(r"[a-z0-9_#@.-]+")


def tokens(text: str) -> list[str]:
    out = []
    for t in _TOKEN.findall(text.lower()):
        t = t.strip(".-")
        if t:
            out.append(t)
            out += [p for p in re.split(r"[_.@-]", t) if p and p != t]
    return out


class TfIdf:
    def __init__(self, texts: Sequence[str]) -> None:
        docs = [Counter(tokens(t)) for t in texts]
        df: Counter[str] = Counter()
        for d in docs:
            df.update(d.keys())
        n = max(1, len(docs))
        self.idf = {t: math.log((1 + n) / (1 + c)) + 1 for t, c in df.items()}
        self.vectors = [self._vector(d) for d in docs]

    def _vector(self, counts: Counter[str]) -> dict[str, float]:
        v = {t: (1 + math.log(c)) * self.idf.get(t, 0.0) for t, c in counts.items()}
        norm = math.sqrt(sum(x * x for x in v.values())) or 1.0
        return {t: x / norm for t, x in v.items() if x}

    def query(self, text: str) -> dict[str, float]:
        return self._vector(Counter(tokens(text)))

    def cosines(self, q: dict[str, float], rows: Iterable[int]) -> list[tuple[int, float]]:
        return [(i, sum(w * self.vectors[i].get(t, 0.0) for t, w in q.items())) for i in rows]


def call_text(goal: str, c: Call) -> str:
    return f"{goal} {c.tool} {json.dumps(dict(c.params), sort_keys=True, default=str)}"


@dataclass
class ErrorEvent:
    run: Run
    index: int

    @property
    def call(self) -> Call:
        return self.run.calls[self.index]

    def fix(self) -> str:
        """What the run did next with the same tool, when it worked: the raw trajectory's answer."""
        nxt = next((c for c in self.run.calls[self.index + 1:] if c.tool == self.call.tool and not c.failed), None)
        if nxt is None:
            return ""
        shown = ", ".join(f"{k}={json.dumps(v, default=str).strip(chr(34))}" for k, v in sorted(nxt.params.items()))
        return f"then `{nxt.tool}` with {shown} worked"

    def as_warning(self) -> Warned:
        c = self.call
        return Warned((c.tool,), f'"{c.answer}"', f'`{c.tool}` failed in a past run: "{c.answer}"', self.fix())


class RawErrors:
    """The training runs' error events, indexed for the same-tool search a call makes."""

    def __init__(self, train: Sequence[Run]) -> None:
        self.events = [ErrorEvent(r, i) for r in train for i, c in enumerate(r.calls) if c.failed]
        self.index = TfIdf([call_text(e.run.goal, e.call) + " " + e.call.answer for e in self.events])
        self.by_tool: dict[str, list[int]] = {}
        for i, e in enumerate(self.events):
            self.by_tool.setdefault(e.call.tool, []).append(i)
        self.threshold = 1.0

    def best(self, goal: str, call: Call, exclude_task: str | None = None) -> tuple[ErrorEvent, float] | None:
        rows = [i for i in self.by_tool.get(call.tool, ()) if exclude_task is None or self.events[i].run.task.id != exclude_task]
        if not rows:
            return None
        i, score = max(self.index.cosines(self.index.query(call_text(goal, call)), rows), key=lambda x: (x[1], -x[0]))
        return self.events[i], score

    def fit_threshold(self, train: Sequence[Run]) -> float:
        """The threshold that maximises (warned failing calls) - (warned working calls) over the
        training calls, each scored against the errors of the other tasks."""
        scored: list[tuple[float, bool]] = []
        for r in train:
            for c in r.calls:
                found = self.best(r.goal, c, exclude_task=r.task.id)
                if found is not None:
                    scored.append((found[1], c.failed))
        pos = sum(1 for _, f in scored if f) or 1
        neg = sum(1 for _, f in scored if not f) or 1
        best, best_j = 1.0, -1.0
        for t in np.linspace(0.05, 0.95, 91):
            tp = sum(1 for s, f in scored if f and s >= t)
            fp = sum(1 for s, f in scored if not f and s >= t)
            j = tp / pos - fp / neg
            if j > best_j:
                best, best_j = float(t), j
        self.threshold = round(best, 2)
        return self.threshold

    def warn(self, goal: str, call: Call) -> list[Warned]:
        found = self.best(goal, call)
        if found is None or found[1] < self.threshold:
            return []
        return [found[0].as_warning()]


class RawRuns:
    """The failed training runs as plain text, for the start-of-run recall of raw retrieval."""

    def __init__(self, train: Sequence[Run], render) -> None:
        self.runs = [r for r in train if r.outcome == "failure"]
        self.index = TfIdf([render(r) for r in self.runs])

    def top(self, goal: str, k: int = 3) -> list[Run]:
        scored = self.index.cosines(self.index.query(goal), range(len(self.runs)))
        scored.sort(key=lambda x: (-x[1], x[0]))
        return [self.runs[i] for i, _ in scored[:k]]


def failed_tools(train: Sequence[Run]) -> set[str]:
    return {c.tool for r in train for c in r.calls if c.failed}


def params_by_run(train: Sequence[Run]) -> dict[str, list[Any]]:
    return {r.id: [dict(c.params) for c in r.calls] for r in train}
