"""A local OpenAI-compatible model server, for tests and offline examples.

It speaks the real wire format (``POST /v1/chat/completions`` and ``POST /v1/responses``, each
whole or streamed as server-sent events with ``"stream": true``), so the real ``openai`` client
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


def chat_chunks(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """A chat.completion cut into the chunks a streamed answer arrives in (text word by word,
    each tool call's arguments in two pieces)."""
    message, choice = doc["choices"][0]["message"], doc["choices"][0]
    head = {"id": doc["id"], "object": "chat.completion.chunk", "created": doc["created"], "model": doc["model"]}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    out = [chunk({"role": "assistant", "content": ""})]
    if message.get("reasoning_content"):
        out.append(chunk({"reasoning_content": message["reasoning_content"]}))
    words = (message.get("content") or "").split(" ")
    out += [chunk({"content": w if i == 0 else " " + w}) for i, w in enumerate(words) if message.get("content")]
    for i, call in enumerate(message.get("tool_calls") or ()):
        args = call["function"]["arguments"]
        out.append(chunk({"tool_calls": [{"index": i, "id": call["id"], "type": "function",
                                          "function": {"name": call["function"]["name"], "arguments": args[: len(args) // 2]}}]}))  # fmt: skip
        out.append(chunk({"tool_calls": [{"index": i, "function": {"arguments": args[len(args) // 2 :]}}]}))
    out.append(chunk({}, choice["finish_reason"]))
    return out


def response(reply: Reply, model: str, ids: Iterable[int]) -> dict[str, Any]:
    """The Responses API ``response`` document for one reply."""
    counter = iter(ids)
    output: list[dict[str, Any]] = []
    if reply.get("reasoning_content"):
        output.append({"type": "reasoning", "id": f"rs_{next(counter)}",
                       "summary": [{"type": "summary_text", "text": reply["reasoning_content"]}]})  # fmt: skip
    if reply.get("content"):
        output.append({"type": "message", "id": f"msg_{next(counter)}", "role": "assistant", "status": "completed",
                       "content": [{"type": "output_text", "text": reply["content"], "annotations": []}]})  # fmt: skip
    for c in reply.get("tool_calls") or ():
        n = next(counter)
        output.append({"type": "function_call", "id": f"fc_{n}", "call_id": f"call_{n}", "name": c["name"],
                       "arguments": json.dumps(c.get("arguments") or {}), "status": "completed"})  # fmt: skip
    return {
        "id": f"resp_stub_{next(counter)}", "object": "response", "created_at": int(time.time()), "model": model,
        "status": "completed", "output": output, "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
        "usage": {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0},
    }


def response_events(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The server-sent events of a streamed Responses API answer, ending with response.completed."""
    events: list[dict[str, Any]] = [{"type": "response.created", "response": {**doc, "status": "in_progress", "output": []}}]
    for index, item in enumerate(doc["output"]):
        events.append({"type": "response.output_item.added", "output_index": index, "item": item})
        for part in item.get("content") or ():
            for i, word in enumerate(part["text"].split(" ")):
                events.append({"type": "response.output_text.delta", "item_id": item["id"], "output_index": index,
                               "content_index": 0, "delta": word if i == 0 else " " + word})  # fmt: skip
        events.append({"type": "response.output_item.done", "output_index": index, "item": item})
    events.append({"type": "response.completed", "response": doc})
    return [{**e, "sequence_number": n} for n, e in enumerate(events)]


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

            def _stream(self, events: list[dict[str, Any]], done: bool) -> None:
                # HTTP/1.0 and no Content-Length: the end of the connection ends the stream
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                for event in events:
                    name = f"event: {event['type']}\n" if event.get("type", "").startswith("response.") else ""
                    self.wfile.write(f"{name}data: {json.dumps(event)}\n\n".encode())
                if done:
                    self.wfile.write(b"data: [DONE]\n\n")

            def do_POST(self) -> None:  # noqa: N802
                path = self.path.rstrip("/")
                if not path.endswith(("/chat/completions", "/responses")):
                    self._send(404, {"error": {"message": f"no route {self.path}", "type": "invalid_request_error"}})
                    return
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                chat = path.endswith("/chat/completions")
                with stub._lock:  # the policy may keep state (Scripted does)
                    stub.requests.append(body)
                    reply = stub.policy(body)
                    build = completion if chat else response
                    doc = build(reply, body.get("model") or stub.model, stub._ids)
                if not body.get("stream"):
                    self._send(200, doc)
                elif chat:
                    self._stream(chat_chunks(doc), done=True)
                else:
                    self._stream(response_events(doc), done=False)

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
