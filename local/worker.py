"""Background work of the embedded server: the review worker, the decay timer and the tenant jobs
(exports and deletions, ``services.tenant_jobs``).

In the cloud the DynamoDB stream and a schedule do this; here one daemon thread does both. Only the
embedded server runs it (``local``, outside what ships to Lambda).
"""
from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from chalicelib.adapters.review_signal import ReviewSignal
from chalicelib.services.deps import Deps
from chalicelib.services.indexing import VectorCache
from chalicelib.services.maintenance import run_decay
from chalicelib.services.review_jobs import process_review_jobs, requeue_unreviewed
from chalicelib.services.tenant_jobs import run_pending

TENANT_JOBS_EVERY_SECONDS = 1.0  # how often the worker looks for tenant jobs under way (one small read)
TENANT_JOBS_BUDGET_SECONDS = 5.0  # a look's time at most: the reviews are not held up longer

log = logging.getLogger(__name__)


class BackgroundWorker:
    """Runs due review jobs, woken early by ``signal`` (the one the composition root gave ``deps``
    as its review notifier), and decay every ``decay_interval_seconds``."""

    def __init__(
        self, deps: Deps, signal: ReviewSignal, poll_seconds: float = 0.25, decay_interval_seconds: float = 3600.0
    ) -> None:
        self.deps = deps
        self.signal = signal
        self.poll_seconds = poll_seconds
        self.decay_interval_seconds = decay_interval_seconds
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.vectors = VectorCache(deps.review_vector_cache)
        # a batch's tenants split over these threads: the worker's share of the GIL and the
        # cores grows with them while the request threads are busy
        self.pool = (ThreadPoolExecutor(deps.review_workers, thread_name_prefix="hindsight-review")
                     if deps.review_workers > 1 else None)

    def start(self) -> "BackgroundWorker":
        released = self.deps.queue.release_leases(self.deps.clock.now())  # held by a process that died
        if released:
            log.info("released %d review jobs leased before a restart", released)
        requeued = requeue_unreviewed(self.deps)
        if requeued:
            log.info("requeued %d finalized trajectories for review", requeued)
        self._thread = threading.Thread(target=self._loop, name="hindsight-worker", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        self.signal.notify()
        if self._thread is not None:
            self._thread.join(timeout)
        if self.pool is not None:
            self.pool.shutdown(wait=False, cancel_futures=True)

    def run_tenant_jobs(self) -> dict[str, int]:
        """A bounded run of the tenant exports and deletions under way (each from its checkpoint)."""
        deadline = time.monotonic() + TENANT_JOBS_BUDGET_SECONDS
        done = run_pending(self.deps, lambda: deadline - time.monotonic(), reserve_seconds=0.0)
        if done["worked"]:
            log.info("tenant jobs: %d worked on, %d finished", done["worked"], done["finished"])
        return done

    def _loop(self) -> None:
        next_decay = time.monotonic() + self.decay_interval_seconds
        next_jobs = time.monotonic()
        while not self._stop.is_set():
            try:
                while process_review_jobs(
                    self.deps, self.deps.review_batch_size, self.vectors, self.pool, self.deps.review_workers
                ) and not self._stop.is_set():
                    pass
                if time.monotonic() >= next_jobs:
                    self.run_tenant_jobs()
                    next_jobs = time.monotonic() + TENANT_JOBS_EVERY_SECONDS
                if time.monotonic() >= next_decay:
                    report = run_decay(self.deps)
                    log.info("decay: %d examined, %d archived (%d written)", report.examined, report.archived, report.written)
                    next_decay = time.monotonic() + self.decay_interval_seconds
            except Exception:  # the worker must outlive any one failure; jobs are retried
                log.exception("background worker iteration failed")
            self.signal.wait(self.poll_seconds)
