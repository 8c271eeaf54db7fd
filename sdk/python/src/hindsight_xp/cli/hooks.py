"""`hindsight-xp hook prompt | pre-tool | post-tool | stop`: the commands a coding agent's hooks run.

The command line ``hindsight-xp hook ...`` does not come here: ``hindsight_xp._entry`` reads it
with the standard library and calls ``hooks.run_hook`` without importing typer, rich or httpx (a
hook runs on every tool call). These typer commands are what ``--help`` shows, and what runs for a
command line the fast path does not read; both call the same ``run_hook``.

Fail-open by construction: whatever happens (no key, service down or slow, a payload it does not
understand), the command prints nothing and exits 0 within ``--timeout`` seconds (plus start-up),
so the agent goes on as if no hook were there. Errors go to stderr only with ``--verbose``.
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from .._entry import TIMEOUT_RANGE
from ..hooks import DEFAULT_AGENT, run_hook
from ._common import config

app = typer.Typer(help="Hooks for coding agents (Claude Code and the like): read the hook JSON on stdin.",
                  no_args_is_help=True)  # fmt: skip


def _command(event: str, doc: str):
    def command(
        ctx: typer.Context,
        agent_id: str = typer.Option(DEFAULT_AGENT, "--agent-id", help="The agent the lessons belong to."),
        timeout: float = typer.Option(2.0, "--timeout", min=TIMEOUT_RANGE[0], max=TIMEOUT_RANGE[1],
                                      help="Seconds for each request to hindsight."),  # fmt: skip
        state_dir: Optional[Path] = typer.Option(None, "--state-dir", help="Where session state is kept "
                                                 "[default: $XDG_STATE_HOME/hindsight/hooks]"),
        verbose: bool = typer.Option(False, "--verbose", help="Print errors to stderr (still exit 0)."),
    ) -> None:
        cfg = config(ctx)
        run_hook(event, url=cfg.url, api_key=cfg.api_key, agent_id=agent_id, timeout=timeout, state_dir=state_dir,
                 verbose=verbose)  # fmt: skip
        raise typer.Exit(0)

    command.__doc__ = doc
    return command


app.command("prompt")(_command("prompt", "UserPromptSubmit: start the turn's trajectory and recall lessons for the prompt."))
app.command("pre-tool")(_command("pre-tool", "PreToolUse: advice on the call about to be made."))
app.command("post-tool")(_command("post-tool", "PostToolUse / PostToolUseFailure: record the call and its outcome."))
app.command("stop")(_command("stop", "Stop: finalize the turn's trajectory."))
