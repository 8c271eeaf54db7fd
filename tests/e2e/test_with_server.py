"""``python -m devtools.with_server -- CMD``: the launcher that other languages' test suites (the
TypeScript SDK's) run under."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import httpx
import pytest

from devtools.server_process import ROOT

# What the command does: report what it sees, prove the admin key works, exit with a chosen status.
PROBE = """
import json, os, sys, httpx
url, key = os.environ["HINDSIGHT_URL"], os.environ["HINDSIGHT_ADMIN_KEY"]
made = httpx.post(url + "/v1/tenants", json={"name": "probe"}, headers={"Authorization": "Bearer " + key})
leaked = sorted(k for k in os.environ if k.startswith("HINDSIGHT_") and k not in ("HINDSIGHT_URL", "HINDSIGHT_ADMIN_KEY"))
print(json.dumps({"url": url, "health": httpx.get(url + "/v1/health").json(), "tenant": made.status_code, "leaked": leaked}))
sys.exit(int(sys.argv[1]))
"""


def launch(exit_code: int) -> tuple[subprocess.CompletedProcess[str], dict]:
    env = {**os.environ, "HINDSIGHT_API_KEY": "hs_of_the_developer", "HINDSIGHT_EMBEDDER": "e5"}
    done = subprocess.run([sys.executable, "-m", "devtools.with_server", "--", sys.executable, "-c", PROBE, str(exit_code)],
                          check=False, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)  # fmt: skip
    line = next(line for line in done.stdout.splitlines() if line.startswith("{"))
    return done, json.loads(line)


def test_the_command_gets_a_running_server_and_its_admin_key_and_the_server_stops_after() -> None:
    done, seen = launch(0)
    assert done.returncode == 0, done.stdout + done.stderr
    assert seen["health"]["status"] == "ok" and seen["tenant"] == 201
    assert seen["leaked"] == [], "the caller's HINDSIGHT_* settings stay out of the command"
    with pytest.raises(httpx.TransportError):  # the server stopped with the command
        httpx.get(f"{seen['url']}/v1/health", timeout=2)


def test_the_exit_status_is_the_commands_and_a_failure_shows_the_servers_log() -> None:
    done, _ = launch(3)
    assert done.returncode == 3
    assert "the command exited with 3; the server's last lines" in done.stdout


def test_stopped_from_outside_it_stops_the_command_and_the_server() -> None:
    # through a shell, as npm runs node: the waiting process is the command's child
    launcher = subprocess.Popen([sys.executable, "-m", "devtools.with_server", "--", "sh", "-c", f"{sys.executable} -c '{WAIT}'; true"],
                                cwd=ROOT, stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert launcher.stdout is not None
        url = launcher.stdout.readline().split()[3].rstrip(":")  # "==> server at URL: CMD"
        command_pid = int(launcher.stdout.readline())
        launcher.send_signal(signal.SIGTERM)
        assert launcher.wait(timeout=20) != 0
    finally:
        launcher.kill()
    try:
        os.kill(command_pid, 0)
    except ProcessLookupError:
        pass
    else:
        raise AssertionError("what the command started outlived the launcher")
    with pytest.raises(httpx.TransportError):
        httpx.get(f"{url}/v1/health", timeout=2)


WAIT = "import os, time; print(os.getpid(), flush=True); time.sleep(60)"
