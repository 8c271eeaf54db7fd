"""One local moto server per process for the DynamoDB tests and benchmarks (a real HTTP endpoint).

moto's server handles requests on several threads but does not make a conditional write or a
transaction atomic against a concurrent request, which DynamoDB does. ``_AtomicMotoServer`` runs
one request at a time so concurrency tests measure the adapters, not moto's races.
"""
from __future__ import annotations

import atexit
import threading
from typing import Any

REGION = "us-east-1"
CREDENTIALS = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing"}

_lock = threading.Lock()
_endpoint: str | None = None


def moto_endpoint() -> str:
    """The URL of this process's moto server on 127.0.0.1, started on first use, stopped at exit."""
    global _endpoint
    with _lock:
        if _endpoint is None:
            server = _atomic_moto_server()
            server.start()
            atexit.register(server.stop)
            host, port = server.get_host_and_port()
            _endpoint = f"http://{host}:{port}"
        return _endpoint


def _atomic_moto_server() -> Any:
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
    from moto.server import ThreadedMotoServer
    from werkzeug.serving import make_server

    class _QuietHandler(MotoRequestHandler):
        def log_request(self, *args: Any, **kwargs: Any) -> None:  # a line per request drowns test output
            pass

    class _AtomicMotoServer(ThreadedMotoServer):
        def _server_entry(self) -> None:  # ThreadedMotoServer's, with the app behind one lock
            app = DomainDispatcherApplication(create_backend_app)
            one_at_a_time = threading.Lock()

            def atomic(environ: Any, start_response: Any) -> Any:
                with one_at_a_time:
                    return list(app(environ, start_response))

            self._server = make_server(self._ip_address, self._port, atomic, True, request_handler=_QuietHandler)
            self._server_ready_event.set()
            self._server.serve_forever()

    return _AtomicMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
