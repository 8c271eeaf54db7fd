"""The last events of the trajectories this process appended to, kept after their commit.

Ingest reads back the events before each batch to find the anomalies the batch completes
(``TrajectoryStore.events_around``); decoding them from the database again was the largest cost of
an append after the write itself. A tail holds events in an unbroken run of seqs and grows only
from the event count read inside the committed transaction that stored the batch: an append made
by another process (or a batch applied out of order) starts a new run instead of leaving a hole, so
what a tail returns is what the database holds. Events are never changed or deleted once stored.
Bounded by the bytes of the stored docs (least recently appended trajectories go first).
The cached ``Event`` objects are shared with callers, who do not change events.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Sequence

from chalicelib.domain.anomaly import seq_windows
from chalicelib.domain.models import Event


@dataclass
class _Tail:
    events: list[Event] = field(default_factory=list)  # seqs first..last, none missing
    sizes: list[int] = field(default_factory=list)
    nbytes: int = 0

    @property
    def first(self) -> int:
        return self.events[0].seq if self.events else 0

    @property
    def last(self) -> int:
        return self.events[-1].seq if self.events else 0


class EventTails:
    def __init__(self, max_bytes: int = 16 << 20, keep: int = 64) -> None:
        """``keep``: events kept before the latest batch (the reach of ingest's read-back)."""
        self.max_bytes = max_bytes
        self.keep = keep
        self._tails: OrderedDict[tuple[str, str], _Tail] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def appended(self, key: tuple[str, str], count_before: int, events: Sequence[Event], sizes: Sequence[int]) -> None:
        """``events`` (seqs count_before+1...) were committed after the trajectory held ``count_before``."""
        if not events:
            return
        with self._lock:
            tail = self._tails.get(key)
            if tail is not None and tail.last > count_before:
                return  # a later batch of the same commit was applied first: it stays
            if tail is not None:
                del self._tails[key]
                self._bytes -= tail.nbytes
                if tail.last != count_before:  # another process appended the events between
                    tail = None
            tail = tail or _Tail()
            tail.events.extend(events)
            tail.sizes.extend(sizes)
            tail.nbytes += sum(sizes)
            drop = len(tail.events) - (self.keep + len(events))
            if drop > 0:
                tail.nbytes -= sum(tail.sizes[:drop])
                del tail.events[:drop], tail.sizes[:drop]
            self._tails[key] = tail
            self._bytes += tail.nbytes
            while self._bytes > self.max_bytes and self._tails:
                _, old = self._tails.popitem(last=False)
                self._bytes -= old.nbytes

    def around(self, key: tuple[str, str], event_ids: Sequence[str], before: int) -> list[Event] | None:
        """What ``events_around`` answers, if the tail holds all of it; None to read the database."""
        with self._lock:
            tail = self._tails.get(key)
            if tail is None or not tail.events:
                return None
            events, first = list(tail.events), tail.first
        by_id = {e.event_id: e.seq for e in events}
        seqs = [by_id.get(i) for i in dict.fromkeys(event_ids)]
        if any(s is None for s in seqs):
            return None  # not in the tail (older, or unknown): the database knows
        out: list[Event] = []
        for lo, hi in seq_windows(seqs, before):  # type: ignore[arg-type]
            if lo < first:
                return None
            out += events[lo - first : hi - first + 1]
        return out

    def forget(self, key: tuple[str, str]) -> None:
        with self._lock:
            tail = self._tails.pop(key, None)
            if tail is not None:
                self._bytes -= tail.nbytes
