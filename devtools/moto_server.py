"""One local moto server per process for the DynamoDB tests and benchmarks (a real HTTP endpoint).

moto's server handles requests on several threads but does not make a conditional write or a
transaction atomic against a concurrent request, which DynamoDB does. ``_AtomicMotoServer`` runs
one request at a time so concurrency tests measure the adapters, not moto's races.

moto backs up a table before a transaction by deep-copying it once per item of the transaction
(every table item and stream record, up to 100 times): an append of 100 events to a trajectory
holding thousands took 10-50 s, and the whole flood of a fairness test hours. ``_copy_tables_once``
makes it one backup per table and transaction that copies only what the transaction can change in
place, and restores the same state.
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


def _copy_tables_once() -> None:
    import copy
    from collections import defaultdict

    from moto.dynamodb import models
    from moto.dynamodb.models.dynamo_type import DynamoType
    from moto.dynamodb.models.table import Table

    if getattr(models.DynamoDBBackend.transact_write_items, "copies_tables_once", False):
        return
    original = models.DynamoDBBackend.transact_write_items

    def updated_keys(transact_items: list) -> dict[str, list[dict]]:
        out: dict[str, list[dict]] = defaultdict(list)
        for item in transact_items:
            (kind, op), = item.items()
            if kind == "Update":
                out[op["TableName"]].append(op["Key"])
        return out

    def backup(table: Any, updates: list[dict]) -> Any:
        """What moto's deep copy restores on a failed transaction: the items as they were (a put
        or a delete replaces an item: the mapping is copied; an update changes it in place: those
        items are copied) and the stream as it was."""
        saved = copy.copy(table)
        saved.items = defaultdict(dict, {h: dict(v) if table.has_range_key else v for h, v in table.items.items()})
        for key in updates:
            h = DynamoType(key[table.hash_key_attr])
            if table.has_range_key:
                r = DynamoType(key[table.range_key_attr])
                if r in saved.items.get(h, {}):
                    saved.items[h][r] = copy.deepcopy(saved.items[h][r])
            elif h in saved.items:
                saved.items[h] = copy.deepcopy(saved.items[h])
        if table.stream_shard is not None:
            saved.stream_shard = copy.copy(table.stream_shard)
            saved.stream_shard.items = list(table.stream_shard.items)
            saved.stream_shard.table = saved
        return saved

    def transact_write_items(self: Any, transact_items: list) -> None:
        copies: dict[int, Any] = {}
        updates = updated_keys(transact_items)

        class _OnceEach:  # the module's ``copy`` during the call
            @staticmethod
            def deepcopy(value: Any, memo: Any = None) -> Any:
                if not isinstance(value, Table):
                    return copy.deepcopy(value, memo)
                if id(value) not in copies:
                    copies[id(value)] = backup(value, updates.get(value.name, []))
                return copies[id(value)]

        models.copy = _OnceEach  # one request at a time (the server's lock): no other call sees it
        try:
            return original(self, transact_items)
        finally:
            models.copy = copy

    transact_write_items.copies_tables_once = True  # type: ignore[attr-defined]
    models.DynamoDBBackend.transact_write_items = transact_write_items


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

    _copy_tables_once()
    return _AtomicMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
