"""``ports.ReviewNotifier`` within one process: ingest and finalize notify, the embedded review
worker waits on it between polls (in the cloud the jobs table's stream starts reviews)."""
from __future__ import annotations

import threading


class ReviewSignal:
    def __init__(self) -> None:
        self._event = threading.Event()

    def notify(self) -> None:
        self._event.set()

    def wait(self, timeout: float) -> bool:
        """Until notified or ``timeout`` seconds; True if notified. Clears the notification."""
        notified = self._event.wait(timeout)
        self._event.clear()
        return notified
