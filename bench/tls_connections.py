"""What the review worker's TLS connections cost a cold process, against the code before, in the
same run: the index's and the LLM endpoint's clients, each checking the server's certificate with a
bundle of certifi's size.

Usage: .venv/bin/python -m bench.tls_connections [--before main] [--runs 15]

"before" is chalicelib/ of a git ref exported with ``git archive``; "after" is the work tree. Each
sample is a fresh interpreter (interleaved, before and after) that builds an ``OpenSearchHttp`` and an
``OpenAICompatibleClient`` for an HTTPS server on the loopback (devtools.tls_server: keep-alive, its
certificate signed by a test CA) and sends what a review's first batch sends them: two index requests
(the index check, the bulk write) and three LLM requests (the review, two embeddings). The bundle is
certifi's with the test CA appended, so every connection parses what a deployed function parses
(certifi's ~150 certificates); the server runs in this process, the children only connect. Prints
the median ms of the five requests (and of the clients' construction), how many times a bundle was
loaded into an SSL context, their ratio and the load average. The deployed worker's DynamoDB
connection (botocore's own context, a load per new connection) is the same on both sides and not in it.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
from pathlib import Path

from bench._harness import ROOT, export_ref, load_avg, run_child

CHILD = r"""
import json, os, ssl, sys, time
import certifi
certifi.where = lambda: os.environ["BENCH_BUNDLE"]  # the LLM client checks with certifi's bundle
loads = []
real = ssl.SSLContext.load_verify_locations
def counting(self, cafile=None, capath=None, cadata=None):
    loads.append(cafile)
    return real(self, cafile, capath, cadata)
ssl.SSLContext.load_verify_locations = counting
from chalicelib.adapters.openai_http import OpenAICompatibleClient
from chalicelib.adapters.opensearch.http import OpenSearchHttp
url, bundle = os.environ["BENCH_URL"], os.environ["BENCH_BUNDLE"]
c0, t0 = time.process_time(), time.perf_counter()
index = OpenSearchHttp(url, ca_certs=bundle, max_retries=0)
llm = OpenAICompatibleClient(url + "/v1", max_retries=0)
t1 = time.perf_counter()
index.request("GET", "/experiences")
for _ in range(3):
    llm.embeddings(model="m", input=["a"])
index.request("POST", "/_bulk", body=[{"index": {}}, {"a": 1}])
t2, c2 = time.perf_counter(), time.process_time()
print("RESULT " + json.dumps({"build_ms": (t1 - t0) * 1000, "requests_ms": (t2 - t1) * 1000, "total_ms": (t2 - t0) * 1000,
                              "cpu_ms": (c2 - c0) * 1000, "loads": len(loads)}))
"""


def run(cwd: str, env: dict[str, str]) -> dict:
    return run_child(CHILD, env, cwd, timeout=120)[0]


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.tls_connections", description=__doc__.splitlines()[0])
    parser.add_argument("--before", default="main")
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    import certifi

    from devtools.tls_server import TlsServer

    work = Path(tempfile.mkdtemp(prefix="hindsight-bench-tls-"))
    try:
        before = work / "before"
        label = export_ref(args.before, before, ("chalicelib",))
        with TlsServer(work, close=False) as server:
            bundle = work / "bundle.pem"
            bundle.write_bytes(Path(certifi.where()).read_bytes() + b"\n" + Path(server.ca_path).read_bytes())
            env = {k: v for k, v in os.environ.items() if not k.startswith(("HINDSIGHT_", "PYTHON"))}
            env.update(BENCH_URL=server.url, BENCH_BUNDLE=str(bundle), NO_PROXY="localhost,127.0.0.1")
            sides = {"before": str(before), "after": str(ROOT)}
            print(f"start: load {load_avg()}; before = {label} (chalicelib/), after = the work tree; "
                  f"bundle {bundle.stat().st_size // 1024} KiB", flush=True)
            for cwd in sides.values():  # bytecode, page cache
                run(cwd, env)
            res: dict[str, list[dict]] = {s: [] for s in sides}
            for _ in range(args.runs):
                for side, cwd in sides.items():
                    res[side].append(run(cwd, env))
        print(f"load {load_avg()} after the runs")
        print(f"\nThe review's TLS requests from a fresh process: median [min-max] of {args.runs} interpreters per side, interleaved")
        print(f"{'':<40} | {'before':>22} | {'after':>22} | after/before")
        for key, label in (("build_ms", "build both clients, ms"), ("requests_ms", "5 requests (2 index, 3 LLM), ms"),
                           ("total_ms", "total, ms"), ("cpu_ms", "CPU of the child, ms"), ("loads", "CA bundles parsed")):
            cells = []
            for side in sides:
                xs = [r[key] for r in res[side]]
                cells.append(f"{statistics.median(xs):8.1f} [{min(xs):5.0f}-{max(xs):5.0f}]")
            ratio = statistics.median(r[key] for r in res["after"]) / max(statistics.median(r[key] for r in res["before"]), 1e-9)
            print(f"{label:<40} | {cells[0]:>22} | {cells[1]:>22} | {ratio:8.2f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
