"""The embedded server's other cores: ingest's requests run in child processes.

The server is one Python process, and every request it handles shares one interpreter lock: under
ingest load it held about one core and left the other idle. So the requests that record a task
(``POST /v1/trajectories``, ``.../{id}/events``, ``.../{id}/finalize``, and OTLP's
``POST /v1/otlp/v1/traces``) are handed whole, once
waitress has read them, to one of a few child processes, each with the app and the embedded stores
of its own (``chalicelib.container.build_embedded`` on the same data directory: no model, no
worker). The child runs the request as the server would (the key, the tenant's rate limit,
validation, the write and its group commit) and sends the answer back; the server writes the
access line and wakes its review worker when the answer says a review was queued. Everything else
(recall and its index, the console, the review worker, maintenance) stays in the server.

What the processes share, and how:
- the database: SQLite in WAL mode, one writer at a time; writers of different processes queue on
  a lock file (``SqliteDatabase``), each process group-commits its own; nothing is answered before
  its commit is fsynced, as in one process;
- a tenant's rate limit: one bucket in a memory-mapped file (``adapters.shared_rate_limiter``),
  whichever process takes from it;
- the key's tenant: read from the database on every request, so a revoked key is refused at once
  in every process;
- a trajectory's recent events (``EventTails``, ingest's anomaly check): kept per process, and
  correct when another process appends too. Requests go to a child by their key, so one agent's
  trajectory is appended to by one child and its tail stays warm.

A child that is not running yet, has died, or fails on a connection costs only the core: the server
then runs the request itself, as it does with no child at all (a write the child made before it
failed to answer is made once all the same: starts and event ids are idempotent). Children exit
when the server does (their stdin closes).

Only the embedded server runs it, never a Lambda function.
"""
from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from multiprocessing.connection import Client, Connection, Listener
from typing import Callable, Sequence

from local import supervise

log = logging.getLogger("hindsight.ingest")

AUTHKEY_ENV = "HINDSIGHT_INGEST_AUTHKEY"
# after a failed connection, requests for that child run in the server for this long before it tries again
RETRY_SECONDS = 1.0
# the requests a child runs: POST /v1/trajectories, /v1/trajectories/{id}/events and .../finalize,
# and OTLP traces (POST /v1/otlp/v1/traces), which record tasks the same way
FORWARDED = re.compile(r"^/v1/(?:trajectories(?:/[^/?]+/(?:events|finalize))?|otlp/v1/traces)$")

# (status, headers, body): an answer as local.wsgi._dispatch gives it
Answer = tuple[int, dict, bytes]


def forwarded(method: str, path: str) -> bool:
    """Whether a child runs this request (``path`` without its query)."""
    return method == "POST" and FORWARDED.match(path) is not None


def default_count(cpus: int | None) -> int:
    """Children when the setting leaves it open: one more than the cores (a child waits on its
    group commit's fsync part of the time), none on one core, where they would only add hops."""
    cpus = cpus or 1
    return 0 if cpus < 2 else min(cpus + 1, 8)


class Child:
    """One child process and a pool of connections to it (one per request thread using it)."""

    def __init__(self, env: dict[str, str], authkey: bytes, address: str, connections: int) -> None:
        self.env, self.authkey, self.address, self.connections = env, authkey, address, connections
        self.proc: subprocess.Popen | None = None
        self._idle: list[Connection] = []
        self._open = 0
        self._free = threading.Condition()
        self._retry_at = 0.0
        self.closed = False
        self.started_at = 0.0

    def start(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.address)  # a dead child's socket: the new one binds the same path
        self.started_at = time.monotonic()
        self.proc = subprocess.Popen(supervise.command("local.ingest", self.address), stdin=subprocess.PIPE,
                                     env=supervise.environment(self.env), cwd=os.getcwd())

    def ready(self) -> bool:
        try:
            Client(self.address, family="AF_UNIX", authkey=self.authkey).close()
            return True
        except (OSError, EOFError):
            return False

    def checkout(self) -> Connection | None:
        """A connection of the pool, waiting for one while all are in use; None (run the request in
        the server) while the child cannot be reached."""
        with self._free:
            while True:
                if self.closed or time.monotonic() < self._retry_at:
                    return None
                if self._idle:
                    return self._idle.pop()
                if self._open < self.connections:
                    self._open += 1
                    break
                self._free.wait()
        try:
            return Client(self.address, family="AF_UNIX", authkey=self.authkey)
        except (OSError, EOFError, ValueError):  # not listening yet, or gone
            self.release(None)
            return None

    def release(self, conn: Connection | None) -> None:
        with self._free:
            if conn is None:  # broken, or never made: its place is free again, the child rested
                self._open -= 1
                self._retry_at = time.monotonic() + RETRY_SECONDS
            else:
                self._idle.append(conn)
            self._free.notify()

    def revive(self) -> None:
        """Start the child again if it has exited (killed, out of memory), at most once per
        ``supervise.RESTART_SECONDS``; its requests run in the server meanwhile."""
        with self._free:
            if self.closed or not supervise.restart_due(self.proc, self.started_at):
                return
            log.warning("ingest process %s exited (%s); starting another", self.proc.pid, self.proc.returncode)
            idle, self._idle = self._idle, []  # connections to the dead one
            self._open -= len(idle)
            try:
                self.start()
            except OSError:
                log.exception("ingest process not started again; its requests run in the server")
        for conn in idle:
            conn.close()

    def close(self, timeout: float) -> None:
        with self._free:
            self.closed = True
            idle, self._idle = self._idle, []
            self._free.notify_all()
        for conn in idle:
            conn.close()
        proc, self.proc = self.proc, None
        if proc is not None:
            supervise.stop(proc, timeout, proc.stdin.close if proc.stdin is not None else lambda: None)


class IngestProcesses:
    """The children, and the routing of a forwarded request to one of them. ``on_queued``: called
    when a child's answer says the request queued a review."""

    def __init__(self, count: int, on_queued: Callable[[], None], connections: int = 8, base_dir: str | None = None) -> None:
        if count < 1:
            raise ValueError("at least one ingest process")
        self.on_queued = on_queued
        self.dir = base_dir or tempfile.mkdtemp(prefix="hindsight-ingest-")  # 0700: only this user reaches the sockets
        self._authkey = secrets.token_bytes(32)
        env = dict(os.environ)
        env.update({AUTHKEY_ENV: self._authkey.hex(), "HINDSIGHT_WORKER": "false", "HINDSIGHT_EMBEDDER": "hash",
                    "HINDSIGHT_INGEST_PROCESSES": "0"})
        self.children = [Child(env, self._authkey, os.path.join(self.dir, f"ingest-{i}.sock"), connections)
                         for i in range(count)]
        self._closed = threading.Event()
        self.sent = 0  # requests a child answered
        self.ran_here = 0  # forwarded requests this process ran instead

    def start(self) -> "IngestProcesses":
        """Start the children, and a thread that starts again any that exits; requests run in this
        process until each one listens."""
        for child in self.children:
            child.start()
        threading.Thread(target=self._watch, name="hindsight-ingest-watch", daemon=True).start()
        return self

    def _watch(self) -> None:
        while not self._closed.wait(supervise.WATCH_SECONDS):
            for child in self.children:
                child.revive()

    def wait_ready(self, timeout: float = 30.0) -> bool:
        """Whether every child accepts connections within ``timeout`` (tests, benchmarks)."""
        deadline = time.monotonic() + timeout
        pending = list(self.children)
        while pending and time.monotonic() < deadline:
            if any(c.proc is not None and c.proc.poll() is not None for c in pending):
                return False
            pending = [c for c in pending if not c.ready()]
            if pending:
                time.sleep(0.05)
        return not pending

    @property
    def pids(self) -> list[int]:
        return [c.proc.pid for c in self.children if c.proc is not None]

    def child_for(self, headers: dict) -> Child:
        """The child of this key: one agent's requests, and so its trajectories' appends, go to one
        child (its tails of recent events stay warm there)."""
        key = (headers.get("authorization") or "").encode()
        digest = hashlib.blake2b(key, digest_size=8).digest()
        return self.children[int.from_bytes(digest, "little") % len(self.children)]

    def run(self, method: str, path: str, headers: dict, raw: bytes | None) -> tuple[Answer, str | None] | None:
        """The child's answer to the request and its tenant (for the access line); None when the
        child cannot give it (the server then runs the request itself)."""
        child = self.child_for(headers)
        conn = child.checkout()
        if conn is not None:
            try:
                conn.send((method, path, headers, raw))
                answer = conn.recv()
            except (OSError, EOFError, ValueError) as exc:
                conn.close()
                child.release(None)
                log.warning("an ingest process did not answer (%r); the request runs in the server", exc)
            else:
                child.release(conn)
                if answer[0] == "ok":
                    _, status, out_headers, body, tenant_id, queued = answer
                    self.sent += 1
                    if queued:
                        self.on_queued()
                    return (status, out_headers, body), tenant_id
        self.ran_here += 1
        return None

    def close(self, timeout: float = 5.0) -> None:
        self._closed.set()
        for child in self.children:
            child.close(timeout)
        shutil.rmtree(self.dir, ignore_errors=True)


# --- the child ---------------------------------------------------------------------------------


class _QueuedFlag:
    """``ports.ReviewNotifier`` of a child: notes, for the request's thread, that a review was queued
    (the server's worker is woken when the answer comes back)."""

    def __init__(self) -> None:
        self._local = threading.local()

    def notify(self) -> None:
        self._local.queued = True

    def take(self) -> bool:
        queued = getattr(self._local, "queued", False)
        self._local.queued = False
        return queued

    def wait(self, timeout: float) -> bool:  # the port's other half: no worker waits in a child
        time.sleep(timeout)
        return False


def serve(address: str, authkey: bytes) -> None:
    """A child: the app on the server's data directory, a thread per connection, until stdin closes."""
    from chalicelib import access_log
    from chalicelib.container import build_embedded, get_settings, set_deps
    from local import gateway as gw
    from local import server as srv
    from local.wsgi import _dispatch

    settings = get_settings()
    srv.configure_logging(settings)
    deps = build_embedded(settings)  # the hash embedder and no worker: a child never embeds or reviews
    flag = _QueuedFlag()
    deps.review_notifier = flag
    set_deps(deps, settings)
    from app import app as chalice_app

    gateway = gw.local_gateway(gw.thread_safe(chalice_app))
    srv.tune_gc()

    def session(conn: Connection) -> None:
        with conn:
            while True:
                try:
                    method, path, headers, raw = conn.recv()
                except (EOFError, OSError):  # the server's thread closed its connection, or the server left
                    return
                access_log.begin()
                flag.take()
                status, out_headers, body = _dispatch(gateway, method, path, headers, raw)
                tenant_id = access_log.tenant()
                try:
                    conn.send(("ok", status, out_headers, body, tenant_id, flag.take()))
                except (EOFError, OSError):
                    return

    listener = Listener(address, family="AF_UNIX", authkey=authkey)

    def accept() -> None:
        while True:
            try:
                conn = listener.accept()
            except Exception:  # a peer without the key (AuthenticationError), or one that left mid-handshake
                time.sleep(0.01)
                continue
            threading.Thread(target=session, args=(conn,), name="hindsight-ingest", daemon=True).start()

    threading.Thread(target=accept, name="hindsight-ingest-accept", daemon=True).start()
    sys.stdin.buffer.read()  # returns when the server closes the pipe, or dies
    os._exit(0)


def main(argv: Sequence[str]) -> None:
    serve(argv[0], bytes.fromhex(os.environ.pop(AUTHKEY_ENV)))


if __name__ == "__main__":
    main(sys.argv[1:])
