"""Run a command against a real server: ``python -m devtools.with_server -- npm test``.

The server is ``make run``'s (``ServerProcess``), on a free port, with a fresh data directory, a
fresh admin key and the fast hash embedder. The command gets ``HINDSIGHT_URL`` and
``HINDSIGHT_ADMIN_KEY`` (and none of the caller's other ``HINDSIGHT_*`` variables); the server
stops when the command ends, and its log is shown if the command failed. The exit status is the
command's. Test suites in other languages (the TypeScript SDK's) start the server this way.
"""
from __future__ import annotations

import argparse
import os
import secrets
import signal
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from devtools.server_process import ServerProcess


def _stop_on_sigterm() -> None:
    # The default SIGTERM action would leave the server running; SystemExit unwinds the with-blocks.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))


def _stop_group(child: subprocess.Popen) -> None:
    """SIGTERM to the command's process group (what it started included), SIGKILL if it lingers."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(child.pid, sig)
        except ProcessLookupError:
            return
        try:
            child.wait(10)
        except subprocess.TimeoutExpired:
            continue
        if sig == signal.SIGTERM:
            # the command itself ended; anything else left in its group is killed
            try:
                os.killpg(child.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            return


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m devtools.with_server", description=__doc__.splitlines()[0])
    parser.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                        help="a setting of the server (repeatable), e.g. HINDSIGHT_EMBEDDER=e5")  # fmt: skip
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the command to run, after --")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command given (python -m devtools.with_server -- CMD ...)")
    admin_key = f"hsadmin_{secrets.token_hex(16)}"
    settings = {"HINDSIGHT_EMBEDDER": "hash", "HINDSIGHT_ADMIN_KEY": admin_key}
    settings |= dict(item.split("=", 1) for item in args.env)
    _stop_on_sigterm()
    with tempfile.TemporaryDirectory(prefix="hindsight-with-server-") as tmp, \
            ServerProcess(Path(tmp) / "data", settings) as server:  # fmt: skip
        env = {k: v for k, v in os.environ.items() if not k.startswith("HINDSIGHT_")}
        env |= {"HINDSIGHT_URL": server.url, "HINDSIGHT_ADMIN_KEY": server.admin_key}
        print(f"==> server at {server.url}: {' '.join(command)}", flush=True)
        # A process group of its own: npm runs node through a shell, and what it started must go too.
        child = subprocess.Popen(command, env=env, start_new_session=True)
        try:
            code = child.wait()
        finally:
            _stop_group(child)
        if code != 0:
            print(f"==> the command exited with {code}; the server's last lines:\n{server.log_tail(40)}", flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
