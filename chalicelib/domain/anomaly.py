"""Anomalies seen during ingest, each of which starts a local review of the events around it."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Collection, Sequence

from .attribution import call_key
from .models import Event, ReviewKind

WINDOW = 8  # events of context reviewed before the anomaly's last event
# events before a batch that ingest reads back to find the anomalies the batch completes: an
# append costs what it carries, not the whole trajectory (a call repeated for the third time
# counts within this reach)
CONTEXT = 64


@dataclass(frozen=True)
class Anomaly:
    kind: str  # consecutive_failures | negative_feedback | repeated_call
    trigger: Event  # the event that completed the anomaly

    @property
    def review_kind(self) -> ReviewKind:
        return ReviewKind.local(self.trigger.event_id)


def seq_windows(seqs: Sequence[int], before: int) -> list[tuple[int, int]]:
    """The seq ranges [seq - before, seq] of the listed events, overlapping ones merged, in order:
    what ``TrajectoryStore.events_around`` reads."""
    out: list[tuple[int, int]] = []
    for seq in sorted(set(seqs)):
        lo = max(1, seq - before)
        if out and lo <= out[-1][1] + 1:
            out[-1] = (out[-1][0], seq)
        else:
            out.append((lo, seq))
    return out


def may_complete_anomaly(event: Event) -> bool:
    """Only these events can complete an anomaly: ingest reads the trajectory back only for them."""
    return event.is_tool_call or event.is_negative_feedback


def detect(events: Sequence[Event], new_ids: Collection[str]) -> list[Anomaly]:
    """Anomalies completed by one of the newly accepted events (so a redelivery triggers nothing).

    * two consecutive failed tool calls;
    * negative user feedback;
    * the same call (tool + params) for the third time (only the third, not every later one).
    """
    events = sorted(events, key=lambda e: e.seq)
    found: list[Anomaly] = []
    previous_call: Event | None = None
    counts: dict[str, int] = {}
    for e in events:
        is_new = e.event_id in new_ids
        if e.is_tool_call:
            key = call_key(e)
            counts[key] = counts.get(key, 0) + 1
            if is_new and e.failed and previous_call is not None and previous_call.failed:
                found.append(Anomaly("consecutive_failures", e))
            elif is_new and counts[key] == 3:
                found.append(Anomaly("repeated_call", e))
            previous_call = e
        elif is_new and e.is_negative_feedback:
            found.append(Anomaly("negative_feedback", e))
    return found


def _events(n: int) -> str:
    return f"{n} event" if n == 1 else f"{n} events"


def qualifies_for_full_review(events: Sequence[Event], outcome: str | None, min_events: int) -> tuple[bool, str]:
    """A full review runs for a big enough trajectory; a failure, an error or negative feedback
    always qualifies, however small."""
    if outcome in ("failure", "partial"):
        return True, f"outcome {outcome}"
    if any(e.failed for e in events):
        return True, "a tool call failed"
    if any(e.is_negative_feedback for e in events):
        return True, "negative feedback"
    if len(events) >= min_events:
        return True, _events(len(events))
    return False, f"only {_events(len(events))}, no failure and no negative feedback (minimum {_events(min_events)})"
