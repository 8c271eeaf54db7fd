"""A real OpenSearch node for the tests (marker ``opensearch``) and benchmarks that need one.

``node_url()`` answers with ``OPENSEARCH_URL`` when it is set and reachable; otherwise it starts a
node of its own with ``devtools/opensearch/start.sh`` on a free port, in a private cache directory
(its own data, logs and pid file, the distribution hard-linked from the shared one), so it neither
meets nor stops a node someone else runs. That node is stopped and removed when the test process
exits. A node that cannot start raises with the tail of its log (the tests' fixture turns that
into a failure: they never skip).
"""
from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import tempfile
import threading
import urllib.request
from pathlib import Path

from devtools.net import free_port

REPO = Path(__file__).resolve().parent.parent
SCRIPTS = REPO / "devtools" / "opensearch"


def reachable(url: str, timeout: float = 3.0) -> bool:
    try:
        with urllib.request.urlopen(f"{url.rstrip('/')}/_cluster/health", timeout=timeout) as r:
            return r.status == 200
    except OSError:
        return False


def _tail(path: Path, lines: int = 60) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return f"(no {path})"


class LocalNode:
    """One node started by the project's scripts in a directory of its own."""

    def __init__(self) -> None:
        self.home: Path | None = None
        self.url: str | None = None

    def _env(self, port: int | None = None) -> dict[str, str]:
        env = dict(os.environ, OPENSEARCH_HOME=str(self.home))
        if port is not None:
            env["OPENSEARCH_PORT"] = str(port)
        return env

    def start(self) -> str:
        # the shared cache holds the distribution (fetch.sh is idempotent and fast once done)
        cache = Path(os.environ.get("OPENSEARCH_HOME") or REPO / ".opensearch")
        fetched = subprocess.run([str(SCRIPTS / "fetch.sh")], capture_output=True, text=True)
        if fetched.returncode != 0:
            raise RuntimeError(f"devtools/opensearch/fetch.sh failed:\n{fetched.stdout}\n{fetched.stderr}")
        dist = sorted(cache.glob("opensearch-*/.fetched-knn-*"))[-1].parent
        # run as the opensearch user when root: every parent of the cache must be enterable
        self.home = Path(tempfile.mkdtemp(prefix="hindsight-opensearch-"))
        self.home.chmod(0o755)
        copy = subprocess.run(["cp", "-al", str(dist), str(self.home)], capture_output=True)
        if copy.returncode != 0:  # another filesystem: a real copy (~65 MB)
            shutil.copytree(dist, self.home / dist.name, symlinks=True)
        port = int(os.environ.get("OPENSEARCH_PORT") or free_port())
        started = subprocess.run(
            [str(SCRIPTS / "start.sh")], env=self._env(port), capture_output=True, text=True,
            timeout=int(os.environ.get("OPENSEARCH_START_TIMEOUT", "180")) + 120,
        )
        if started.returncode != 0:
            report = started.stderr[-6000:]
            if "last log lines" not in report:  # start.sh prints the log tail for most failures
                report += "\n--- console.log tail ---\n" + _tail(self.home / "logs" / "console.log")
            self.stop()
            raise RuntimeError(f"OpenSearch did not start on port {port} (start.sh exit {started.returncode}):\n{report}")
        self.url = started.stdout.strip().splitlines()[-1]
        return self.url

    def stop(self) -> None:
        if self.home is None:
            return
        subprocess.run([str(SCRIPTS / "stop.sh")], env=self._env(), capture_output=True, text=True)
        shutil.rmtree(self.home, ignore_errors=True)
        self.home = self.url = None


_lock = threading.Lock()
_url: str | None = None
_failure: str | None = None


def node_url() -> str:
    """The URL of a running node for this process, started on first use."""
    global _url, _failure
    with _lock:
        if _url is not None:
            return _url
        if _failure is not None:  # one attempt per process; every later caller fails the same way
            raise RuntimeError(_failure)
        given = os.environ.get("OPENSEARCH_URL")
        if given and reachable(given):
            _url = given.rstrip("/")
            return _url
        node = LocalNode()
        atexit.register(node.stop)
        try:
            _url = node.start()
        except Exception as exc:  # noqa: BLE001 -- reported, never skipped
            _failure = f"no OpenSearch node: {exc}"
            raise RuntimeError(_failure) from exc
        return _url



class RequestCounter:
    """Counts the HTTP requests the index's client (``opensearch_http.OpenSearchHttp``) sends, at
    its connection pool (each retry counts): what a round trip is, whatever the client methods called."""

    def __init__(self, client) -> None:
        self.count = 0
        self._lock = threading.Lock()
        client.pool.urlopen = self._counted(client.pool.urlopen)

    def _counted(self, send):
        def urlopen(*args, **kwargs):
            with self._lock:
                self.count += 1
            return send(*args, **kwargs)

        return urlopen
