"""Attribution over the decision graph: which steps helped, which were wasted, which choices mattered.

The graph comes from ``parent_id`` (naming a parent's ``node_id`` or ``event_id``); an event without
one hangs under the event before it. Each tool call is labelled by its outcome, contributions flow
back to the decisions above them, and at every decision point where one choice failed and another
worked, a *contrast* records the pair. Deterministic, no LLM: the same events give the same result.
"""
from __future__ import annotations

import bisect
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Collection, Sequence

from .escape import never_a_fix
from .models import Event

# labels of tool calls
EFFECTIVE, RECOVERY, FAILED, REPEATED, OBJECTED = "effective", "recovery", "failed", "repeated", "objected"
_VALUE = {EFFECTIVE: 1.0, RECOVERY: 1.0, FAILED: -1.0, REPEATED: -0.5, OBJECTED: -1.0}
# How many later calls may hold the fix of a failed call. A fix is what the agent did next: a call
# a few hundred steps on is another episode, and looking at every later call for every failure
# made a long trajectory's review quadratic.
FIX_HORIZON = 64


def params_of(event: Event) -> dict[str, Any]:
    params = event.content.get("params")
    return params if isinstance(params, dict) else {}


def call_key(event: Event) -> str:
    return event.call_key


@dataclass(frozen=True)
class Contrast:
    """At one decision point: the choice that failed and the one that worked.

    kind: ``param`` (same tool, other parameters), ``order`` (another tool first, then the same
    one), ``swap`` (another tool instead).
    """

    failed: Event
    worked: Event  # the successful call: the retry (param, order) or the replacement (swap)
    kind: str
    changed_params: tuple[str, ...] = ()
    prerequisite: str | None = None  # the tool called first, for ``order``
    prerequisite_call: Event | None = None  # that call


@dataclass
class Attribution:
    labels: dict[str, str] = field(default_factory=dict)  # event_id -> label (tool calls only)
    contribution: dict[str, float] = field(default_factory=dict)  # event_id -> propagated value
    parent: dict[str, str | None] = field(default_factory=dict)
    contrasts: list[Contrast] = field(default_factory=list)

    def steps(self, label: str) -> list[str]:
        return [eid for eid, lab in self.labels.items() if lab == label]

    @property
    def wasted(self) -> int:
        return sum(1 for lab in self.labels.values() if lab in (FAILED, REPEATED, OBJECTED))

    def key_decisions(self, events: Sequence[Event]) -> list[dict[str, Any]]:
        """Reasoning steps whose choices changed the outcome (non-zero contribution below them)."""
        out = []
        for e in events:
            if e.type == "llm_reasoning" and abs(self.contribution.get(e.event_id, 0.0)) >= 0.5:
                out.append({"event_id": e.event_id, "text": str(e.content.get("text", ""))[:200],
                            "contribution": round(self.contribution[e.event_id], 3)})
        return out


def build_parents(events: Sequence[Event]) -> dict[str, str | None]:
    """event_id -> parent event_id. Unknown parent ids fall back to the event order."""
    by_ref: dict[str, str] = {}
    parents: dict[str, str | None] = {}
    previous: str | None = None
    for e in events:
        ref = by_ref.get(e.parent_id) if e.parent_id else None
        parents[e.event_id] = ref if ref is not None else previous
        by_ref[e.event_id] = e.event_id
        if e.node_id:
            by_ref[e.node_id] = e.event_id
        previous = e.event_id
    return parents


def _label_calls(calls: Sequence[Event]) -> dict[str, str]:
    labels: dict[str, str] = {}
    seen_ok: set[str] = set()
    open_failures: set[str] = set()  # tools with a failure not yet followed by a success
    for c in calls:
        key = call_key(c)
        if c.failed:
            labels[c.event_id] = FAILED
            open_failures.add(c.tool or "")
        elif key in seen_ok:
            labels[c.event_id] = REPEATED
        else:
            labels[c.event_id] = RECOVERY if open_failures else EFFECTIVE
            open_failures.discard(c.tool or "")
            if labels[c.event_id] == RECOVERY:
                open_failures.clear()
            seen_ok.add(key)
    return labels


def _propagate(events: Sequence[Event], parents: dict[str, str | None], labels: dict[str, str]) -> dict[str, float]:
    """Each call's value flows up to its ancestors, halving per level: what a decision led to."""
    contribution: dict[str, float] = {}
    for e in events:
        value = _VALUE.get(labels.get(e.event_id, ""), 0.0)
        if not value:
            continue
        contribution[e.event_id] = contribution.get(e.event_id, 0.0) + value
        node, weight = parents.get(e.event_id), 0.5
        while node is not None and weight > 0.01:
            contribution[node] = contribution.get(node, 0.0) + value * weight
            node, weight = parents.get(node), weight / 2
    return contribution


def _scalars(value: Any) -> list[str]:
    """Every scalar inside a value, as lower-case text (nested dicts and lists flattened)."""
    if isinstance(value, dict):
        return [s for v in value.values() for s in _scalars(v)]
    if isinstance(value, (list, tuple)):
        return [s for v in value for s in _scalars(v)]
    if value is None or isinstance(value, bool):
        return []
    return [str(value).strip().lower()]


def _produced(source: Event, cache: dict[str, list[str]]) -> list[str]:
    """The values a call's result holds (at least two characters), read once per review."""
    if source.event_id not in cache:
        cache[source.event_id] = [s for s in _scalars(source.content.get("result")) if len(s) >= 2]
    return cache[source.event_id]


def _supplies(produced: list[str], used: list[str]) -> bool:
    """Data flow: the source call's result holds a value the successful retry used and the failed
    call did not (``lookup_airport`` -> "CDG" -> ``search_flights(from="CDG")``; ``get_token`` ->
    "t0k" -> ``headers={"Authorization": "Bearer t0k"}``)."""
    return any(p in u or (len(u) >= 2 and u in p) for p in produced for u in used if len(p) >= 3 or p == u)


def _fix_for(
    failed: Event,
    after: Sequence[Event],
    objected: set[str],
    produced: dict[str, list[str]] | None = None,
    ok: Sequence[Event] | None = None,
    objected_tools: Collection[str | None] = (),
) -> Contrast | None:
    """The choice that made the difference after a failed call, or None (a transient failure).

    * the same tool succeeded later: a parameter fed by a call in between makes that call a
      prerequisite (order); else the changed parameters are the fix (param); else what the agent
      did in between is (order, ``_acted``). When the values that worked had been tried already
      and refused the same way, the contrast starts from that attempt;
    * it never did: the first call to succeed after its last failure replaced it (swap), unless
      the user objected to that tool (``objected_tools``): polling what never came was no fix.
    A call the user objected to right after it does not count as a success, and a tool that ends
    the task, hands it off or only records a thought (``escape.never_a_fix``) is never the fix.
    """
    produced = {} if produced is None else produced
    if ok is None:  # the calls of ``after`` that worked, unless the caller knows them
        ok = [e for e in after if e.succeeded and e.event_id not in objected]
    same = next((e for e in ok if e.tool == failed.tool), None)
    if same is not None:
        # the values that worked had been tried already and failed too: they were not the fix, what
        # came after that attempt was ("HN73 KRV", then "HN73KRV" refused as well, then the car
        # linked to the account)
        now = params_of(same)
        failed = next((e for e in reversed(after) if e.tool == failed.tool and e.failed and failed.seq < e.seq < same.seq
                       and params_of(e) == now), failed)
        between = [e for e in ok if failed.seq < e.seq < same.seq and e.tool != failed.tool and not never_a_fix(e.tool)]
        before = params_of(failed)
        changed = changed_keys(before, now)
        used = [s for key, value in now.items() if before.get(key) != value for s in _scalars(value)]
        source = next((e for e in reversed(between) if used and _supplies(_produced(e, produced), used)), None)
        if source is not None:
            return Contrast(failed, same, "order", changed, prerequisite=source.tool, prerequisite_call=source)
        if changed:
            return Contrast(failed, same, "param", changed)
        if between:
            acted = _acted(between)
            return Contrast(failed, same, "order", prerequisite=acted.tool, prerequisite_call=acted)
        return None
    last_failure = max((e.seq for e in after if e.tool == failed.tool and e.failed), default=failed.seq)
    episode_end = min((e.seq for e in after if e.seq > last_failure and e.failed), default=None)
    candidates = [
        e for e in ok
        if e.seq > last_failure and e.tool != failed.tool and (episode_end is None or e.seq < episode_end)
        and e.tool not in objected_tools and not never_a_fix(e.tool)
    ]
    replacement = _replacement(failed, candidates)
    return Contrast(failed, replacement, "swap") if replacement is not None else None


def changed_keys(before: dict[str, Any], now: dict[str, Any]) -> tuple[str, ...]:
    """The parameters two calls of a tool were given differently (one of them only included), sorted."""
    return tuple(sorted(k for k in set(before) | set(now) if before.get(k) != now.get(k)))


def _acted(between: Sequence[Event]) -> Event:
    """Of the calls that worked between a failure and the retry that worked, the one that made the
    difference: the last, unless its tool was called more than once in between, a look the agent
    repeated while it waited (``describe``, then ``drain``, then ``describe`` again): then the last
    call made only once, what it did between its looks."""
    counts = Counter(e.tool for e in between)
    if counts[between[-1].tool] == 1:
        return between[-1]
    return next((e for e in reversed(between) if counts[e.tool] == 1), between[-1])


def _replacement(failed: Event, candidates: Sequence[Event]) -> Event | None:
    """Of the calls that worked after the failed one gave up, the one that did its job: it acts on
    the most of the failed call's values (``pos_item_void(check, item)`` for a failed
    ``pos_refund(check, item)``, not the ``pos_check_get(check)`` that looked first); the last
    one on a tie: an agent looks before it acts (``get_station(station)`` then
    ``upload_backfill(station, file)`` for a failed ``upload_readings(station, readings)``)."""
    wanted = set(_scalars(params_of(failed)))
    best, best_shared = None, -1
    for e in candidates:
        shared = len(wanted & set(_scalars(params_of(e))))
        if shared >= best_shared:
            best, best_shared = e, shared
    return best


# How a user's message starts when it rejects what was just done ("No, that now says 0.8 a hectare",
# "Hold on, she has a court order on her file", "Why does the display show -4 C?!"), after an
# interjection ("oh", "ah", "hmm"). Not "no problem", "no worries", "no rush": those accept it.
_REJECTS = re.compile(
    r"^(?:(?:oh|ah|hmm+|um+|er+)\b[\s,.!]*)?(?:no\b(?![\s,]+(?:problem|worries|rush)\b)|nope\b|wrong\b|stop\b"
    r"|hold on\b|wait\b|undo\b|don'?t\b|do not\b|not (?:what|that|right)\b|that(?:'s| is) (?:not|wrong)\b"
    r"|why (?:did|does|is|are|would)\b)", re.IGNORECASE)


def rejects(text: str) -> bool:
    """Whether a user's message rejects what the agent just did: it opens with a refusal, or it
    exclaims a question ("Four hours?!")."""
    text = text.strip()
    return bool(_REJECTS.match(text)) or "?!" in text


def objected_calls(events: Sequence[Event]) -> set[str]:
    """Calls the user rejected: followed by negative feedback before the next call, or worked and
    answered at once by a message of the user's that rejects what they did (``rejects``): a call
    that returned ok and that the user had undone is no fix ("No, that now says 0.8 a hectare")."""
    out: set[str] = set()
    last_call: Event | None = None
    previous: Event | None = None
    for e in events:
        if e.is_tool_call:
            last_call = e
        elif last_call is not None and (e.is_negative_feedback or (
                e.type == "user_input" and previous is last_call and last_call.succeeded
                and rejects(str(e.content.get("text") or "")))):
            out.add(last_call.event_id)
        previous = e
    return out


def attribute(events: Sequence[Event]) -> Attribution:
    events = sorted(events, key=lambda e: e.seq)
    parents = build_parents(events)
    calls = [e for e in events if e.is_tool_call]
    objected = objected_calls(events)
    objected_tools = {c.tool for c in calls if c.event_id in objected}
    labels = _label_calls(calls)
    for eid in objected:
        labels[eid] = OBJECTED
    result = Attribution(labels=labels, contribution=_propagate(events, parents, labels), parent=parents)

    # Explicit branches: sibling calls under one parent where one failed and one worked.
    children: dict[str | None, list[Event]] = {}
    for c in calls:
        children.setdefault(parents[c.event_id], []).append(c)
    paired: set[str] = set()
    for siblings in children.values():
        worked = [c for c in siblings if c.succeeded and c.event_id not in objected]
        worked_seqs = [c.seq for c in worked]  # siblings come in seq order
        for f in (c for c in siblings if c.failed):
            if not worked or f.event_id in paired:
                continue
            later = bisect.bisect_right(worked_seqs, f.seq)
            w = worked[later] if later < len(worked) else worked[0]
            if w.tool == f.tool:
                contrast = _fix_for(f, [w], objected)
            else:
                contrast = Contrast(f, w, "swap") if w.tool not in objected_tools and not never_a_fix(w.tool) else None
            if contrast is not None:
                result.contrasts.append(contrast)
                paired.add(f.event_id)

    # Sequential retries: the first failure of a (tool, error) and what fixed it. Later failures
    # of the same tool fixed by the same call are the agent's detours on the way (often a wrong
    # fix it tried, with an error of its own): the first failure and that call are the lesson.
    first_of: set[tuple[str | None, str]] = set()
    fixed_by: set[tuple[str | None, str]] = {(c.failed.tool, c.worked.event_id) for c in result.contrasts}
    produced: dict[str, list[str]] = {}
    worked_at = [i for i, c in enumerate(calls) if c.succeeded and c.event_id not in objected]
    for i, c in enumerate(calls):
        if not c.failed or c.event_id in paired:
            continue
        error_key = (c.tool, str(c.content.get("error"))[:80])
        if error_key in first_of:
            continue
        first_of.add(error_key)
        lo, hi = bisect.bisect_right(worked_at, i), bisect.bisect_right(worked_at, i + FIX_HORIZON)
        ok = [calls[j] for j in worked_at[lo:hi]]
        contrast = _fix_for(c, calls[i + 1 : i + 1 + FIX_HORIZON], objected, produced, ok, objected_tools)
        if contrast is not None and (c.tool, contrast.worked.event_id) not in fixed_by:
            result.contrasts.append(contrast)
            paired.add(c.event_id)
            fixed_by.add((c.tool, contrast.worked.event_id))
    return result
