"""The embedded server's review worker, in a process of its own.

In the server, reviews shared one interpreter lock with every request: under the 64-client soak the
worker got about a tenth of what it does alone (13 reviews/s during the load, 145/s once it ended),
and recalls waited on the reviews' Python. Here the worker (``local.worker.BackgroundWorker``: due
reviews, woken early; decay on its timer) runs in a child process with its own deps on the server's
data directory and its own embedder; in the cloud, the review Lambda is apart from the API's in the
same way.

What the processes share, and how:
- the review queue, trajectories and lessons: the SQLite files, as the ingest processes share them
  (``local.ingest``);
- the index: the child writes lessons' entries to the files, and the server's index reads again the
  entries any other process changed before each search (``NumpyVectorIndex._sync``), so a lesson is
  recalled by the server as soon as its review has stored it;
- the wake-up: a byte on the child's stdin for each review queued (the server's request threads and
  the ingest processes' answers); the worker also polls, so a lost byte costs a poll at most.

A child that exits is started again (within 0.5 s, at most once per 5 s); its leased jobs are
released by the next one, as a restarted server's are. One that keeps failing at start (three times
within seconds of starting) is given up on, and the worker runs in the server as before. The child
exits when the server does (its stdin closes): told first (``LEAVE``), it finishes the reviews under
way; not told (the server died), it leaves them at once to their leases, which the next server
reclaims, as a review in the server itself is left when the server dies.

Only the embedded server runs it, never a Lambda function.
"""
from __future__ import annotations

import contextlib
import logging
import os
import subprocess
import threading
import time
from typing import TYPE_CHECKING, Callable

from local import supervise

if TYPE_CHECKING:
    from chalicelib.ports import ReviewNotifier

log = logging.getLogger("hindsight.review")

# a child that exits this soon after its start, this many times in a row, is not started again
EARLY_EXIT_SECONDS = 10.0
EARLY_EXITS = 3
# the byte before the end of the child's stdin that says the server is closing it: the child finishes
# the reviews under way; any other byte is a wake-up
LEAVE = b"."


class ReviewProcess:
    """The child and its wake-up (``ports.ReviewNotifier``: ``notify``). ``fallback`` is called, once,
    when the child is given up on: it starts the worker in the server and gives the notifier that
    wakes it, which ``notify`` then calls."""

    def __init__(self, fallback: Callable[[], "ReviewNotifier"], argv: list[str] | None = None) -> None:
        """``argv``: the child's command (tests); this file's ``serve`` by default, in the server's
        environment (it starts neither ingest processes nor another review process: ``serve``
        reads no setting about them)."""
        self.argv = argv or supervise.command("local.review")
        self.fallback = fallback
        self.proc: subprocess.Popen | None = None
        self._fd = -1  # the child's stdin; written and closed under _fd_lock (a closed number is reused)
        self._fd_lock = threading.Lock()
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self.started_at = 0.0
        self.early_exits = 0
        self.given_up = False
        self.instead: ReviewNotifier | None = None  # the server's own worker's, once the child is given up on

    def start(self) -> "ReviewProcess":
        self._spawn()
        threading.Thread(target=self._watch, name="hindsight-review-watch", daemon=True).start()
        return self

    def _spawn(self) -> None:
        self.started_at = time.monotonic()
        self.proc = subprocess.Popen(self.argv, stdin=subprocess.PIPE, cwd=os.getcwd(), env=supervise.environment())
        assert self.proc.stdin is not None
        os.set_blocking(self.proc.stdin.fileno(), False)  # a full pipe means a wake-up is pending already
        with self._fd_lock:
            self._fd = self.proc.stdin.fileno()

    def _close_stdin(self, proc: subprocess.Popen, leave: bool = False) -> None:
        """``leave``: tell the child first to finish the reviews under way; an end of its stdin
        without it is the server's death."""
        with self._fd_lock:
            self._fd = -1
            if leave and not proc.stdin.closed:  # type: ignore[union-attr]
                with contextlib.suppress(OSError):  # a full pipe is not waited on: the child leaves at once
                    os.write(proc.stdin.fileno(), LEAVE)  # type: ignore[union-attr]
            with contextlib.suppress(OSError):
                proc.stdin.close()  # type: ignore[union-attr]

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    def notify(self) -> None:
        """Wake the worker: a review was queued. Never blocks a request."""
        if self.instead is not None:
            self.instead.notify()
            return
        with self._fd_lock, contextlib.suppress(OSError):  # full (a wake-up is pending), or the child is gone
            if self._fd >= 0:
                os.write(self._fd, b"!")

    def wait(self, timeout: float) -> bool:  # the port's other half: the child's worker waits, not the server
        time.sleep(timeout)
        return False

    def _watch(self) -> None:
        while not self._closed.wait(supervise.WATCH_SECONDS):
            self.revive()

    def revive(self) -> None:
        """Start the child again if it has exited; give up on one that keeps failing at start."""
        with self._lock:
            if self._closed.is_set() or self.given_up or not supervise.restart_due(self.proc, self.started_at):
                return
            now = time.monotonic()
            code = self.proc.returncode
            early = self.early_exits = self.early_exits + 1 if now - self.started_at < EARLY_EXIT_SECONDS else 0
            if early >= EARLY_EXITS:
                self.given_up = True
                self._close_stdin(self.proc)
                log.error("review process exited at start %d times (last: %s); reviews run in the server", early, code)
            else:
                log.warning("review process %s exited (%s); starting another", self.proc.pid, code)
                self._close_stdin(self.proc)
                try:
                    self._spawn()
                    return
                except OSError:
                    log.exception("review process not started again")
                    return
        self.instead = self.fallback()

    def close(self, timeout: float = 10.0) -> None:
        """Close the child's stdin (it finishes the reviews under way, then exits); kill it if it
        has not left within ``timeout``."""
        self._closed.set()
        with self._lock:
            proc, self.proc = self.proc, None
        if proc is not None:
            supervise.stop(proc, timeout, lambda: self._close_stdin(proc, leave=True))


# --- the child ---------------------------------------------------------------------------------

STOP_SECONDS = 8.0  # the worker's batch under way, at most, before the child leaves


def serve() -> None:
    """The worker on the server's data directory, until stdin closes."""
    from chalicelib.adapters.review_signal import ReviewSignal
    from chalicelib.container import get_deps, get_settings
    from local import server as srv
    from local.worker import BackgroundWorker

    settings = get_settings()
    srv.configure_logging(settings)
    deps = get_deps()
    deps.embedder.embed(["warm up"])  # the model loaded before the first review, not during it
    if hasattr(deps.index, "idle_seconds"):  # a tenant's copy of the index is kept while it is reviewed
        deps.index.idle_seconds = settings.review_index_idle_seconds
    signal = ReviewSignal()
    deps.review_notifier = signal
    srv.tune_gc()
    worker = BackgroundWorker(deps, signal, settings.worker_poll_seconds, settings.decay_interval_seconds).start()
    told = False
    while True:
        try:
            data = os.read(0, 4096)
        except InterruptedError:
            continue
        if not data:  # the server closed the pipe, or died
            break
        told = told or LEAVE in data
        signal.notify()
    if not told:  # it died: the reviews under way are left to their leases, as a crash leaves them
        log.warning("the server has exited: leaving without finishing the reviews under way")
        os._exit(1)
    worker.stop(STOP_SECONDS)
    os._exit(0)


if __name__ == "__main__":
    serve()
