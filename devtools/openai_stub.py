"""A local OpenAI-compatible HTTP server for tests and benchmarks (OpenAI itself is unreachable here).

``POST /v1/embeddings`` returns deterministic hashed-feature vectors (``dimensions`` honoured; base64
float32 when ``encoding_format`` asks for it, floats otherwise).
``POST /v1/chat/completions`` answers a trajectory review the way a careful model would, from the
compressed trajectory in the last user message: each failed call followed by a successful change
becomes a second-person lesson naming the tools. It is a rule-based stand-in, not a model: it proves
the real client, the schema, the prompt and the pipeline end to end.

Faults for tests, set with ``POST /stub/faults`` ``{"fail": n, "invalid": n, "truncate": n, "delay": s}``:
the next n calls answer 500 (or ``"status"``, with a ``Retry-After`` header when ``"retry_after"`` is
given), the next n answer invalid JSON, the next n answer the first half of
their JSON with ``finish_reason: "length"`` (cut off at max_tokens), every chat call waits ``delay``
seconds and every embeddings call ``embed_delay`` seconds.
Scripted answers, for hostile-model tests: ``POST /stub/script`` ``{"answers": [...]}`` (or
``stub.script(...)``): the next chat calls answer these contents verbatim, one each, in order (an
object is sent as its JSON text), before the rule-based answers resume.
``GET /stub/requests`` returns the request bodies received (``state.headers`` keeps their headers).

Run: ``python -m devtools.openai_stub --port 8900``.
"""
from __future__ import annotations

import argparse
import base64
import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np

from chalicelib.adapters.embedders.hash import HashEmbedder

_CALL = re.compile(r"^#(\d+) CALL (\w[\w.-]*)\((.*)\) -> (ERROR|ok)\s*:?\s*(.*)$")
_CLASS = re.compile(r"^\s*([A-Z][\w.]*)\s*:")


def _params(text: str) -> dict[str, str]:
    out = {}
    for part in re.split(r",\s*(?=\w+=)", text):
        if "=" in part:
            k, v = part.split("=", 1)
            out[k.strip()] = v.strip()
    return out


def review_from_trajectory(text: str) -> dict[str, Any]:
    """Lessons from ERROR -> ok sequences in the compressed trajectory."""
    calls = []
    for line in text.splitlines():
        m = _CALL.match(line.strip())
        if m:
            calls.append({"step": int(m[1]), "tool": m[2], "params": _params(m[3]), "ok": m[4] == "ok", "msg": m[5]})
    goal = next((line[5:].strip() for line in text.splitlines() if line.startswith("goal:")), "the task")
    lessons, effective, wasted, decisions, seen = [], [], [], [], set()
    for i, c in enumerate(calls):
        (effective if c["ok"] else wasted).append(c["step"])
        if c["ok"] or c["tool"] in seen:
            continue
        fix = next((d for d in calls[i + 1 :] if d["ok"]), None)
        if fix is None:
            continue
        seen.add(c["tool"])
        m = _CLASS.match(c["msg"])
        error_class = m[1] if m else None
        if fix["tool"] == c["tool"]:
            changed = sorted(k for k in set(c["params"]) | set(fix["params"]) if c["params"].get(k) != fix["params"].get(k))
            if not changed:
                continue
            names = ", ".join(f"`{k}`" for k in changed)
            advice = f"When you call `{c['tool']}`, make sure {names} is set correctly (it worked with {names} changed); otherwise it fails with {c['msg'][:100]}."
            tools = [c["tool"]]
        else:
            advice = f"Call `{fix['tool']}` before relying on `{c['tool']}`: on its own `{c['tool']}` fails with {c['msg'][:100]}."
            tools = [c["tool"], fix["tool"]]
        decisions.append({"step": fix["step"], "decision": f"switched to {fix['tool']}", "basis": c["msg"][:80]})
        lessons.append({
            "situation": f"Working on: {goal[:200]}; `{c['tool']}` failed.",
            "action": f"Changed course at step {fix['step']} with `{fix['tool']}`.",
            "result": "The task could continue after the change.",
            "lesson": f"`{c['tool']}` fails with {error_class or 'an error'} in this situation unless the fix is applied.",
            "advice": advice,
            "tools": tools,
            "error_class": error_class,
            "polarity": "warning",
        })
    return {
        "goal": goal[:200], "path": f"{len(calls)} tool calls", "effective_steps": effective, "ineffective_steps": wasted,
        "key_decisions": decisions, "improvements": [l["advice"] for l in lessons], "lessons": lessons,
    }


class StubState:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.fail = 0
        self.fail_status = 500
        self.retry_after: str | None = None  # the Retry-After header of the failed answers
        self.invalid = 0
        self.truncate = 0
        self.delay = 0.0
        self.embed_delay = 0.0  # seconds every embeddings call waits before answering
        self.script: list[str] = []  # verbatim answers of the next chat calls
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []  # the headers of each request, in arrival order


class _Handler(BaseHTTPRequestHandler):
    state: StubState
    protocol_version = "HTTP/1.1"
    # An answer leaves in two writes (headers, then body). With Nagle's algorithm on, the body
    # waited for the client's ACK of the headers, which a keep-alive client past its first few
    # segments delays by 40 ms: bench/cold_start.py counted that stall (in about half the review
    # jobs, once or twice each) as the review worker's own time; an OpenAI endpoint has no such stall.
    disable_nagle_algorithm = True

    def log_message(self, *args: Any) -> None:  # quiet
        pass

    def _send(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        try:
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (a timeout test)
            pass

    def _failure(self) -> None:
        st = self.state
        headers = {"Retry-After": st.retry_after} if st.retry_after is not None else {}
        self._send(st.fail_status, {"error": {"message": "stub failure", "type": "server_error"}}, headers)

    def _embeddings(self, body: dict[str, Any]) -> None:
        """Deterministic embeddings (hashed word and trigram features), in reverse order, as the API
        only promises ``index``, not order."""
        st = self.state
        with st.lock:
            st.requests.append(body)
            fail, delay = st.fail > 0, st.embed_delay
            if fail:
                st.fail -= 1
        if delay:
            time.sleep(delay)
        if fail:
            return self._failure()
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        vectors = HashEmbedder(int(body.get("dimensions") or 256)).embed(texts)
        if body.get("encoding_format") == "base64":  # little-endian float32, as OpenAI sends them
            encoded = [base64.b64encode(np.asarray(v, dtype="<f4").tobytes()).decode() for v in vectors]
        else:
            encoded = [v.tolist() for v in vectors]
        data = [{"object": "embedding", "index": i, "embedding": encoded[i]} for i in range(len(texts))]
        self._send(200, {"object": "list", "data": data[::-1], "model": body.get("model", "stub"),
                         "usage": {"prompt_tokens": sum(len(t) // 4 for t in texts), "total_tokens": sum(len(t) // 4 for t in texts)}})

    def do_GET(self) -> None:
        if self.path == "/stub/requests":
            with self.state.lock:
                return self._send(200, self.state.requests)
        self._send(404, {"error": {"message": "not found"}})

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        st = self.state
        with st.lock:
            st.headers.append(dict(self.headers.items()))
        if self.path == "/stub/faults":
            with st.lock:
                st.fail, st.invalid, st.delay = int(body.get("fail", 0)), int(body.get("invalid", 0)), float(body.get("delay", 0))
                st.truncate, st.embed_delay = int(body.get("truncate", 0)), float(body.get("embed_delay", 0))
                st.fail_status, st.retry_after = int(body.get("status", 500)), body.get("retry_after")
            return self._send(200, {"ok": True})
        if self.path == "/stub/script":
            with st.lock:
                st.script = [a if isinstance(a, str) else json.dumps(a) for a in body.get("answers", [])]
            return self._send(200, {"ok": True})
        if self.path.endswith("/embeddings"):
            return self._embeddings(body)
        if not self.path.endswith("/chat/completions"):
            return self._send(404, {"error": {"message": f"no route {self.path}"}})
        with st.lock:
            st.requests.append(body)
            fail, invalid, delay = st.fail > 0, st.invalid > 0 and st.fail == 0, st.delay
            truncate = st.truncate > 0 and not fail and not invalid
            scripted = st.script.pop(0) if st.script and not fail and not invalid else None
            if fail:
                st.fail -= 1
            elif invalid:
                st.invalid -= 1
            elif truncate:
                st.truncate -= 1
        if delay:
            time.sleep(delay)
        if fail:
            return self._failure()
        text = body["messages"][-1]["content"]
        content = "{not json" if invalid else scripted if scripted is not None else json.dumps(review_from_trajectory(text))
        if truncate:
            content = content[: len(content) // 2]
        self._send(200, {
            "id": "chatcmpl-stub", "object": "chat.completion", "created": int(time.time()), "model": body.get("model", "stub"),
            "choices": [{"index": 0, "finish_reason": "length" if truncate else "stop",
                         "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": len(text) // 4, "completion_tokens": len(content) // 4, "total_tokens": (len(text) + len(content)) // 4},
        })


class OpenAIStub:
    """In-process server: ``with OpenAIStub() as stub: stub.base_url``."""

    def __init__(self, port: int = 0) -> None:
        self.state = StubState()
        handler = type("Handler", (_Handler,), {"state": self.state})
        self.server = ThreadingHTTPServer(("127.0.0.1", port), handler)
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> "OpenAIStub":
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()

    def script(self, *answers: str | dict[str, Any]) -> None:
        """The next chat calls answer these contents verbatim (a dict as its JSON), in order."""
        with self.state.lock:
            self.state.script = [a if isinstance(a, str) else json.dumps(a) for a in answers]

    def faults(self, fail: int = 0, invalid: int = 0, delay: float = 0.0, truncate: int = 0, status: int = 500,
               retry_after: str | None = None, embed_delay: float = 0.0) -> None:
        with self.state.lock:
            self.state.fail, self.state.invalid, self.state.delay = fail, invalid, delay
            self.state.truncate, self.state.embed_delay = truncate, embed_delay
            self.state.fail_status, self.state.retry_after = status, retry_after


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8900)
    port = parser.parse_args().port
    stub = OpenAIStub(port)
    print(f"OpenAI stub on {stub.base_url}", flush=True)
    stub.server.serve_forever()


if __name__ == "__main__":
    main()
