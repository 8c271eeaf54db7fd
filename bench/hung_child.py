"""One ingest process stopped (SIGSTOP): what still answers, on the real server; with ``--before
REF`` the same on a git ref's server first.

Usage: .venv/bin/python -m bench.hung_child [--tenants 24] [--appends 4] [--threads 8] [--before REF]

The server runs 2 ingest processes and ``--threads`` request threads. Each of ``--tenants``
tenants starts a trajectory; then one child is stopped, and every tenant appends ``--appends``
batches from a thread of its own (client timeout 30 s) while /v1/health is asked every 0.3 s for
10 s (timeout 2 s). Counted: health answers within 2 s and the slowest one, appends made, appends
not answered, and whether (and when) the stopped child was killed and another started.
Prints numbers only; it is not a pass/fail test.
"""
from __future__ import annotations

import argparse
import os
import shutil
import signal
import tempfile
import threading
import time
from pathlib import Path

from bench._harness import Server, before_and_after, child_pids


def ingest_children(pid: int) -> list[int]:
    out = []
    for kid in child_pids(pid):
        try:
            if b"local.ingest" in Path(f"/proc/{kid}/cmdline").read_bytes():
                out.append(kid)
        except OSError:
            pass
    return out


def state(pid: int) -> str:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("State:"):
                return line.split()[1]
    except OSError:
        pass
    return "gone"


def measure(label: str, root: Path | None, args) -> dict[str, object]:
    import httpx

    data_dir = tempfile.mkdtemp(prefix="hindsight-hung-child-")
    env = {"HINDSIGHT_EMBEDDER": "hash", "HINDSIGHT_INGEST_PROCESSES": "2", "HINDSIGHT_THREADS": str(args.threads)}
    out: dict[str, object] = {}
    stopped = None
    try:
        with Server(data_dir, env, root=root) as server:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and "child processes listening" not in server.log_path.read_text():
                time.sleep(0.1)
            kids = ingest_children(server.proc.pid)
            clients = []
            for i in range(args.tenants):
                key = httpx.post(f"{server.url}/v1/tenants", json={"name": f"t{i}"},
                                 headers={"Authorization": f"Bearer {server.admin_key}"}).json()["api_key"]
                c = httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {key}"}, timeout=30, trust_env=False)
                c.post("/v1/trajectories", json={"trajectory_id": "t", "agent_id": "a", "goal": "g"}).raise_for_status()
                clients.append(c)
            stopped = kids[0]
            os.kill(stopped, signal.SIGSTOP)
            began = time.monotonic()
            made, lost = [0], [0]

            def append(c) -> None:
                for b in range(args.appends):
                    try:
                        resp = c.post("/v1/trajectories/t/events", json={"events": [
                            {"event_id": f"e{b}", "type": "tool_call", "content": {"tool": "sql", "status": "ok"}}]})
                        made[0] += resp.status_code == 202
                    except httpx.HTTPError:
                        lost[0] += 1

            threads = [threading.Thread(target=append, args=(c,), daemon=True) for c in clients]
            for t in threads:
                t.start()
            health, slowest, replaced_at = 0, 0.0, None
            asked = 0
            while time.monotonic() - began < 10:
                asked += 1
                t = time.monotonic()
                try:
                    ok = httpx.get(f"{server.url}/v1/health", timeout=2.0).status_code == 200
                except httpx.HTTPError:
                    ok = False
                took = time.monotonic() - t
                slowest = max(slowest, took)
                health += ok and took < 2.0
                if replaced_at is None and state(stopped) in ("gone", "Z"):
                    replaced_at = time.monotonic() - began
                time.sleep(0.3)
            for t in threads:
                t.join(40)
            if replaced_at is None and state(stopped) in ("gone", "Z"):
                replaced_at = time.monotonic() - began
            out = {"health within 2 s": f"{health} of {asked}", "slowest health s": round(slowest, 2),
                   "appends made": f"{made[0]} of {args.tenants * args.appends}", "appends unanswered (30 s)": lost[0],
                   "stopped child replaced after s": "never" if replaced_at is None else round(replaced_at, 1),
                   "ingest children after": len(ingest_children(server.proc.pid))}
            for c in clients:
                c.close()
            if state(stopped) == "T":
                os.kill(stopped, signal.SIGCONT)
    finally:
        if stopped is not None and state(stopped) == "T":
            os.kill(stopped, signal.SIGCONT)
        shutil.rmtree(data_dir, ignore_errors=True)
    print(f"[{label}] {out}", flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.hung_child", description=__doc__.split("\n")[0])
    ap.add_argument("--tenants", type=int, default=24)
    ap.add_argument("--appends", type=int, default=4)
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--before", help="a git ref whose server is measured the same way first")
    args = ap.parse_args()
    runs = before_and_after(args.before, lambda label, code: measure(label, code, args), "hindsight-hung-child-ref-")
    names = list(runs)
    print(f"\none of 2 ingest processes stopped; {args.tenants} tenants x {args.appends} appends; {args.threads} threads")
    print(f"{'measure':<34}" + "".join(f"{n[:30]:>32}" for n in names))
    for key in runs[names[-1]]:
        print(f"{key:<34}" + "".join(f"{str(runs[n].get(key, '-')):>32}" for n in names))


if __name__ == "__main__":
    main()
