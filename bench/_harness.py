"""What every benchmark shares: the real server with the benchmarks' settings, a git ref's code as
the "before" side, percentiles, a process's CPU and memory, in-process WSGI calls, child interpreters.

Nothing here changes the service; it only drives it. Every wait is bounded in time. Benchmarks run
as modules from the repository root (``python -m bench.recall_latency``), so every import here and
in them is absolute.
"""
from __future__ import annotations

import io
import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

from devtools.net import HOST, free_port  # noqa: F401 -- re-exported to the benchmarks
from devtools.process import terminate  # noqa: F401 -- re-exported to the benchmarks
from devtools.server_process import ServerProcess

ROOT = Path(__file__).resolve().parents[1]


# what runs the embedded server (a ref from before one of the processes' files has fewer)
SERVER_CODE = ("app.py", "local", "server.py", "worker.py", "ingest_process.py", "review_process.py", "child_process.py", "chalicelib")


def export_ref(ref: str, dest: Path, paths: tuple[str, ...] = SERVER_CODE) -> str:
    """``paths`` as they are at git ref ``ref``, exported into ``dest`` (a benchmark's "before"
    side); returns a label naming the ref and its commit."""
    commit = subprocess.run(["git", "rev-parse", "--short", ref], cwd=ROOT, capture_output=True, text=True,
                            check=True).stdout.strip()
    dest.mkdir(parents=True)
    there = subprocess.run(["git", "ls-tree", "--name-only", ref, "--", *paths], cwd=ROOT, capture_output=True,
                           text=True, check=True).stdout.split()
    archive = subprocess.run(["git", "archive", "--format=tar", ref, *there], cwd=ROOT, capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive.stdout, check=True)
    return f"{ref} {commit}"


def before_and_after(before: str | None, measure: Callable[[str, Path | None], dict[str, Any]],
                     prefix: str) -> dict[str, dict[str, Any]]:
    """``measure(label, code)`` of the ``before`` ref's server (exported to a temporary folder,
    removed after) when one is named, then of this checkout's (``code`` None): by run name."""
    runs: dict[str, dict[str, Any]] = {}
    tmp = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        if before:
            label = export_ref(before, tmp / "before")
            runs[f"before ({label})"] = measure("before", tmp / "before")
        runs["this checkout"] = measure("after", None)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return runs


def pct(values: list[float], q: float) -> float:
    """The q-th percentile (linear interpolation); NaN for no values."""
    if not values:
        return float("nan")
    xs = sorted(values)
    pos = (len(xs) - 1) * q / 100.0
    lo = int(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def proc_cpu_seconds(pid: int, children: bool = True) -> float | None:
    """utime + stime of a process (Linux /proc), with those of its live child processes (the
    embedded server's ingest processes) unless ``children`` is False; None if unavailable."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        own = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None
    if children:
        for kid in child_pids(pid):
            own += proc_cpu_seconds(kid) or 0.0
    return own


def child_pids(pid: int) -> list[int]:
    """The live child processes of ``pid`` (Linux /proc: every thread's children list)."""
    out: list[int] = []
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            try:
                out.extend(int(c) for c in (task / "children").read_text().split())
            except (OSError, ValueError):
                continue
    except OSError:
        pass
    return out


def proc_rss_mb(pid: int, children: bool = False) -> float | None:
    """VmRSS of a process in MiB, with its live child processes' (the embedded server's ingest
    processes) when ``children``; None if unavailable."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                own = int(line.split()[1]) / 1024.0
                break
        else:
            return None
    except (OSError, ValueError):
        return None
    if children:
        own += sum(proc_rss_mb(kid) or 0.0 for kid in child_pids(pid))
    return own


class Server(ServerProcess):
    """The embedded server (``python -m local.server``) on a free 127.0.0.1 port with the
    benchmarks' settings: a fresh admin key, the review worker off and no per-tenant rate limit (one
    tenant at full speed measures the service, not the limit), unless ``env`` says otherwise. The
    caller's ``HINDSIGHT_*`` variables are left out. A context manager that always stops it."""

    def __init__(self, data_dir: str, env: dict[str, str] | None = None, log_path: str | None = None,
                 root: Path | None = None) -> None:
        """``root``: the checkout whose server runs (default: this one; a benchmark may run a
        git ref's code exported elsewhere beside it)."""
        port = free_port()
        defaults = {"HINDSIGHT_HOST": HOST, "HINDSIGHT_ADMIN_KEY": "hsadmin_bench_" + secrets.token_hex(8),
                    "HINDSIGHT_WORKER": "false", "HINDSIGHT_RATE_LIMIT_PER_SECOND": "0", "PYTHONUNBUFFERED": "1"}
        super().__init__(data_dir, defaults | (env or {}), port=port, root=root,
                         log_path=log_path or os.path.join(data_dir, "server.log"))

    def environment(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("HINDSIGHT_")}
        env |= {"HINDSIGHT_DATA_DIR": str(self.data_dir), "HINDSIGHT_PORT": str(self.port), "PORT": str(self.port)}
        return env | self.extra_env

    def start(self, timeout: float = 120.0) -> "Server":
        super().start(timeout)
        return self


def make_inprocess_wsgi(deps: Any, settings: Any) -> Callable[[str, str, dict[str, str], bytes], tuple[int, bytes]]:
    """The server's own WSGI app (Chalice LocalGateway + routes) called in this process: no socket.

    Installs ``deps`` as the container's dependencies of this process.
    """
    from chalicelib import container
    from local.wsgi import make_wsgi_app

    container.set_deps(deps, settings)
    from app import app as chalice_app

    wsgi = make_wsgi_app(chalice_app, settings.max_body_bytes)

    def call(method: str, path: str, headers: dict[str, str], body: bytes = b"") -> tuple[int, bytes]:
        environ = {
            "REQUEST_METHOD": method,
            "PATH_INFO": path,
            "QUERY_STRING": "",
            "CONTENT_TYPE": "application/json",
            "CONTENT_LENGTH": str(len(body)),
            "wsgi.input": io.BytesIO(body),
            "SERVER_NAME": HOST,
            "SERVER_PORT": "0",
            "wsgi.url_scheme": "http",
            **{"HTTP_" + k.upper().replace("-", "_"): v for k, v in headers.items()},
        }
        status_line: list[str] = []

        def start_response(status: str, _headers: list) -> None:
            status_line.append(status)

        out = b"".join(wsgi(environ, start_response))
        return int(status_line[0].split()[0]), out

    return call


def dumps(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


def settle(pids: list[int], quiet_ms: float = 1.0, step: float = 0.01, min_wait: float = 0.005,
           max_wait: float = 0.4) -> float:
    """Sleep until this process and ``pids`` stop burning CPU (bounded by ``max_wait``); returns seconds waited.

    onnxruntime's pool threads spin ~50 ms after each inference and OpenBLAS's ~100 ms after a threaded
    matrix-vector product; on 2 cores that spinning would slow whichever call is timed next.
    """
    t0 = time.monotonic()
    time.sleep(min_wait)
    prev = [time.process_time()] + [proc_cpu_seconds(p) or 0.0 for p in pids]
    while time.monotonic() - t0 < max_wait:
        time.sleep(step)
        cur = [time.process_time()] + [proc_cpu_seconds(p) or 0.0 for p in pids]
        if all((c - p) * 1000 < quiet_ms for c, p in zip(cur, prev)):
            break
        prev = cur
    return time.monotonic() - t0


def load_avg() -> str:
    """The 1, 5 and 15-minute load averages (the machine's other work, printed beside a figure)."""
    return "%.2f %.2f %.2f" % os.getloadavg()


def run_child(code: str, env: dict[str, str], cwd: str | Path, args: tuple[str, ...] = (),
              timeout: float = 300.0) -> tuple[dict, float, str]:
    """``code`` in one fresh interpreter; returns (the JSON of its ``RESULT `` line, or {}; the wall
    time in ms; its stderr). Raises with the end of its stderr when it fails."""
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, *args, "-c", code], env=env, cwd=cwd, capture_output=True, text=True,
                          timeout=timeout)
    wall = (time.perf_counter() - t0) * 1000
    if proc.returncode != 0:
        raise RuntimeError(f"child failed ({proc.returncode}) in {cwd}:\n{proc.stderr[-3000:]}")
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")), None)
    return (json.loads(line[7:]) if line else {}), wall, proc.stderr
