"""A local OpenAI-compatible chat-completions server, for tests and offline examples.

It speaks the real wire format (``POST /v1/chat/completions``), so the real ``openai`` client
talks to it through ``base_url``; what it answers is decided by a *policy*: a function from the
request body to the assistant's reply. ``Scripted`` replays a fixed list of replies.

    with StubOpenAI(Scripted([tool_call("get_weather", city="Lyon"), say("Rain.")])) as llm:
        client = openai.OpenAI(base_url=llm.base_url, api_key="stub")
"""
from __future__ import annotations

import itertools
import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Iterable

Reply = dict[str, Any]  # {"content": str | None, "tool_calls": [{"name", "arguments"}], "reasoning_content"?}
Policy = Callable[[dict[str, Any]], Reply]


def say(text: str) -> Reply:
    return {"content": text, "tool_calls": []}


def tool_call(name: str, content: str | None = None, **arguments: Any) -> Reply:
    return {"content": content, "tool_calls": [{"name": name, "arguments": arguments}]}


@dataclass
class Scripted:
    """Answers with ``replies`` in order; the last one again once they run out."""

    replies: list[Reply]
    _i: int = field(default=0, repr=False)

    def __call__(self, request: dict[str, Any]) -> Reply:
        reply = self.replies[min(self._i, len(self.replies) - 1)]
        self._i += 1
        return reply


def completion(reply: Reply, model: str, ids: Iterable[int]) -> dict[str, Any]:
    """The chat.completion JSON document for one reply."""
    counter = iter(ids)
    calls = [
        {"id": f"call_{next(counter)}", "type": "function",
         "function": {"name": c["name"], "arguments": json.dumps(c.get("arguments") or {})}}
        for c in reply.get("tool_calls") or ()
    ]  # fmt: skip
    message: dict[str, Any] = {"role": "assistant", "content": reply.get("content")}
    if calls:
        message["tool_calls"] = calls
    if reply.get("reasoning_content"):
        message["reasoning_content"] = reply["reasoning_content"]
    return {
        "id": f"chatcmpl-stub-{next(counter)}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}],
        "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
    }


class StubOpenAI:
    """Serves ``policy`` on 127.0.0.1 (a free port unless given) in a daemon thread."""

    def __init__(self, policy: Policy, *, port: int = 0, model: str = "stub-model") -> None:
        self.policy, self.model = policy, model
        self.requests: list[dict[str, Any]] = []  # every request body, for tests to inspect
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def _send(self, status: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:  # noqa: N802 - the stdlib's naming
                if self.path.rstrip("/").endswith("/models"):
                    self._send(200, {"object": "list", "data": [{"id": stub.model, "object": "model", "owned_by": "stub"}]})
                else:
                    self._send(404, {"error": {"message": f"no route {self.path}", "type": "invalid_request_error"}})

            def do_POST(self) -> None:  # noqa: N802
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send(404, {"error": {"message": f"no route {self.path}", "type": "invalid_request_error"}})
                    return
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                with stub._lock:  # the policy may keep state (Scripted does)
                    stub.requests.append(body)
                    reply = stub.policy(body)
                    doc = completion(reply, body.get("model") or stub.model, stub._ids)
                self._send(200, doc)

        self._server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self._thread = threading.Thread(target=self._server.serve_forever, name="stub-openai", daemon=True)

    def start(self) -> StubOpenAI:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> StubOpenAI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
