"""The OpenAI-compatible stub answers without Nagle's delay.

Its answers leave in two writes (headers, then body); with Nagle's algorithm on, the body waited for
the client's delayed ACK of the headers, 40 ms per call once a keep-alive connection was past its
first few segments: bench/cold_start.py counted that stall as the review worker's own time."""
from __future__ import annotations

import socket

import urllib3

from devtools import openai_stub
from devtools.openai_stub import OpenAIStub


def test_the_stub_turns_nagle_off_on_every_connection_it_accepts(monkeypatch):
    seen: list[int] = []
    setup = openai_stub._Handler.setup

    def recording_setup(self):
        setup(self)
        seen.append(self.connection.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))

    monkeypatch.setattr(openai_stub._Handler, "setup", recording_setup)
    with OpenAIStub() as stub:
        pool = urllib3.PoolManager()
        for _ in range(3):  # one keep-alive connection
            r = pool.request("POST", stub.base_url + "/embeddings", json={"model": "m", "input": ["a"], "dimensions": 8})
            assert r.status == 200
    assert seen and all(seen)
