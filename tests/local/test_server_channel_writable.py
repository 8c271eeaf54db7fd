"""The server's channel is not polled for writing while a request thread sends its own answer (it
holds the output lock), and answers too large to go out in one send still arrive whole."""
from __future__ import annotations

import http.client
import socket
import threading
import time
from types import SimpleNamespace

from waitress.adjustments import Adjustments

from local.wsgi import create_server, json_error_channel


class FakeServer:
    def __init__(self) -> None:
        self.adj = Adjustments()
        self.active_channels: dict = {}
        self.triggers = 0

    def pull_trigger(self) -> None:
        self.triggers += 1

    def add_task(self, task) -> None:
        pass


def channel():
    ours, theirs = socket.socketpair()
    server = FakeServer()
    chan = json_error_channel()(server, ours, ("127.0.0.1", 0), server.adj, map={})
    return chan, theirs


def test_a_channel_whose_answer_a_request_thread_is_sending_is_not_polled_for_writing():
    chan, peer = channel()
    try:
        chan.requests = [object()]  # a request in progress
        chan.total_outbufs_len = 10
        held = threading.Event()
        release = threading.Event()

        def request_thread() -> None:
            with chan.outbuf_lock:
                held.set()
                release.wait(5)

        t = threading.Thread(target=request_thread)
        t.start()
        held.wait(5)
        assert chan.writable() is False
        release.set()
        t.join(5)
        assert chan.writable() is True  # the lock is free: what is left is the I/O thread's to send
        chan.requests = []
        assert chan.writable() is True
        chan.total_outbufs_len = 0
        assert not chan.writable()
        chan.will_close = True
        assert chan.writable()
    finally:
        chan.total_outbufs_len = 0
        peer.close()
        chan.close()


def test_an_answer_larger_than_the_socket_takes_at_once_arrives_whole_to_a_slow_reader():
    body = bytes(range(256)) * (32 * 1024)  # 8 MiB

    def app(environ, start_response):
        start_response("200 OK", [("Content-Type", "application/octet-stream"), ("Content-Length", str(len(body)))])
        return [body]

    settings = SimpleNamespace(host="127.0.0.1", port=0, threads=2, connection_limit=10, channel_timeout_seconds=30,
                               max_body_bytes=1024)
    server = create_server(app, settings)
    runner = threading.Thread(target=server.run, daemon=True)
    runner.start()
    try:
        conn = http.client.HTTPConnection("127.0.0.1", server.effective_port, timeout=30)
        for _ in range(2):  # twice on one connection: the first answer's tail did not hold up the second
            conn.request("GET", "/")
            answer = conn.getresponse()
            received = bytearray()
            while chunk := answer.read(256 * 1024):
                received += chunk
                time.sleep(0.002)
            assert answer.status == 200 and bytes(received) == body
        conn.close()
    finally:
        server.close()
        runner.join(5)
