"""The embedded server behind ``make run`` (``python -m local.server``): the Chalice app on a threaded
WSGI server (waitress, ``local.wsgi``), behind Chalice's API Gateway emulation (``local.gateway``),
with ingest's requests run in child processes (``local.ingest``) and the review worker in one of
its own (``local.review``). The package lives beside app.py, outside chalicelib/, so that the
Lambda package (app.py and chalicelib/) does not ship it.
"""
from __future__ import annotations

import errno
import gc
import logging
import os
import signal
import sys
import tempfile
import threading
from typing import Any

from chalicelib import redaction
from local.wsgi import create_server, make_wsgi_app

log = logging.getLogger("hindsight.server")


def configure_logging(settings: Any) -> None:
    """The log lines of the server and of its ingest processes: keys redacted at every level."""
    logging.basicConfig(level=settings.log_level, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    # the format names no thread or process: not looked up for each record (a line per request)
    logging.logThreads = logging.logProcesses = logging.logMultiprocessing = False
    redaction.install()


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


def busy_port_message(host: str, port: int) -> str:
    return (f"hindsight: port {port} on {host} is already in use (another hindsight server?): stop it, or serve on "
            f"another port with HINDSIGHT_PORT, e.g. HINDSIGHT_PORT={port + 1} make run")


def port_in_use(host: str, port: int) -> bool:
    """Whether something listens on host:port already: a bind as waitress makes it (SO_REUSEADDR),
    at once, before the model loads and the children start."""
    import socket

    try:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
    except OSError:
        return False  # waitress will say what is wrong with the address
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            return exc.errno == errno.EADDRINUSE
    return False


def main(argv: list[str] | None = None) -> None:
    # Before numpy loads: BLAS's idle threads spin for about 100 ms after each vector search, a
    # core the other requests lose under load; the index splits its product over threads that sleep.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    os.environ.setdefault("HINDSIGHT_INDEX_THREADS", str(min(os.cpu_count() or 1, 4)))
    from chalicelib.container import admin_key_path, get_deps, get_settings

    settings = get_settings()
    if port_in_use(settings.host, settings.port):  # one line, not a traceback after "serving"
        raise SystemExit(busy_port_message(settings.host, settings.port))
    configure_logging(settings)
    ingest_count = ingest_process_count(settings)
    shared_dir = prepare_ingest_processes(settings, ingest_count)
    deps = get_deps()
    deps.embedder.embed(["warm up"])  # load the model before the first request, not during it
    warm = getattr(deps.index, "warm", None)
    if warm is not None:  # load every tenant's vectors now rather than on its first recall
        def warm_and_freeze() -> None:
            warm()
            gc.freeze()  # frozen once loaded, as start-up's objects are (tune_gc): they live as long as the server

        threading.Thread(target=warm_and_freeze, name="hindsight-warm-index", daemon=True).start()
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
    ingest = start_ingest_processes(deps, ingest_count, shared_dir, settings)
    server = None
    try:
        try:
            server = create_server(make_wsgi_app(chalice_app, settings.max_body_bytes, ingest), settings)
        except OSError as exc:  # taken since the check above
            if exc.errno != errno.EADDRINUSE:
                raise
            raise SystemExit(busy_port_message(settings.host, settings.port)) from None
        # SIGTERM ends the server as Ctrl-C does: through the finally below, which stops its children
        signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(0))
        server.run()
    finally:
        if server is not None:
            server.close()
        if ingest is not None:
            ingest.close()
            print(f"ingest answered by children: {ingest.sent}", flush=True)
        if reviews is not None:
            reviews.close()


def start_review_worker(deps: Any, settings: Any) -> Any:
    """The review worker: in a child process of its own (``local.review``) on the embedded
    backend with two cores or more, unless the setting says otherwise, and then woken through
    ``deps.review_notifier``; else a thread of this process. Returns the child (None: a thread)."""
    from local.worker import BackgroundWorker

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
    from local.review import ReviewProcess

    child = ReviewProcess(fallback=in_process).start()  # given up on: the worker runs here after all
    deps.review_notifier = child
    return child


def ingest_process_count(settings: Any) -> int:
    """Child processes ingest's requests run in (``local.ingest``): the setting, or one more
    than the cores where there are two or more; none off the embedded backend."""
    if settings.backend != "embedded":
        return 0
    if settings.ingest_processes is not None:
        return settings.ingest_processes
    from local.ingest import default_count

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


def start_ingest_processes(deps: Any, count: int, shared_dir: str | None, settings: Any) -> Any:
    """The children, started in ``shared_dir`` (requests run here until each listens), with the
    deadlines of ``settings``; None when there are none."""
    if count == 0 or shared_dir is None:
        return None
    from local.ingest import IngestProcesses

    notifier = deps.review_notifier
    processes = IngestProcesses(
        count, on_queued=notifier.notify if notifier is not None else (lambda: None), base_dir=shared_dir,
        # a child that stops answering holds at most half the request threads until it is replaced
        connections=max(1, settings.threads // 2),
        deadline=settings.ingest_deadline_seconds, ping_deadline=settings.ingest_ping_deadline_seconds,
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


if __name__ == "__main__":
    main(sys.argv[1:])
