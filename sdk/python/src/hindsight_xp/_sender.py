"""The recorder's background thread: it batches events and sends them, so the agent never waits.

The agent thread only appends to a bounded buffer (``submit``); when the buffer is full the event
is dropped and counted, rather than blocking the agent or growing without bound. The thread
creates the trajectory, sends batches of at most 100 events, and finalizes on ``close``.

What it does when a send fails (the client already retried transient errors):
* the service refuses the batch (422/413): it resends the events one by one, so one bad event
  costs only itself; event ids make the resend idempotent;
* the service is unreachable or failing (transport error, 5xx, 429): it keeps the batch and tries
  again after a pause, until ``close``'s deadline;
* anything else (401, 404, 409): resending cannot help; the events are counted as failed.
"""
from __future__ import annotations

import collections
import logging
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable

from .errors import HindsightError, InvalidRequest, PayloadTooLarge, RateLimited, ServerError, TransportError

log = logging.getLogger("hindsight_xp.recorder")
_TRANSIENT = (TransportError, ServerError, RateLimited)
_REFUSED = (InvalidRequest, PayloadTooLarge)


@dataclass(frozen=True)
class SenderStats:
    recorded: int  # accepted into the buffer
    sent: int  # acknowledged by the service (new or duplicate)
    dropped: int  # refused because the buffer was full
    failed: int  # given up on (refused by the service, or still unsent at the close deadline)
    pending: int  # in the buffer or in flight


class BatchSender:
    def __init__(
        self,
        start: Callable[[], Any],
        send: Callable[[list[dict[str, Any]]], Any],
        finalize: Callable[[str, str | None], Any],
        *,
        max_buffer: int = 10_000,
        batch_size: int = 100,
        flush_interval: float = 0.25,
        retry_pause: float = 0.5,
        name: str = "hindsight-recorder",
    ) -> None:
        self._start, self._send, self._finalize = start, send, finalize
        self.max_buffer, self.batch_size = max_buffer, batch_size
        self.flush_interval, self.retry_pause = flush_interval, retry_pause
        self._buf: collections.deque[dict[str, Any]] = collections.deque()
        self._cond = threading.Condition()
        self._recorded = self._sent = self._dropped = self._failed = 0
        self._flush_waiters = 0
        self._closing = False
        self._deadline = float("inf")
        self._outcome: tuple[str, str | None] | None = None
        self._started = False
        self._broken: HindsightError | None = None
        self.errors: collections.deque[Exception] = collections.deque(maxlen=20)
        self.finalized = False
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)

    # --- agent thread ---------------------------------------------------------------------

    def start(self) -> None:
        self._thread.start()

    def submit(self, event: dict[str, Any]) -> bool:
        """O(1) and never blocks on the network. False if the event was dropped."""
        with self._cond:
            if len(self._buf) >= self.max_buffer or self._closing:
                self._dropped += 1
                return False
            self._buf.append(event)
            self._recorded += 1
            if len(self._buf) == self.batch_size:  # a full batch need not wait for the interval
                self._cond.notify_all()
            return True

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every event submitted so far was sent or given up on. False on timeout."""
        with self._cond:
            target = self._recorded
            self._flush_waiters += 1
            self._cond.notify_all()
            try:
                return self._cond.wait_for(lambda: self._sent + self._failed >= target, timeout)
            finally:
                self._flush_waiters -= 1

    def close(self, outcome: tuple[str, str | None] | None, timeout: float) -> bool:
        """Send what is left, finalize with ``outcome`` (if given), stop. False if cut short."""
        with self._cond:
            self._closing = True
            self._outcome = outcome
            self._deadline = time.monotonic() + timeout
            self._cond.notify_all()
        if self._thread.ident is None:  # closed without ever being started: still finalize
            self._thread.start()
        self._thread.join(timeout + 1.0)
        s = self.stats()
        return not self._thread.is_alive() and s.failed == 0 and s.pending == 0 and (outcome is None or self.finalized)

    def stats(self) -> SenderStats:
        with self._cond:
            done = self._sent + self._failed
            return SenderStats(self._recorded, self._sent, self._dropped, self._failed, self._recorded - done)

    # --- background thread ----------------------------------------------------------------

    def _loop(self) -> None:
        while True:
            batch, closing = self._next_batch()
            if batch:
                self._deliver(batch)
            elif closing:
                break
        outcome = self._outcome
        if outcome is not None and self._broken is None:
            def finalize() -> None:
                self._ensure_started()  # a run that recorded nothing is still a trajectory
                self._finalize(*outcome)

            try:
                self.finalized = self._until_done(finalize, what="finalize")
            except _REFUSED:
                pass  # noted already; nothing more to do at shutdown

    def _next_batch(self) -> tuple[list[dict[str, Any]], bool]:
        with self._cond:
            wake_at = time.monotonic() + self.flush_interval
            # A flush() only hurries a non-empty buffer; an empty one has nothing to hurry.
            while len(self._buf) < self.batch_size and not self._closing and not (self._flush_waiters and self._buf):
                left = wake_at - time.monotonic()
                if left <= 0:
                    break
                self._cond.wait(left)
            n = min(self.batch_size, len(self._buf))
            return [self._buf.popleft() for _ in range(n)], self._closing

    def _account(self, sent: int = 0, failed: int = 0) -> None:
        with self._cond:
            self._sent += sent
            self._failed += failed
            self._cond.notify_all()

    def _ensure_started(self) -> None:
        if self._broken is not None:
            raise self._broken
        if not self._started:
            try:
                self._start()
            except HindsightError as exc:
                if not isinstance(exc, _TRANSIENT):
                    self._broken = exc  # e.g. a bad key: every later request would fail the same way
                raise
            self._started = True

    def _deliver(self, batch: list[dict[str, Any]]) -> None:
        if self._broken is not None:  # noted once already; no request could succeed
            self._account(failed=len(batch))
            return

        def send() -> None:
            self._ensure_started()
            self._send(batch)

        try:
            ok = self._until_done(send, what=f"send {len(batch)} events")
        except _REFUSED:
            if len(batch) > 1 and self._broken is None:
                for event in batch:
                    self._deliver([event])
            else:
                self._account(failed=1)
            return
        self._account(sent=len(batch)) if ok else self._account(failed=len(batch))

    def _until_done(self, action: Callable[[], Any], what: str) -> bool:
        """Run ``action`` until it succeeds; pause and repeat on transient errors until the close
        deadline. Refusals (422/413) propagate to the caller; other errors count as failed."""
        pause = self.retry_pause
        while True:
            try:
                action()
                return True
            except _REFUSED as exc:
                self._note(exc, what)
                raise
            except _TRANSIENT as exc:
                self._note(exc, what)
                if time.monotonic() + pause > self._deadline:
                    return False
                with self._cond:
                    closing = self._closing
                    if not closing:  # close() cuts this pause short: one more try right away
                        self._cond.wait_for(lambda: self._closing, pause)
                if closing:
                    time.sleep(pause)
                pause = min(pause * 2, 10.0)
            except Exception as exc:  # noqa: BLE001 - the thread must outlive any failure (e.g. a closed client)
                self._note(exc, what)
                return False

    def _note(self, exc: Exception, what: str) -> None:
        self.errors.append(exc)
        log.warning("hindsight recorder could not %s: %s", what, exc)
