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
failed to answer is made once all the same: event ids are idempotent, and a start whose id the
server generates is given it here before the hand-off). A child that stops answering (stopped,
stuck) costs no thread for good: every read and write of a hand-off has a deadline (503 past it);
a hand-off unanswered for half a second sends the child's next requests to the server; and a
watchdog thread per child pings it every half second and kills (SIGKILL) and starts again one that
misses the ping's deadline, which fails its hand-offs under way over to the server. A child holds
at most half the request threads. Children exit when the server does (their stdin closes).

Only the embedded server runs it, never a Lambda function.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
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
import uuid
from multiprocessing import AuthenticationError
from multiprocessing.connection import Connection, Listener
from typing import Callable, Sequence

from chalicelib.api.http import answer_for
from chalicelib.domain.errors import Unavailable
from local import supervise

log = logging.getLogger("hindsight.ingest")

AUTHKEY_ENV = "HINDSIGHT_INGEST_AUTHKEY"
# after a failed connection, requests for that child run in the server for this long before it tries again
RETRY_SECONDS = 1.0
# a hand-off's answer waits at most this long (each read or write of its connection), then 503; the
# watchdog, which pings each child every supervise.WATCH_SECONDS, replaces one that has not answered
# its ping within PING_DEADLINE_SECONDS, and one that has not listened START_SECONDS after its start
DEADLINE_SECONDS = 10.0
PING_DEADLINE_SECONDS = 3.0
START_SECONDS = 60.0
# a hand-off unanswered this long: the child's other requests run in the server until it answers
STALLED_SECONDS = 0.5
PING, PONG = "ping", "pong"
# the requests a child runs: POST /v1/trajectories, /v1/trajectories/{id}/events and .../finalize,
# and OTLP traces (POST /v1/otlp/v1/traces), which record tasks the same way
FORWARDED = re.compile(r"^/v1/(?:trajectories(?:/[^/?]+/(?:events|finalize))?|otlp/v1/traces)$")

# (status, headers, body): an answer as local.wsgi._dispatch gives it
Answer = tuple[int, dict, bytes]


def forwarded(method: str, path: str) -> bool:
    """Whether a child runs this request (``path`` without its query)."""
    return method == "POST" and FORWARDED.match(path) is not None


def with_trajectory_id(path: str, raw: bytes | None) -> bytes | None:
    """A start (``POST /v1/trajectories``) whose body names no trajectory id, given one here, in the
    server, before the hand-off: the child and, should the child die before it answers, the server
    running the request again start the same trajectory (the repeat answers 200 with it), not two.
    Any other request or body (not a JSON object, an id already named) is left as it is."""
    if path != "/v1/trajectories" or not raw:
        return raw
    try:
        body = json.loads(raw)
    except ValueError:
        return raw
    if not isinstance(body, dict) or body.get("trajectory_id") is not None:
        return raw
    body["trajectory_id"] = "traj_" + uuid.uuid4().hex  # as the service names one
    return json.dumps(body, ensure_ascii=False).encode()


def default_count(cpus: int | None) -> int:
    """Children when the setting leaves it open: one more than the cores (a child waits on its
    group commit's fsync part of the time), none on one core, where they would only add hops."""
    cpus = cpus or 1
    return 0 if cpus < 2 else min(cpus + 1, 8)


class Child:
    """One child process, a pool of connections to it (one per request thread using it), and its
    watchdog's ping."""

    def __init__(self, env: dict[str, str], authkey: bytes, address: str, connections: int,
                 deadline: float = DEADLINE_SECONDS) -> None:
        self.env, self.authkey, self.address, self.connections = env, authkey, address, connections
        self.deadline = deadline  # of a hand-off: no read or write of its connection waits longer
        self.proc: subprocess.Popen | None = None
        self._idle: list[Connection] = []
        self._open = 0
        self._busy: dict[int, float] = {}  # hand-offs under way: id of the connection -> when sent
        self._free = threading.Condition()
        self._retry_at = 0.0
        self._ping: Connection | None = None  # the watchdog's connection (its thread only)
        self.closed = False
        self.started_at = 0.0
        self.replaced = 0  # times the watchdog killed it for not answering
        self._answered = False  # whether this process has answered a ping yet (else it may be starting)

    def start(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.address)  # a dead child's socket: the new one binds the same path
        self.started_at = time.monotonic()
        self._answered = False
        self.proc = subprocess.Popen(supervise.command("local.ingest", self.address), stdin=subprocess.PIPE,
                                     env=supervise.environment(self.env), cwd=os.getcwd())

    def connect(self, timeout: float) -> Connection:
        return supervise.connect(self.address, self.authkey, timeout)

    def ready(self) -> bool:
        try:
            self.connect(PING_DEADLINE_SECONDS).close()
            return True
        except (OSError, EOFError, AuthenticationError):
            return False

    def _stalled(self, now: float) -> bool:
        """Whether a hand-off has waited ``STALLED_SECONDS`` for its answer: the child may have
        stopped answering (the watchdog finds out); meanwhile no more requests queue for it."""
        return any(now - sent > STALLED_SECONDS for sent in self._busy.values())

    def checkout(self) -> Connection | None:
        """A connection of the pool, waiting for one while all are in use; None (run the request in
        the server) while the child cannot be reached, or seems not to answer."""
        with self._free:
            while True:
                now = time.monotonic()
                if self.closed or now < self._retry_at or self._stalled(now):
                    return None
                if self._idle:
                    return self._idle.pop()
                if self._open < self.connections:
                    self._open += 1
                    break
                self._free.wait(0.1)  # woken by a release; else looks again whether the child stalled
        try:
            return self.connect(self.deadline)
        except (OSError, EOFError, ValueError, AuthenticationError):  # not listening yet, gone, or not answering
            self.release(None)
            return None

    def handing(self, conn: Connection) -> None:
        with self._free:
            self._busy[id(conn)] = time.monotonic()

    def release(self, conn: Connection | None, handed: Connection | None = None) -> None:
        """Give ``conn`` back to the pool (None: it broke, or was never made); ``handed``: the
        connection whose hand-off ended."""
        with self._free:
            if handed is not None:
                self._busy.pop(id(handed), None)
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
            idle = self._restart()
        for conn in idle:
            conn.close()

    def _restart(self) -> list[Connection]:
        """Under ``_free``: start another child; returns the idle connections to the old one (to close)."""
        idle, self._idle = self._idle, []  # connections to the dead one
        self._open -= len(idle)
        try:
            self.start()
        except OSError:
            log.exception("ingest process not started again; its requests run in the server")
        return idle

    def answers(self, timeout: float, start_seconds: float) -> bool:
        """The watchdog's ping: whether the child answers within ``timeout``. A child still
        starting (it has not answered a ping yet, for up to ``start_seconds``) and one that exited
        (``revive`` starts it again) count as answering."""
        proc = self.proc
        if proc is None or proc.poll() is not None:
            return True
        try:
            if self._ping is None:
                self._ping = self.connect(timeout)
            self._ping.send(PING)
            if self._ping.recv() == PONG:
                self._answered = True
                return True
        except (OSError, EOFError, ValueError, AuthenticationError):
            pass
        self._drop_ping()
        if not self._answered and time.monotonic() - self.started_at < start_seconds:
            return True  # not listening yet, or not accepting yet
        return proc.poll() is not None  # it exited meanwhile: revive's turn

    def _drop_ping(self) -> None:
        ping, self._ping = self._ping, None
        if ping is not None:
            ping.close()

    def replace(self, reason: str) -> None:
        """Kill the child (SIGKILL: a stopped one too) and start another at once. Its hand-offs
        under way fail (the connection closes) and run in the server; so do new ones until the new
        child listens."""
        self._drop_ping()
        with self._free:
            proc = self.proc
            if self.closed or proc is None or proc.poll() is not None:
                return
            log.warning("ingest process %s %s; killing it and starting another", proc.pid, reason)
            proc.kill()
            proc.wait()
            self.replaced += 1
            idle = self._restart()
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
    when a child's answer says the request queued a review. ``deadline``: of a hand-off (seconds
    its answer may take); ``ping_deadline``: of the watchdog's ping, after which the child is
    replaced; ``start_seconds``: a new child's time to start listening, after which it is replaced."""

    def __init__(self, count: int, on_queued: Callable[[], None], connections: int = 8, base_dir: str | None = None,
                 deadline: float = DEADLINE_SECONDS, ping_deadline: float = PING_DEADLINE_SECONDS,
                 start_seconds: float = START_SECONDS) -> None:
        if count < 1:
            raise ValueError("at least one ingest process")
        self.on_queued = on_queued
        self.ping_deadline, self.start_seconds = ping_deadline, start_seconds
        self.dir = base_dir or tempfile.mkdtemp(prefix="hindsight-ingest-")  # 0700: only this user reaches the sockets
        self._authkey = secrets.token_bytes(32)
        env = dict(os.environ)
        env.update({AUTHKEY_ENV: self._authkey.hex(), "HINDSIGHT_WORKER": "false", "HINDSIGHT_EMBEDDER": "hash",
                    "HINDSIGHT_INGEST_PROCESSES": "0"})
        self.children = [Child(env, self._authkey, os.path.join(self.dir, f"ingest-{i}.sock"), connections, deadline)
                         for i in range(count)]
        self._closed = threading.Event()
        self.sent = 0  # requests a child answered
        self.ran_here = 0  # forwarded requests this process ran instead
        self.timed_out = 0  # hand-offs past their deadline (answered 503)

    def start(self) -> "IngestProcesses":
        """Start the children, and a watchdog per child that starts again one that exits and
        replaces one that stops answering; requests run in this process until each one listens."""
        for child in self.children:
            child.start()
        for i, child in enumerate(self.children):
            threading.Thread(target=self._watch, args=(child,), name=f"hindsight-ingest-watch-{i}", daemon=True).start()
        return self

    def _watch(self, child: Child) -> None:
        """Every ``supervise.WATCH_SECONDS``: start the child again if it exited; ping it, and
        replace it if it does not answer within the deadline. A thread per child: one child that
        does not answer delays no other's watch."""
        while not self._closed.wait(supervise.WATCH_SECONDS):
            child.revive()
            if not child.answers(self.ping_deadline, self.start_seconds) and not self._closed.is_set():
                child.replace(f"did not answer a ping within {self.ping_deadline:g} s")

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
        child cannot give it (the server then runs the request itself). A child that takes the
        request but answers nothing within the deadline, yet has not died: 503, to retry (the
        child may still be running it; running it here too would race it)."""
        child = self.child_for(headers)
        conn = child.checkout()
        if conn is not None:
            child.handing(conn)
            try:
                conn.send((method, path, headers, raw))
                answer = conn.recv()
            except BlockingIOError:  # the deadline passed
                conn.close()
                child.release(None, handed=conn)
                self.timed_out += 1
                log.warning("an ingest process did not answer within %g s; answered 503", child.deadline)
                status, out_headers, body = answer_for(Unavailable(f"the request was not answered within {child.deadline:g} s; retry it"))
                return (status, out_headers, body.encode()), None
            except (OSError, EOFError, ValueError) as exc:
                conn.close()
                child.release(None, handed=conn)
                log.warning("an ingest process did not answer (%r); the request runs in the server", exc)
            else:
                child.release(conn, handed=conn)
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
                    message = conn.recv()
                except (EOFError, OSError):  # the server's thread closed its connection, or the server left
                    return
                if message == PING:  # the server's watchdog
                    try:
                        conn.send(PONG)
                    except (EOFError, OSError):
                        return
                    continue
                method, path, headers, raw = message
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
