"""The few calls a coding agent's hook makes, on the standard library alone.

A hook is a new process on every tool call: importing httpx, typer and rich cost more than the
whole call. Plain ``http://`` (what ``make run`` serves) is one HTTP/1.1 request per connection
over ``socket``; anything else (``https://``, a proxy in the environment) goes through
``urllib.request``, which handles TLS and proxies and costs about 90 more modules at start-up. No
retry (a hook that waits holds the agent); any failure raises ``HookHTTPError`` and the hook fails
open.
"""
from __future__ import annotations

import os

from . import _hookjson as json

try:  # the C module: ``socket`` loads enum and selectors, which a hook never uses
    import _socket as socket
except ImportError:  # pragma: no cover - another interpreter
    import socket  # type: ignore[no-redef]

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Mapping, Sequence

USER_AGENT = "hindsight-xp-hook"
_SAFE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_PROXY_VARS = ("http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY")
MAX_RESPONSE = 8 * 1024 * 1024


class HookHTTPError(Exception):
    """The service answered with an error status, or could not be reached."""


class Answer:
    """What recall and advise answer, as far as a hook reads it."""

    __slots__ = ("recall_id", "hit_ids", "warning_ids", "advice")

    def __init__(self, recall_id: str = "", hit_ids: Sequence[str] = (), warning_ids: Sequence[str] = (), advice: str = "") -> None:
        self.recall_id, self.hit_ids, self.warning_ids, self.advice = recall_id, tuple(hit_ids), tuple(warning_ids), advice

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Answer:
        hits = [str(h["experience"]["experience_id"]) for h in data.get("hits") or () if h.get("experience")]
        warnings = [str(w["experience_id"]) for w in data.get("warnings") or () if w.get("experience_id")]
        return cls(str(data.get("recall_id") or ""), hits, warnings, str(data.get("advice") or ""))


def quote_segment(value: str) -> str:
    """``value`` as one URL path segment (what ``urllib.parse.quote(value, safe="")`` gives)."""
    return "".join(c if c in _SAFE else "".join(f"%{b:02X}" for b in c.encode()) for c in value)


def split_http_url(url: str) -> tuple[str, int, str] | None:
    """(host, port, base path) of a plain ``http://`` URL; None for anything else."""
    if not url.startswith("http://"):
        return None
    rest = url[len("http://"):]
    hostport, _, path = rest.partition("/")
    if "@" in hostport or not hostport:
        return None
    if hostport.startswith("["):  # [::1]:8000
        host, _, port = hostport[1:].partition("]")
        port = port[1:] if port.startswith(":") else ""
    else:
        host, _, port = hostport.partition(":")
    if port and not port.isdigit():
        return None
    return host, int(port or 80), ("/" + path).rstrip("/")


def _connect(host: str, port: int, timeout: float) -> Any:
    """A connected socket to the first address of ``host`` that answers (``socket.create_connection``)."""
    error: OSError | None = None
    # an ASCII name as bytes: a str is encoded with the idna codec, which loads stringprep and re
    name: str | bytes = host.encode("ascii") if host.isascii() else host
    for family, kind, proto, _, address in socket.getaddrinfo(name, port, 0, socket.SOCK_STREAM):
        sock = socket.socket(family, kind, proto)
        try:
            sock.settimeout(timeout)
            sock.connect(address)
            return sock
        except OSError as exc:
            sock.close()
            error = exc
    raise error or OSError(f"no address for {host}")


def _read_response(sock: Any) -> tuple[int, bytes]:
    """Status and body of one HTTP/1.1 response on a connection the server closes after it."""
    buf = bytearray()
    while b"\r\n\r\n" not in buf:
        chunk = sock.recv(65536)
        if not chunk:
            raise HookHTTPError("the connection closed before a response")
        buf += chunk
        if len(buf) > MAX_RESPONSE:
            raise HookHTTPError("response headers too large")
    head, _, body = bytes(buf).partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/") or not parts[1].isdigit():
        raise HookHTTPError(f"not an HTTP response: {lines[0][:80]!r}")
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    length = headers.get("content-length")
    chunked = "chunked" in headers.get("transfer-encoding", "").lower()
    rest = bytearray(body)
    while (length is None or len(rest) < int(length)) and len(rest) <= MAX_RESPONSE:
        chunk = sock.recv(65536)
        if not chunk:
            break
        rest += chunk
    data = bytes(rest[: int(length)]) if length is not None else bytes(rest)
    return int(parts[1]), _dechunk(data) if chunked else data


def _dechunk(data: bytes) -> bytes:
    out, i = bytearray(), 0
    while True:
        end = data.index(b"\r\n", i)
        size = int(data[i:end].split(b";")[0], 16)
        if size == 0:
            return bytes(out)
        out += data[end + 2: end + 2 + size]
        i = end + 2 + size + 2


class HookClient:
    def __init__(self, url: str, api_key: str, *, timeout: float = 2.0) -> None:
        self.url = url.rstrip("/")
        self.timeout = timeout
        self.headers = {"Authorization": f"Bearer {api_key}", "Content-Type": "application/json",
                        "Accept": "application/json", "User-Agent": USER_AGENT}  # fmt: skip
        direct = split_http_url(self.url)
        self.direct = direct if direct and not any(os.environ.get(v) for v in _PROXY_VARS) else None

    def _post(self, path: str, body: Mapping[str, Any]) -> dict[str, Any]:
        data = json.dumps(body).encode()
        status, text = self._send_direct(path, data) if self.direct else self._send_urllib(path, data)
        if not 200 <= status < 300:
            raise HookHTTPError(f"{status} from POST {path}: {text[:500]!r}")
        return json.loads(text) if text else {}

    def _send_direct(self, path: str, data: bytes) -> tuple[int, bytes]:
        assert self.direct is not None
        host, port, base = self.direct
        head = [f"POST {base}{path} HTTP/1.1", f"Host: {host if ':' not in host else f'[{host}]'}:{port}",
                f"Content-Length: {len(data)}", "Connection: close"]  # fmt: skip
        head += [f"{k}: {v}" for k, v in self.headers.items()]
        try:
            sock = _connect(host, port, self.timeout)
            try:
                sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + data)
                return _read_response(sock)
            finally:
                sock.close()
        except OSError as exc:  # refused, reset, timed out, no such host
            raise HookHTTPError(f"POST {path}: {exc}") from None

    def _send_urllib(self, path: str, data: bytes) -> tuple[int, bytes]:
        import urllib.error
        import urllib.request

        req = urllib.request.Request(self.url + path, data=data, method="POST", headers=self.headers)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                return resp.status, resp.read(MAX_RESPONSE)
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read(500)
        except (OSError, ValueError) as exc:  # URLError, timeouts, refused connections, a bad URL
            raise HookHTTPError(f"POST {path}: {exc}") from None

    def start_trajectory(self, agent_id: str, goal: str, *, trajectory_id: str, metadata: Mapping[str, Any]) -> None:
        self._post("/v1/trajectories", {"trajectory_id": trajectory_id, "agent_id": agent_id, "goal": goal,
                                        "metadata": dict(metadata)})  # fmt: skip

    def append_events(self, trajectory_id: str, events: Sequence[Mapping[str, Any]]) -> None:
        self._post(f"/v1/trajectories/{quote_segment(trajectory_id)}/events", {"events": [dict(e) for e in events]})

    def finalize(self, trajectory_id: str, outcome: str) -> None:
        self._post(f"/v1/trajectories/{quote_segment(trajectory_id)}/finalize", {"outcome": outcome})

    def recall(self, query: str, *, agent_id: str) -> Answer:
        return Answer.from_json(self._post("/v1/recall", {"query": query, "agent_id": agent_id}))

    def advise(self, tool: str, params: Mapping[str, Any], *, goal: str | None, agent_id: str, trajectory_id: str) -> Answer:
        body: dict[str, Any] = {"tool": tool, "params": dict(params), "agent_id": agent_id, "trajectory_id": trajectory_id}
        if goal:
            body["goal"] = goal
        return Answer.from_json(self._post("/v1/advise", body))
