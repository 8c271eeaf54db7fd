"""The embedded server's HTTP layer: a WSGI app that runs each request through the gateway (or hands
it to an ingest child), and waitress with the limits and error answers of the contract."""
from __future__ import annotations

import json
import logging
import time
from http import HTTPStatus
from typing import Any, Callable, Iterable
from urllib.parse import unquote

from chalice.local import LocalGateway, LocalGatewayException

from chalicelib import access_log
from chalicelib.api.http import INTERNAL, answer_for, error_answer
from chalicelib.domain.errors import HindsightError
from local.gateway import AccessDenied, gateway_path, local_gateway, thread_safe

log = logging.getLogger("hindsight.server")


def _error(status: int, code: str, message: str) -> tuple[int, dict[str, str], bytes]:
    status, headers, body = error_answer(status, code, message)
    return status, headers, body.encode()


def _translate_chalice_error(status: int, headers: dict[str, str], body: bytes) -> tuple[int, dict[str, str], bytes]:
    """Chalice's own errors (405, 415, ...) come as {"Code", "Message"}: give them the contract's shape."""
    if status >= 400 and body[:1] == b"{":
        try:
            doc = json.loads(body)
        except ValueError:
            return status, headers, body
        if isinstance(doc, dict) and "Code" in doc and "error" not in doc:
            code = {405: "method_not_allowed", 415: "unsupported_media_type"}.get(status, "error")
            return _error(status, code, str(doc.get("Message", "request refused")))
    return status, headers, body


_WAITRESS_CODES = {400: "malformed_request", 413: "payload_too_large", 431: "headers_too_large"}


# After refusing a request it did not read (a body over the limit, a malformed one), the server
# closes the connection while the client may still be sending. Closed with unread input, a socket
# answers the client's next segment with a reset, and a reset makes the client's system drop the
# answer it had received but not yet read: a client that sends its whole body before reading got
# "connection reset" instead of its 413. So the server shuts its side for writing (the answer, then
# FIN), reads and drops what the client still sends, and closes once the client is done, or after
# these bounds.
LINGER_SECONDS = 10.0
LINGER_BYTES = 64 * 1024 * 1024


def json_error_channel() -> type:
    """Waitress's channel whose own refusals (a malformed request line, a body over the limit, a
    bad chunk) answer in the contract's error shape instead of waitress's plain text, are received
    by a client still sending (a lingering close: ``LINGER_SECONDS``), and that the I/O thread does
    not poll for writing while a request thread is sending its answer."""
    import socket

    from waitress.channel import HTTPChannel
    from waitress.task import ErrorTask

    class JsonErrorTask(ErrorTask):
        def execute(self) -> None:
            error = self.request.error
            code = _WAITRESS_CODES.get(error.code, "internal_error" if error.code >= 500 else "bad_request")
            # waitress's message names what it refused and holds nothing of the server's state
            status, headers, body = _error(error.code, code, f"{error.reason}: {error.body}")
            self.status = f"{status} {error.reason}"
            self.response_headers.extend(headers.items())
            self.set_close_on_finish()
            self.channel.linger_on_close = True  # the rest of the request may still be on its way
            self.content_length = len(body)
            self.write(body)

    def writable(self) -> bool:
        """Waitress's answer, but False while a request thread holds the output lock: that thread is
        sending its answer itself, and wakes the I/O thread if it leaves anything unsent (as it does
        on finishing the request, and before waiting for the buffer to drain, which frees the lock).
        Polled meanwhile, the socket was writable at once and the lock still held: the I/O thread
        went round its loop, asking every connection, until that thread got the interpreter back."""
        if not HTTPChannel.writable(self):
            return False
        if self.requests and self.total_outbufs_len and not (self.will_close or self.close_when_flushed):
            if not self.outbuf_lock.acquire(False):
                return False
            self.outbuf_lock.release()
        return True

    def handle_close(self) -> None:
        """Closed after an error answer: linger (shut for writing, drain) instead, once."""
        if getattr(self, "linger_on_close", False) and not getattr(self, "linger_until", 0.0) and self.connected:
            try:
                self.socket.shutdown(socket.SHUT_WR)  # after the answer, which is sent: FIN
            except OSError:
                pass
            else:
                self.linger_until, self.drained = time.monotonic() + LINGER_SECONDS, 0
                self.will_close = self.close_when_flushed = False
                return
        HTTPChannel.handle_close(self)

    def lingering(self) -> bool:
        return bool(getattr(self, "linger_until", 0.0))

    def readable(self) -> bool:
        return True if lingering(self) else HTTPChannel.readable(self)

    def handle_read(self) -> None:
        if not lingering(self):
            HTTPChannel.handle_read(self)
            return
        try:
            data = self.socket.recv(RECV_BYTES)
        except OSError:
            data = b""
        self.drained += len(data)
        if not data or self.drained > LINGER_BYTES or time.monotonic() >= self.linger_until:
            HTTPChannel.handle_close(self)

    def channel_writable(self) -> bool:
        # lingering: "writable" once its time is up (or the server's idle sweep closes it), to be closed
        if lingering(self):
            return self.will_close or time.monotonic() >= self.linger_until
        return writable(self)

    def handle_write(self) -> None:
        if lingering(self):
            HTTPChannel.handle_close(self)
            return
        HTTPChannel.handle_write(self)

    return type("JsonErrorChannel", (HTTPChannel,), {
        "error_task_class": JsonErrorTask, "writable": channel_writable, "handle_close": handle_close,
        "readable": readable, "handle_read": handle_read, "handle_write": handle_write,
    })


def make_wsgi_app(chalice_app: Any, max_body_bytes: int, ingest: Any = None) -> Callable:
    """The WSGI app of the server: ``ingest`` (``local.ingest.IngestProcesses``) runs the requests
    it takes in its child processes, the gateway here runs the rest."""
    gateway = local_gateway(thread_safe(chalice_app))
    if ingest is not None:
        from local.ingest import forwarded, with_trajectory_id

    def wsgi(environ: dict, start_response: Callable) -> Iterable[bytes]:
        started = time.perf_counter()
        access_log.begin()
        method = environ["REQUEST_METHOD"]
        path = gateway_path(environ)
        query = environ.get("QUERY_STRING")
        headers = {k[5:].replace("_", "-").lower(): v for k, v in environ.items() if k.startswith("HTTP_")}
        if environ.get("CONTENT_TYPE"):
            headers["content-type"] = environ["CONTENT_TYPE"]
        try:
            length = int(environ.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = -1
        if length < 0:
            status, out_headers, body = _error(400, "malformed_request", "invalid Content-Length")
        elif length > max_body_bytes:
            status, out_headers, body = _error(413, "payload_too_large", f"request body is larger than {max_body_bytes} bytes")
        else:
            raw = environ["wsgi.input"].read(length) if length else None
            target = path + (f"?{query}" if query else "")
            answered = None
            if ingest is not None and forwarded(method, path):
                raw = with_trajectory_id(path, raw)  # the same id if the server runs it after the child
                answered = ingest.run(method, target, headers, raw)
            if answered is None:
                status, out_headers, body = _dispatch(gateway, method, target, headers, raw)
            else:
                (status, out_headers, body), tenant_id = answered
                if tenant_id is not None:
                    access_log.note_tenant(tenant_id)
        start_response(f"{status} {HTTPStatus(status).phrase}", [*out_headers.items(), ("Content-Length", str(len(body)))])
        access_log.write(method, unquote(path), status, (time.perf_counter() - started) * 1000)
        return [body]

    return wsgi


def _dispatch(gateway: LocalGateway, method: str, path: str, headers: dict, raw: bytes | None):
    try:
        resp = gateway.handle_request(method, path, headers, raw)
    except AccessDenied as exc:  # the authorizer denied the key: the contract's 401 with its reason
        return exc.CODE, dict(exc.headers), exc.body
    except LocalGatewayException as exc:
        if exc.CODE == 401:  # API Gateway's own refusal of a request without a key
            return _error(401, "unauthorized", "missing Authorization header (expected 'Bearer <key>')")
        # the only other refusal: no route matches
        return _error(404, "not_found", f"no route for {method} {path.split('?')[0]}")
    except HindsightError as exc:
        # Routes map their own errors; this one escaped the authorizer, which runs before any route:
        # the key lookup's store failed (Unavailable). Under load that is a 503 to retry, not a 500.
        log.warning("authorizer failed: %s", exc)
        status, headers, body = answer_for(exc)
        return status, headers, body.encode()
    except Exception:
        log.exception("request failed")
        return _error(*INTERNAL)
    body = resp.get("body") or ""
    body_bytes = body.encode() if isinstance(body, str) else body
    headers_out = {k: v for k, v in (resp.get("headers") or {}).items()}
    return _translate_chalice_error(int(resp["statusCode"]), headers_out, body_bytes)


# What one read of a socket takes (waitress's default: 8 KiB). A batch of 20 events is 9-15 KB: read
# in one pass of the server's loop instead of two or more.
RECV_BYTES = 65_536


def create_server(wsgi_app: Callable, settings: Any) -> Any:
    """Waitress with limits that hold under an idle-connection flood: many open connections, idle
    ones closed after ``channel_timeout_seconds``, no body buffered past ``max_body_bytes``."""
    from waitress.server import create_server as waitress_server

    server = waitress_server(
        wsgi_app,
        host=settings.host,
        port=settings.port,
        threads=settings.threads,
        connection_limit=settings.connection_limit,
        channel_timeout=settings.channel_timeout_seconds,
        cleanup_interval=max(1, min(30, settings.channel_timeout_seconds // 2)),
        max_request_body_size=settings.max_body_bytes,
        recv_bytes=RECV_BYTES,
        expose_tracebacks=False,
        ident="hindsight",
    )
    server.channel_class = json_error_channel()
    server.task_dispatcher.queue_logger = SparseWarnings(server.task_dispatcher.queue_logger, QUEUE_WARNING_SECONDS)
    return server


# Waitress warns of its task queue's depth on every request queued while no thread is idle: under
# a steady load above the thread count, a log line per request, written by the one thread that
# reads every socket.
QUEUE_WARNING_SECONDS = 10.0


class SparseWarnings:
    """A logger's warnings, at most one per ``seconds``; the next one says how many were left out.

    Waitress calls it under its task queue's lock: one caller at a time."""

    def __init__(self, logger: logging.Logger, seconds: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.logger = logger
        self.seconds = seconds
        self.clock = clock
        self._next = 0.0
        self._skipped = 0

    def warning(self, msg: str, *args: Any) -> None:
        now = self.clock()
        if now < self._next:
            self._skipped += 1
            return
        if self._skipped:
            msg = f"{msg} ({self._skipped} more such warnings since the last one)"
        self._next, self._skipped = now + self.seconds, 0
        self.logger.warning(msg, *args)
