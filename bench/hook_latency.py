"""What a coding agent waits for on each tool call: `hindsight-xp hook ...` as a subprocess, beside
`python -c pass` (the floor of any Python hook).

Usage: .venv/bin/python -m bench.hook_latency [--turns 12] [--calls 3] [--before REF]

The real server (``python -m local.server``, the default embedder, the review worker on) serves a
fresh tenant. Each turn is what an agent's hooks run, with payloads shaped as Claude Code sends
them: `prompt`, then for each tool call `pre-tool` and `post-tool`, then `stop`. The first turns
fail a weather call that lacks `city` and fix it, so later turns get lessons back from recall and
advise. Every hook invocation is a new process, started the way an agent starts it: the
``hindsight-xp hook EVENT`` of docs/hooks.md is the console script pip writes, which imports ``re``
and ``sys`` and calls ``hindsight_xp._entry.main``; the bench runs those same lines with ``python
-c`` (a byte-compiled copy of the SDK source of this checkout on PYTHONPATH, as an install leaves
it), fed its JSON on stdin. Its wall time from fork to exit is timed, and the CPU time it used
(user + system, from the kernel's accounting of the child): on a machine shared with other work,
the wall time is mostly waiting for a core, for the hooks and ``python -c pass`` alike. ``--before REF`` runs the same hooks with the SDK as it is
at git ref REF too (its own sessions on the same server), call by call in turn with this
checkout's side and the baseline, so that noise on a shared machine hits all sides alike.

Prints numbers only; it is not a pass/fail test. The target is p50 under 150 ms per hook call.
"""
from __future__ import annotations

import argparse
import compileall
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench._harness import ROOT, Server, export_ref, pct

WEATHER = "mcp__weather__get_weather"


def _post(url: str, path: str, key: str, body: dict) -> dict:
    import urllib.request

    req = urllib.request.Request(url + path, data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json", "Authorization": f"Bearer {key}"})  # fmt: skip
    with urllib.request.urlopen(req, timeout=30) as resp:
        return json.loads(resp.read() or b"{}")


class Side:
    """One SDK (a source tree with its import package) run as an agent's hook command."""

    def __init__(self, name: str, src: Path, state: Path, url: str, key: str) -> None:
        self.name, self.src, self.state = name, src, state
        self.package = "hindsight_xp" if (src / "hindsight_xp").is_dir() else "hindsight_client"
        compileall.compile_dir(src, quiet=1)  # as pip leaves an install: no module compiled at each start
        env = {k: v for k, v in os.environ.items() if not k.startswith(("HINDSIGHT_", "PYTHONPATH", "PYTHONDONTWRITEBYTECODE"))}
        self.env = env | {"HINDSIGHT_URL": url, "HINDSIGHT_API_KEY": key, "PYTHONPATH": str(src)}

    def command(self, event: str) -> list[str]:
        args = ["hook", event, "--state-dir", str(self.state), "--timeout", "5"]
        if (self.src / self.package / "_entry.py").exists():  # what pip's console script runs
            return [sys.executable, "-c", f"import re, sys; from {self.package}._entry import main; sys.exit(main())", *args]
        return [sys.executable, "-m", self.package, *args]


def turn_payloads(session: str, turn: int, calls: int) -> list[tuple[str, dict]]:
    """One turn of a coding agent: the prompt, ``calls`` tool calls (pre and post), the stop."""
    common = {"session_id": session, "transcript_path": f"{session}.jsonl", "cwd": "/home/dev/weather-app"}
    out: list[tuple[str, dict]] = [("prompt", common | {"hook_event_name": "UserPromptSubmit",
                                                        "prompt": "Will it rain tomorrow where I am?"})]  # fmt: skip
    for i in range(calls):
        use = f"toolu_{turn:03d}_{i}"
        if i == 0 and turn < 3:  # the first turns fail without the city, then fix it
            call, post = {"tool_name": WEATHER, "tool_input": {"date": "tomorrow"}}, {"error": "MissingParameter: city is required"}
            event = "PostToolUseFailure"
        elif i == 0:
            call, post, event = {"tool_name": "Bash", "tool_input": {"command": "curl -s ipinfo.io/city"}}, \
                {"tool_response": {"stdout": "Lyon", "stderr": "", "interrupted": False}}, "PostToolUse"
        else:
            call = {"tool_name": WEATHER, "tool_input": {"date": "tomorrow", "city": "Lyon"}}
            post, event = {"tool_response": {"forecast": "rain"}}, "PostToolUse"
        out.append(("pre-tool", common | {"hook_event_name": "PreToolUse", "tool_use_id": use} | call))
        out.append(("post-tool", common | {"hook_event_name": event, "tool_use_id": use} | call | post))
    out.append(("stop", common | {"hook_event_name": "Stop", "stop_hook_active": False}))
    return out


CPU = "cpu:"  # the key prefix of CPU times beside the wall times of the same events


def timed(cmd: list[str], stdin: str, env: dict[str, str]) -> tuple[float, float, subprocess.CompletedProcess]:
    """Wall and CPU milliseconds of the command (the CPU time of its process and what it waited for)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    done = subprocess.run(cmd, input=stdin, capture_output=True, text=True, env=env, timeout=60)
    wall = (time.perf_counter() - t) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000
    return wall, cpu, done


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--turns", type=int, default=12)
    ap.add_argument("--calls", type=int, default=3, help="tool calls per turn")
    ap.add_argument("--before", metavar="REF", help="also run the SDK as it is at this git ref")
    args = ap.parse_args()

    work = Path(tempfile.mkdtemp(prefix="hindsight-hook-bench-"))
    try:
        shutil.copytree(ROOT / "sdk" / "python" / "src", work / "after", ignore=shutil.ignore_patterns("__pycache__"))
        srcs = [("this checkout", work / "after")]
        if args.before:
            label = export_ref(args.before, work / "before", ("sdk/python/src",))
            srcs.append((label, work / "before" / "sdk" / "python" / "src"))
        with Server(str(work / "data"), {"HINDSIGHT_WORKER": "true"}) as server:
            tenant = _post(server.url, "/v1/tenants", server.admin_key, {"name": "bench"})
            sides = [Side(name, src, work / f"state-{i}", server.url, tenant["api_key"]) for i, (name, src) in enumerate(srcs)]
            floor_env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHONPATH")}
            times: dict[str, dict[str, list[float]]] = {s.name: {} for s in sides} | {"python -c pass": {"all": []}}
            injected = {s.name: 0 for s in sides}
            for turn in range(args.turns):
                per_side = {s.name: turn_payloads(f"bench-{i}", turn, args.calls) for i, s in enumerate(sides)}
                for step in range(len(per_side[sides[0].name])):
                    for side in sides:
                        event, payload = per_side[side.name][step]
                        ms, cpu, done = timed(side.command(event), json.dumps(payload), side.env)
                        if done.returncode != 0:
                            raise SystemExit(f"{side.name}: hook {event} exited {done.returncode}: {done.stderr[-2000:]}")
                        injected[side.name] += bool(done.stdout.strip())
                        times[side.name].setdefault(event, []).append(ms)
                        times[side.name].setdefault("all", []).append(ms)
                        times[side.name].setdefault(CPU + "all", []).append(cpu)
                    ms, cpu, _ = timed([sys.executable, "-c", "pass"], "", floor_env)
                    times["python -c pass"]["all"].append(ms)
                    times["python -c pass"].setdefault(CPU + "all", []).append(cpu)
                if turn < 3:
                    time.sleep(1.0)  # the first turns' reviews land before the next turn's advise
        print(f"\n{args.turns} turns of {args.calls} tool calls ({args.turns * (2 + 2 * args.calls)} hook calls per side), "
              f"wall time per process:")  # fmt: skip
        print(f"{'side':<34}{'event':<11}{'n':>5}{'p50 ms':>9}{'p90 ms':>9}{'max ms':>9}")
        for name, by_event in times.items():
            for event, xs in sorted(by_event.items(), key=lambda kv: (kv[0].startswith(CPU), kv[0] != "all")):
                if not event.startswith(CPU):
                    print(f"{name:<34}{event:<11}{len(xs):>5}{pct(xs, 50):>9.1f}{pct(xs, 90):>9.1f}{max(xs):>9.1f}")
        print("CPU time per process (user + system):")
        for name, by_event in times.items():
            xs = by_event[CPU + "all"]
            print(f"{name:<34}{'all':<11}{len(xs):>5}{pct(xs, 50):>9.1f}{pct(xs, 90):>9.1f}{max(xs):>9.1f}")
        floor, floor_cpu = pct(times["python -c pass"]["all"], 50), pct(times["python -c pass"][CPU + "all"], 50)
        print(f"load average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; python -c pass: p50 {floor:.1f} ms "
              f"wall, {floor_cpu:.1f} ms CPU")  # fmt: skip
        for side in sides:
            p50, cpu = pct(times[side.name]["all"], 50), pct(times[side.name][CPU + "all"], 50)
            print(f"{side.name}: p50 {p50:.1f} ms per hook call ({'under' if p50 < 150 else 'NOT under'} 150 ms), "
                  f"{p50 / floor:.1f}x python -c pass; CPU p50 {cpu:.1f} ms ({cpu / floor_cpu:.1f}x); "
                  f"{injected[side.name]} answers handed text to the agent")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
