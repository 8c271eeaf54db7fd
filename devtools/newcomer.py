"""Play a new user: a fresh clone, then the README and the docs followed literally.

    python3 devtools/newcomer.py                 # a fresh clone, `make run` builds its own .venv
    python3 devtools/newcomer.py --venv .venv    # reuse a built virtualenv (CI: `make test` made it)

Steps, each a block copied from the documentation as it stands (nothing here re-types a command):
1. `make run` (README "Two commands"), in the background, until the server answers;
2. the README's curl recipe ("From zero to a recalled lesson"), twice: the lesson must be recalled;
3. the SDK quick start (docs/sdk.md): `.venv/bin/python examples/weather_agent.py`;
4. the CLI examples (docs/cli.md "Examples"), twice: the recall must show the README's lesson;
5. the MCP example (docs/mcp.md): `hindsight-xp mcp --http`, then the Python block.

Then, outside the repository's virtualenv (``--steps outside``: only these, after `make run` and
the README recipe, which gives the tenant key they use):
6. docs/hooks.md "Setup": a clean virtualenv made and filled by the block as it stands (``~`` is a
   home of its own in the work directory), then the hook commands of its settings block, run as a
   coding agent runs them over two sessions: the first fails a weather call for want of a city,
   finds the city with `curl`, and succeeds; the second gets the lesson at its prompt;
7. a framework example (examples/langchain_weather.py) by the commands of its docstring, in the
   virtualenv of its own they make: run 2 is given the lesson.
The PATH these steps see has no virtualenv on it. pip reads the user's cache as usual; with
``--wheelhouse DIR`` it installs from the wheels in DIR only (``PIP_NO_INDEX``, ``PIP_FIND_LINKS``),
fetched there once per version of the SDK's requirements (the SDK itself is always built from the
clone).

It prints how long each step took and the time from the clone to the first recalled lesson.
Standard library only: it runs before any virtualenv exists. With ``--venv`` the clone's `.venv`
is a link to that virtualenv and make is told not to rebuild it (``make -o``), so the run takes
seconds and needs no network; without it, the install is part of what is measured.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LESSON = "Call `ask_user` before `get_weather`"
STEPS = ("inside", "outside")
WEATHER = "mcp__weather__get_weather"
HOOK_LESSON = f"Call `Bash(curl)` before `{WEATHER}`"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def block(doc: Path, heading: str, lang: str = "bash") -> str:
    """The first fenced ``lang`` block under ``heading`` in ``doc``."""
    text = doc.read_text()
    return re.search(rf"```{lang}\n(.*?)```", text[text.index(heading):], re.S).group(1)


def answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as resp:
            return resp.status == 200
    except OSError:
        return False


def json_documents(text: str) -> list:
    """JSON documents printed back to back (curl adds no newline after a body)."""
    decoder, docs, i = json.JSONDecoder(), [], 0
    while i < len(text):
        if text[i].isspace():
            i += 1
            continue
        try:
            doc, i = decoder.raw_decode(text, i)
        except ValueError:
            i = text.find("{", i + 1) if text.find("{", i + 1) > 0 else len(text)
            continue
        docs.append(doc)
    return docs


def hook_turn(session: str, fail_first: bool) -> list[tuple[str, dict]]:
    """One turn of a coding agent's hook events, as Claude Code sends them: (event name, payload)."""
    common = {"session_id": session, "transcript_path": f"/tmp/{session}.jsonl", "cwd": "/home/dev/weather-app"}
    out: list[tuple[str, dict]] = [("UserPromptSubmit", common | {"prompt": "Will it rain tomorrow where I am?"})]
    calls: list[tuple[dict, dict, str]] = []
    if fail_first:
        calls.append(({"tool_name": WEATHER, "tool_input": {"date": "tomorrow"}},
                      {"error": "MissingParameter: city is required"}, "PostToolUseFailure"))  # fmt: skip
    calls.append(({"tool_name": "Bash", "tool_input": {"command": "curl -s ipinfo.io/city", "description": "Find the city"}},
                  {"tool_response": {"stdout": "Lyon", "stderr": "", "interrupted": False}}, "PostToolUse"))  # fmt: skip
    calls.append(({"tool_name": WEATHER, "tool_input": {"date": "tomorrow", "city": "Lyon"}},
                  {"tool_response": {"forecast": "rain"}}, "PostToolUse"))  # fmt: skip
    for i, (call, result, post) in enumerate(calls):
        use = {"tool_use_id": f"toolu_{session}_{i}"}
        out.append(("PreToolUse", common | use | call))
        out.append((post, common | use | call | result))
    out.append(("Stop", common | {"stop_hook_active": False}))
    return out


class Newcomer:
    def __init__(self, workdir: Path, venv: Path | None, timeout: float, steps: tuple[str, ...] = STEPS,
                 wheelhouse: Path | None = None) -> None:  # fmt: skip
        self.workdir, self.venv, self.timeout, self.steps, self.wheelhouse = workdir, venv, timeout, steps, wheelhouse
        self.repo = workdir / "hindsight"
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(("HINDSIGHT_", "VIRTUAL_ENV"))}
        self.env |= {"HINDSIGHT_URL": self.url, "PORT": str(self.port)}
        self.procs: list[subprocess.Popen] = []
        self.t0 = time.monotonic()
        self.timings: dict[str, float] = {}

    def mark(self, name: str) -> None:
        self.timings[name] = round(time.monotonic() - self.t0, 1)
        print(f"[{self.timings[name]:7.1f} s] {name}", flush=True)

    def sh(self, script: str, name: str, env: dict[str, str] | None = None) -> str:
        out = subprocess.run(["bash", "-c", script], cwd=self.repo, env=env or self.env, capture_output=True,
                             text=True, timeout=self.timeout)  # fmt: skip
        if out.returncode != 0:
            raise SystemExit(f"{name} failed ({out.returncode}):\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}")
        return out.stdout + out.stderr

    def background(self, args: list[str], log: str, env: dict[str, str] | None = None) -> subprocess.Popen:
        # its own process group: make and the server it starts are stopped together
        proc = subprocess.Popen(args, cwd=self.repo, env=env or self.env, stdout=open(self.workdir / log, "wb"),
                                stderr=subprocess.STDOUT, start_new_session=True)  # fmt: skip
        self.procs.append(proc)
        return proc

    def wait_for(self, url: str, proc: subprocess.Popen, log: str, limit: float) -> None:
        deadline = time.monotonic() + limit
        while not answers(url):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"{url} never answered:\n" + (self.workdir / log).read_text()[-3000:])
            time.sleep(0.2)

    def stop(self) -> None:
        for proc in reversed(self.procs):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(15)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)

    def run(self) -> dict[str, float]:
        subprocess.run(["git", "clone", "-q", str(ROOT), str(self.repo)], check=True)
        self.mark("cloned")
        make = ["make", "run"]
        if self.venv is not None:
            (self.repo / ".venv").symlink_to(self.venv.resolve())
            make[1:1] = ["-o", ".venv/.run-installed"]
        server = self.background(make, "make-run.log")
        self.wait_for(f"{self.url}/v1/health", server, "make-run.log", self.timeout)
        self.mark("make run answers")

        recipe = block(self.repo / "README.md", "## From zero to a recalled lesson")
        for n in (1, 2) if "inside" in self.steps else (1,):
            recalled = json_documents(self.sh(recipe, f"README recipe, run {n}"))[-1]
            if not recalled.get("hits") or LESSON not in recalled.get("advice", ""):
                raise SystemExit(f"README recipe, run {n}: no lesson recalled: {recalled}")
            self.mark(f"README recipe run {n}: lesson recalled")
        if "inside" in self.steps:
            self.inside()
        if "outside" in self.steps:
            self.outside()
        return self.timings

    def inside(self) -> None:
        """The SDK, the CLI and the MCP server of the repository's virtualenv."""

        quick = block(self.repo / "docs" / "sdk.md", "## Five minutes from clone to a recalled lesson")
        agent_line = next(line for line in quick.splitlines() if "examples/weather_agent.py" in line)
        printed = self.sh(agent_line.split("#")[0], "SDK quick start")
        if "run 2 (with hindsight): 3 steps" not in printed or LESSON not in printed:
            raise SystemExit(f"SDK quick start: the second run did not use the lesson:\n{printed}")
        self.mark("SDK quick start: run 2 used the lesson")

        cli = block(self.repo / "docs" / "cli.md", "## Examples")
        for n in (1, 2):
            printed = self.sh(cli, f"CLI examples, run {n}")
            if "ask_user" not in printed or "<hindsight>" not in printed:
                raise SystemExit(f"CLI examples, run {n}: the README's lesson was not recalled:\n{printed}")
            self.mark(f"CLI examples run {n}: lesson recalled")

        mcp_port = free_port()
        key = (self.repo / ".hindsight" / "acme_key").read_text().strip()
        mcp_env = self.env | {"HINDSIGHT_MCP_URL": f"http://127.0.0.1:{mcp_port}/mcp", "HINDSIGHT_API_KEY": key}
        mcp = self.background([".venv/bin/hindsight-xp", "mcp", "--http", "--port", str(mcp_port)], "mcp.log", mcp_env)
        self.wait_for(f"http://127.0.0.1:{mcp_port}/health", mcp, "mcp.log", 60)
        snippet = self.workdir / "mcp_example.py"
        snippet.write_text(block(self.repo / "docs" / "mcp.md", "From Python", "python"))
        printed = self.sh(f".venv/bin/python {snippet}", "MCP example", mcp_env)
        if LESSON not in printed:
            raise SystemExit(f"MCP example: the lesson was not recalled:\n{printed}")
        self.mark("MCP example: lesson recalled")

    def outside_env(self) -> dict[str, str]:
        """The environment of a shell with no virtualenv on its PATH, and a home of its own."""
        home = self.workdir / "home"
        home.mkdir(exist_ok=True)
        path = [p for p in self.env.get("PATH", "").split(os.pathsep) if p and "venv" not in p]
        pip_cache = os.environ.get("PIP_CACHE_DIR") or str(Path.home() / ".cache" / "pip")
        env = {k: v for k, v in self.env.items() if not k.startswith(("PYTHON", "PIP_"))} | {
            "HOME": str(home), "PATH": os.pathsep.join(path), "PIP_CACHE_DIR": pip_cache,
            "PIP_DISABLE_PIP_VERSION_CHECK": "1"}  # fmt: skip
        if self.wheelhouse is not None:
            self.fill_wheelhouse(env)
            env |= {"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(self.wheelhouse.resolve())}
        return env

    def fill_wheelhouse(self, env: dict[str, str]) -> None:
        """The wheels the outside steps install (the SDK's extras they use, and the build's
        setuptools), fetched into the wheelhouse once for each version of the SDK's requirements
        (a marker named by the digest of sdk/python/pyproject.toml says they are there)."""
        import hashlib

        assert self.wheelhouse is not None
        self.wheelhouse.mkdir(parents=True, exist_ok=True)
        digest = hashlib.sha256((self.repo / "sdk" / "python" / "pyproject.toml").read_bytes()).hexdigest()[:16]
        marker = self.wheelhouse / f".filled-{digest}"
        if not marker.exists():
            wants = ["./sdk/python[cli,langchain]", "setuptools>=64", "wheel"]
            self.sh(f"{sys.executable} -m pip wheel -q -w {self.wheelhouse.resolve()} " + " ".join(f"'{w}'" for w in wants),
                    "filling the wheelhouse", env)  # fmt: skip
            marker.touch()
        for built in self.wheelhouse.glob("hindsight_xp-*.whl"):
            built.unlink()  # the SDK is built from the clone, never taken from here
        self.mark("wheelhouse ready")

    def outside(self) -> None:
        """docs/hooks.md and a framework example, each in a clean virtualenv outside the repository's."""
        env = self.outside_env()
        hooks_md = self.repo / "docs" / "hooks.md"
        self.sh(block(hooks_md, "## Setup"), "docs/hooks.md setup (a clean virtualenv)", env)
        home_bin = Path(env["HOME"]) / ".hindsight-hooks" / "bin"
        if not (home_bin / "hindsight-xp").exists():
            raise SystemExit(f"docs/hooks.md setup: no hindsight-xp in {home_bin}")
        self.mark("docs/hooks.md: hindsight-xp installed in a clean virtualenv")

        settings = json.loads(block(hooks_md, "## Setup", "json"))
        key = (self.repo / ".hindsight" / "acme_key").read_text().strip()
        hook_env = env | settings["env"] | {"HINDSIGHT_URL": self.url, "HINDSIGHT_API_KEY": key,
                                            "PATH": f"{home_bin}{os.pathsep}{env['PATH']}"}  # fmt: skip
        commands = {event: entries[0]["hooks"][0]["command"] for event, entries in settings["hooks"].items()}

        def turn(session: str, fail_first: bool) -> list[str]:
            printed = []
            for event, payload in hook_turn(session, fail_first):
                out = subprocess.run(["bash", "-c", commands[event]], input=json.dumps(payload | {"hook_event_name": event}),
                                     cwd=self.workdir, env=hook_env, capture_output=True, text=True, timeout=60)  # fmt: skip
                if out.returncode != 0:
                    raise SystemExit(f"hook {commands[event]} exited {out.returncode}:\n{out.stderr[-2000:]}")
                printed.append(out.stdout)
            return printed

        turn("newcomer-1", fail_first=True)
        reviewed = self.wait_reviewed("cc-newcomer-1-1", key)
        if not reviewed.get("experience_ids"):
            raise SystemExit(f"docs/hooks.md: the hooks' turn taught nothing: {reviewed}")
        told = "".join(turn("newcomer-2", fail_first=False))
        if HOOK_LESSON not in told:
            raise SystemExit(f"docs/hooks.md: the next session was not given the lesson:\n{told}")
        self.mark("docs/hooks.md hooks: lesson recalled")

        example = self.repo / "examples" / "langchain_weather.py"
        doc = re.search(r'"""(.*?)"""', example.read_text(), re.S).group(1)
        lines = [line.split("  #")[0].strip() for line in doc.splitlines() if line.startswith("    ")]
        printed = self.sh("set -e\n" + "\n".join(lines[1:]), "examples/langchain_weather.py", env)  # lines[0]: make run
        if re.search(r"^ERROR", printed, re.M):  # pip's resolver complains, yet exits 0
            raise SystemExit(f"examples/langchain_weather.py: its install printed an error:\n{printed[-3000:]}")
        if "run 2" not in printed or LESSON not in printed:
            raise SystemExit(f"examples/langchain_weather.py: run 2 was not given the lesson:\n{printed}")
        self.mark("framework example (langchain) in its own virtualenv: lesson recalled")

    def wait_reviewed(self, trajectory_id: str, key: str, limit: float = 60) -> dict:
        deadline = time.monotonic() + limit
        while True:
            req = urllib.request.Request(f"{self.url}/v1/trajectories/{trajectory_id}", headers={"Authorization": f"Bearer {key}"})
            try:
                with urllib.request.urlopen(req, timeout=5) as resp:
                    traj = json.loads(resp.read())
            except OSError:
                traj = {}
            if traj.get("status") == "reviewed" or time.monotonic() > deadline:
                return traj
            time.sleep(0.2)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--venv", type=Path, help="reuse this virtualenv instead of letting `make run` build one")
    parser.add_argument("--timeout", type=float, default=900, help="seconds allowed for each step")
    parser.add_argument("--keep", action="store_true", help="keep the clone and its logs")
    parser.add_argument("--steps", default=",".join(STEPS),
                        help="inside (the repository's virtualenv: SDK, CLI, MCP), outside (clean virtualenvs: hooks, a "
                             "framework example), or both")  # fmt: skip
    parser.add_argument("--wheelhouse", type=Path, help="install the outside steps' packages from this folder of wheels "
                                                        "only (fetched there first when it lacks them)")  # fmt: skip
    args = parser.parse_args(argv)
    steps = tuple(s.strip() for s in args.steps.split(",") if s.strip())
    if not steps or set(steps) - set(STEPS):
        parser.error(f"--steps: one or more of {', '.join(STEPS)}")
    workdir = Path(tempfile.mkdtemp(prefix="hindsight-newcomer-"))
    newcomer = Newcomer(workdir, args.venv, args.timeout, steps, args.wheelhouse)
    try:
        timings = newcomer.run()
    finally:
        newcomer.stop()
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    first = timings["README recipe run 1: lesson recalled"]
    print(f"clone to first recalled lesson: {first:.1f} s ({'reused virtualenv' if args.venv else 'fresh install'})")
    print(json.dumps(timings))
    return 0


if __name__ == "__main__":
    sys.exit(main())
