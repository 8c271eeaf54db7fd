"""The embedded server behind ``make run`` (``python server.py``): the Chalice app on a threaded
WSGI server (waitress).

Requests go through Chalice's own API Gateway emulation (``chalice.local.LocalGateway``, with what
it recomputed per request computed once: ``LeanGateway``), so the routes behave as they do behind
API Gateway; waitress gives a pool of threads, keep-alive and
request-size limits that ``chalice local`` does not. It lives beside app.py, outside chalicelib/,
so that the Lambda package (app.py and chalicelib/) does not ship it.
"""
from __future__ import annotations

import gc
import json
import logging
import os
import re
import signal
import sys
import tempfile
import threading
import time
from http import HTTPStatus
from typing import Any, Callable, Iterable
from urllib.parse import parse_qs, quote, unquote, unquote_to_bytes, urlparse

from chalice.config import Config
from chalice.local import (
    LambdaContext,
    LambdaEventConverter,
    LocalChalice,
    LocalGateway,
    LocalGatewayAuthorizer,
    LocalGatewayException,
    MatchResult,
    RouteMatcher,
)

from chalicelib import access_log, redaction
from chalicelib.api.http import INTERNAL, answer_for, error_answer
from chalicelib.domain.errors import HindsightError

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


def json_error_channel() -> type:
    """Waitress's channel whose own refusals (a malformed request line, a body over the limit, a
    bad chunk) answer in the contract's error shape instead of waitress's plain text, and that the
    I/O thread does not poll for writing while a request thread is sending its answer."""
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

    return type("JsonErrorChannel", (HTTPChannel,), {"error_task_class": JsonErrorTask, "writable": writable})


def thread_safe(chalice_app: Any) -> Any:
    """Chalice keeps the request being handled in one attribute of the app (``current_request``):
    right for Lambda, one request per process, wrong for a pool of threads, where requests would
    read each other's body and key. Chalice's own LocalChalice keeps it per thread; the app takes
    its class, as ``chalice local`` does."""
    if not isinstance(chalice_app, LocalChalice):
        chalice_app.__class__ = type("ThreadLocalChalice", (LocalChalice, chalice_app.__class__), {})
    return chalice_app


class DecodingRouteMatcher(RouteMatcher):
    """Matches a percent-encoded path, then decodes each path parameter, as API Gateway does.

    The answer is Chalice's (``RouteMatcher.match_route``: the first of the sorted routes with as many
    segments whose literal segments are equal, a trailing slash dropped, parameters captured on the
    way kept), with each route's segments split once, not on every request."""

    def __init__(self, route_urls: list[str]) -> None:
        super().__init__(route_urls)
        self._split = [(url, url.split("/")) for url in self.route_urls]

    def match_route(self, url: str) -> MatchResult:
        parsed = urlparse(url)
        query_params = parse_qs(parsed.query, keep_blank_values=True)
        path = parsed.path
        if path != "/" and path.endswith("/"):
            path = path[:-1]
        parts = path.split("/")
        count = len(parts)
        captured: dict[str, str] = {}  # shared by the attempts, as in Chalice's loop
        for route_url, url_parts in self._split:
            if len(url_parts) != count:
                continue
            for i, j in zip(parts, url_parts):
                if j.startswith("{") and j.endswith("}"):
                    captured[j[1:-1]] = i
                    continue
                if i != j:
                    break
            else:
                decoded = {name: unquote(value, errors="replace") for name, value in captured.items()}
                return MatchResult(route_url, decoded, query_params)
        raise ValueError("No matching route found for: %s" % url)


class LeanAuthorizer(LocalGatewayAuthorizer):
    """Chalice's local authorizer, with the pattern of each resource of a policy compiled once.

    ``ARNMatcher`` escapes and compiles every resource of the policy on each request: '*' matches
    any run of characters (the shortest), '?' any one."""

    def __init__(self, app_object: Any) -> None:
        super().__init__(app_object)
        self._patterns: dict[str, re.Pattern[str]] = {}

    def _check_can_invoke_view_function(self, arn: str, auth_result: dict) -> bool:
        statements = auth_result.get("policyDocument", {}).get("Statement", [])
        for statement in statements:
            if statement.get("Effect") == "Allow" and (
                statement.get("Action") == "execute-api:Invoke" or "execute-api:Invoke" in statement.get("Action")
            ):
                for resource in statement.get("Resource"):
                    if self._pattern(resource).match(arn) is not None:
                        return True
        return False

    def _pattern(self, resource: str) -> "re.Pattern[str]":
        pattern = self._patterns.get(resource)
        if pattern is None:
            regex = re.escape(resource).replace(r"\?", ".").replace(r"\*", ".*?")
            pattern = re.compile(f"^{regex}$")
            if len(self._patterns) < 1024:  # a policy names its resources; bounded all the same
                self._patterns[resource] = pattern
        return pattern


class LeanGateway(LocalGateway):
    """Chalice's API Gateway emulation (``LocalGateway``) with what it recomputed on every request
    computed once: the routes' segments, the compiled policy patterns, the Lambda context's settings
    (read through the config's chain of stages on each request)."""

    def __init__(self, app_object: Any, config: Config) -> None:
        super().__init__(app_object, config)
        self.event_converter = LambdaEventConverter(DecodingRouteMatcher(list(app_object.routes)), app_object.api.binary_types)
        self._authorizer = LeanAuthorizer(app_object)
        timeout = config.lambda_timeout
        self._context_args = (config.function_name, config.lambda_memory_size,
                              (self.MAX_LAMBDA_EXECUTION_TIME if timeout is None else timeout) * 1000)

    def _generate_lambda_context(self) -> LambdaContext:
        name, memory, max_runtime_ms = self._context_args
        return LambdaContext(function_name=name, memory_size=memory, max_runtime_ms=max_runtime_ms)


def gateway_path(environ: dict) -> str:
    """The request path as Chalice's route matcher must see it: each segment percent-encoded.

    The matcher splits the path with ``urlparse``: a decoded '#', '?' or ';' inside an id cut the
    path short (a POST to /v1/trajectories/a#b/finalize reached GET /v1/trajectories/{id}: 405), and
    a decoded '%2F' added a segment (an id with a '/' could not be read back). The raw request URI
    keeps the client's segments; without it (a WSGI test transport) PATH_INFO is the best we have.
    """
    raw = environ.get("REQUEST_URI") or ""
    if raw.startswith("/"):
        segments = [unquote_to_bytes(seg) for seg in raw.split("?", 1)[0].split("/")]
    else:
        path = environ.get("PATH_INFO") or "/"
        try:  # PEP 3333: the bytes of the decoded path, as latin-1
            segments = [seg.encode("latin-1") for seg in path.split("/")]
        except UnicodeEncodeError:
            segments = [seg.encode() for seg in path.split("/")]
    return "/".join(quote(seg, safe="") for seg in segments)


def local_gateway(chalice_app: Any) -> LeanGateway:
    """API Gateway's emulation in front of the app (the server's, and each ingest process's)."""
    return LeanGateway(chalice_app, Config.create(chalice_stage="local", app_name=chalice_app.app_name))


def configure_logging(settings: Any) -> None:
    """The log lines of the server and of its ingest processes: keys redacted at every level."""
    logging.basicConfig(level=settings.log_level, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    # the format names no thread or process: not looked up for each record (a line per request)
    logging.logThreads = logging.logProcesses = logging.logMultiprocessing = False
    redaction.install()


def make_wsgi_app(chalice_app: Any, max_body_bytes: int, ingest: Any = None) -> Callable:
    """The WSGI app of the server: ``ingest`` (``ingest_process.IngestProcesses``) runs the requests
    it takes in its child processes, the gateway here runs the rest."""
    gateway = local_gateway(thread_safe(chalice_app))
    if ingest is not None:
        from ingest_process import forwarded

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
            answered = ingest.run(method, target, headers, raw) if ingest is not None and forwarded(method, path) else None
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
    except LocalGatewayException as exc:
        if exc.CODE == 401:  # API Gateway's own refusal of a request without a key
            return _error(401, "unauthorized", "missing Authorization header (expected 'Bearer <key>')")
        # the only other refusal: no route matches (our authorizer never denies)
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


def describe_embedder(settings: Any) -> str:
    return {
        "minilm": "all-MiniLM-L6-v2 (int8 ONNX, offline)",
        "hash": "hash features (tests only: no meaning)",
        "openai": f"{settings.embedding_model} at {settings.openai_base_url or 'the OpenAI API'}",
    }.get(settings.embedder, settings.embedder)


def describe_reviewer(settings: Any) -> str:
    """Whether the LLM reviews, with which models; never the key."""
    if not settings.llm_configured:  # as container.build_reviewer decides
        return "rules only (LLM off: set HINDSIGHT_OPENAI_BASE_URL / HINDSIGHT_OPENAI_API_KEY to turn it on)"
    local = settings.review_model_local or settings.review_model_full
    models = settings.review_model_full if local == settings.review_model_full else f"{settings.review_model_full}, local reviews {local}"
    return f"rules + LLM on ({models} at {settings.openai_base_url or 'the OpenAI API'})"


def main(argv: list[str] | None = None) -> None:
    # Before numpy loads: BLAS's idle threads spin for about 100 ms after each vector search, a
    # core the other requests lose under load; the index splits its product over threads that sleep.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    os.environ.setdefault("HINDSIGHT_INDEX_THREADS", str(min(os.cpu_count() or 1, 4)))
    from chalicelib.container import admin_key_path, get_deps, get_settings

    settings = get_settings()
    configure_logging(settings)
    ingest_count = ingest_process_count(settings)
    shared_dir = prepare_ingest_processes(settings, ingest_count)
    deps = get_deps()
    deps.embedder.embed(["warm up"])  # load the model before the first request, not during it
    warm = getattr(deps.index, "warm", None)
    if warm is not None:  # load every tenant's vectors now rather than on its first recall
        # frozen once loaded, as start-up's objects are (tune_gc): they live as long as the server
        threading.Thread(target=lambda: (warm(), gc.freeze()), name="hindsight-warm-index", daemon=True).start()
    reviews = start_review_worker(deps, settings) if settings.worker else None
    from app import app as chalice_app

    tune_gc()
    url = f"http://{settings.host}:{settings.port}"
    key_src = "HINDSIGHT_ADMIN_KEY" if settings.admin_key else str(admin_key_path(settings).resolve())
    where = (
        f"tables: {settings.table_prefix}* at {settings.dynamodb_endpoint or settings.aws_region}, index: {settings.opensearch_endpoint}"
        if settings.backend == "aws"
        else f"data: {settings.data_dir}"
    )
    print(f"hindsight is serving {url} (backend: {settings.backend}, {where})", flush=True)
    print(f"embedder: {describe_embedder(settings)}; reviewer: {describe_reviewer(settings)}", flush=True)
    print(f"admin key: {key_src}", flush=True)
    if reviews is not None:
        print(f"reviews: a child process (pid {reviews.pid})", flush=True)
    ingest = start_ingest_processes(deps, ingest_count, shared_dir)
    server = create_server(make_wsgi_app(chalice_app, settings.max_body_bytes, ingest), settings)
    # SIGTERM ends the server as Ctrl-C does: through the finally below, which stops its children
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(0))
    try:
        server.run()
    finally:
        server.close()
        if ingest is not None:
            ingest.close()
            print(f"ingest answered by children: {ingest.sent}", flush=True)
        if reviews is not None:
            reviews.close()


def start_review_worker(deps: Any, settings: Any) -> Any:
    """The review worker: in a child process of its own (``review_process.py``) on the embedded
    backend with two cores or more, unless the setting says otherwise, and then woken through
    ``deps.review_notifier``; else a thread of this process. Returns the child (None: a thread)."""
    from worker import BackgroundWorker

    here = deps.review_notifier  # what a worker of this process waits on

    def in_process() -> Any:
        BackgroundWorker(deps, here, settings.worker_poll_seconds, settings.decay_interval_seconds).start()
        return here

    wanted = settings.review_process
    if wanted is None:
        wanted = (os.cpu_count() or 1) >= 2
    if settings.backend != "embedded" or not wanted:
        in_process()
        return None
    from review_process import ReviewProcess

    child = ReviewProcess(fallback=in_process).start()  # given up on: the worker runs here after all
    deps.review_notifier = child
    return child


def ingest_process_count(settings: Any) -> int:
    """Child processes ingest's requests run in (``ingest_process.py``): the setting, or one more
    than the cores where there are two or more; none off the embedded backend."""
    if settings.backend != "embedded":
        return 0
    if settings.ingest_processes is not None:
        return settings.ingest_processes
    from ingest_process import default_count

    return default_count(os.cpu_count())


def prepare_ingest_processes(settings: Any, count: int) -> str | None:
    """Before the deps are built: a private directory for the ``count`` children's sockets and the
    rate-limit buckets every process shares (the setting names its file, for this process and the
    children); None when there are no children."""
    if count == 0:
        return None
    shared_dir = tempfile.mkdtemp(prefix="hindsight-ingest-")  # 0700: only this user reaches it
    settings.rate_limit_file = os.environ["HINDSIGHT_RATE_LIMIT_FILE"] = os.path.join(shared_dir, "rate-limits")
    return shared_dir


def start_ingest_processes(deps: Any, count: int, shared_dir: str | None) -> Any:
    """The children, started in ``shared_dir`` (requests run here until each listens); None when
    there are none."""
    if count == 0 or shared_dir is None:
        return None
    from ingest_process import IngestProcesses

    notifier = deps.review_notifier
    processes = IngestProcesses(
        count, on_queued=notifier.notify if notifier is not None else (lambda: None), base_dir=shared_dir
    ).start()
    print(f"ingest: {count} child processes (pids {', '.join(map(str, processes.pids))})", flush=True)

    def announce() -> None:
        if processes.wait_ready(60.0):
            print("ingest: child processes listening", flush=True)
        else:
            log.warning("ingest: a child process did not start; its requests run in the server")

    threading.Thread(target=announce, name="hindsight-ingest-start", daemon=True).start()
    return processes


# Young objects the cyclic collector lets pile up before it runs (Python's default: 700). A request
# allocates thousands; at 700 the collector ran several times per request and reached the old
# generation (the event tails, every cached event's dicts) often enough to stall every thread
# for tens of milliseconds at a time.
GC_YOUNG_THRESHOLD = 50_000


def tune_gc() -> None:
    """What start-up built (the app, the model, the settings) stays for the process's life: frozen,
    the collector stops walking it; and young collections run far less often (most garbage is freed
    by reference counting, the collector only finds cycles)."""
    gc.collect()
    gc.freeze()
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(GC_YOUNG_THRESHOLD, older, oldest)


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


if __name__ == "__main__":
    main(sys.argv[1:])
