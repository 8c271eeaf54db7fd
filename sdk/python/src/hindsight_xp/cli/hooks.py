"""`hindsight-xp hook prompt | pre-tool | post-tool | stop`: the commands a coding agent's hooks run.

Fail-open by construction: whatever happens (no key, service down or slow, a payload it does not
understand), the command prints nothing and exits 0 within ``--timeout`` seconds (plus start-up),
so the agent goes on as if no hook were there. Errors go to stderr only with ``--verbose``.
"""
from __future__ import annotations

import json
import signal
import sys
from pathlib import Path
from typing import Any, Optional

import typer

from .._retry import NO_RETRY
from ..client import Hindsight
from ..hooks import DEFAULT_AGENT, HookRunner
from ._common import config

app = typer.Typer(help="Hooks for coding agents (Claude Code and the like): read the hook JSON on stdin.",
                  no_args_is_help=True)  # fmt: skip
MAX_PAYLOAD = 4 * 1024 * 1024


class _Deadline(Exception):
    pass


def _alarm(_signum: int, _frame: Any) -> None:
    raise _Deadline()


def run_hook(ctx: typer.Context, event: str, agent_id: str, timeout: float, state_dir: Optional[Path], verbose: bool) -> None:
    # a hard stop for anything the per-request timeouts do not bound (DNS, a stuck read of stdin)
    has_alarm = hasattr(signal, "SIGALRM")
    if has_alarm:
        signal.signal(signal.SIGALRM, _alarm)
        signal.setitimer(signal.ITIMER_REAL, timeout * 2 + 1)
    try:
        payload = json.loads(sys.stdin.read(MAX_PAYLOAD) or "{}")
        if not isinstance(payload, dict):
            raise ValueError("the hook payload is not a JSON object")
        cfg = config(ctx)
        if not cfg.api_key:
            raise ValueError("HINDSIGHT_API_KEY is not set")
        with Hindsight(cfg.url, cfg.api_key, timeout=timeout, retry=NO_RETRY) as client:
            answer = HookRunner(client, payload, agent_id=agent_id, state_dir=state_dir, timeout=timeout).run(event)
        if answer:
            sys.stdout.write(json.dumps(answer) + "\n")
    except (Exception, _Deadline) as exc:  # fail-open: the agent must never wait on its memory
        if verbose:
            sys.stderr.write(f"hindsight-xp hook {event}: {type(exc).__name__}: {exc}\n")
    finally:
        if has_alarm:
            signal.setitimer(signal.ITIMER_REAL, 0)
    raise typer.Exit(0)


def _command(event: str, doc: str):
    def command(
        ctx: typer.Context,
        agent_id: str = typer.Option(DEFAULT_AGENT, "--agent-id", help="The agent the lessons belong to."),
        timeout: float = typer.Option(2.0, "--timeout", min=0.1, max=30.0, help="Seconds for each request to hindsight."),
        state_dir: Optional[Path] = typer.Option(None, "--state-dir", help="Where session state is kept "
                                                 "[default: $XDG_STATE_HOME/hindsight/hooks]"),
        verbose: bool = typer.Option(False, "--verbose", help="Print errors to stderr (still exit 0)."),
    ) -> None:
        run_hook(ctx, event, agent_id, timeout, state_dir, verbose)

    command.__doc__ = doc
    return command


app.command("prompt")(_command("prompt", "UserPromptSubmit: start the turn's trajectory and recall lessons for the prompt."))
app.command("pre-tool")(_command("pre-tool", "PreToolUse: advice on the call about to be made."))
app.command("post-tool")(_command("post-tool", "PostToolUse / PostToolUseFailure: record the call and its outcome."))
app.command("stop")(_command("stop", "Stop: finalize the turn's trajectory."))
