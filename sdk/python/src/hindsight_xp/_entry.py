"""The `hindsight-xp` command: hook commands on the standard library alone, everything else by typer.

A coding agent runs ``hindsight-xp hook EVENT`` around every tool call, so that command line is read
here without importing the CLI (typer, rich) or the HTTP client (httpx): start-up is most of a
hook's time. Any other command line, ``--help``, or a hook command line this does not read (an
unknown option, a value out of range) goes to the typer app, which answers it as before.
"""
from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing, pathlib and the CLI stay out of a hook's start-up
if TYPE_CHECKING:
    from typing import Any, Sequence

EVENTS = ("prompt", "pre-tool", "post-tool", "stop")
_GLOBAL = {"--url": "url", "--api-key": "api_key", "--admin-key": "admin_key"}
_HOOK = {"--agent-id": "agent_id", "--timeout": "timeout", "--state-dir": "state_dir"}
TIMEOUT_RANGE = (0.1, 30.0)  # the typer command's bounds (cli/hooks.py)


def _options(argv: Sequence[str], names: dict[str, str], flags: Sequence[str] = ()) -> tuple[dict[str, Any], int] | None:
    """``--name value`` / ``--name=value`` options at the start of ``argv``: (values, where they end)."""
    out: dict[str, Any] = {}
    i = 0
    while i < len(argv) and argv[i].startswith("-"):
        name, eq, value = argv[i].partition("=")
        if name in flags and not eq:
            out[name.lstrip("-")] = True
            i += 1
            continue
        if name not in names:
            return None
        if not eq:
            i += 1
            if i >= len(argv):
                return None
            value = argv[i]
        out[names[name]] = value
        i += 1
    return out, i


def hook_command(argv: Sequence[str]) -> dict[str, Any] | None:
    """``[--url U] [--api-key K] [--admin-key A] hook EVENT [--agent-id A] [--timeout S] [--state-dir D]
    [--verbose]`` as ``run_hook``'s arguments; None for anything else."""
    found = _options(argv, _GLOBAL)
    if found is None:
        return None
    settings, i = found
    if list(argv[i:i + 1]) != ["hook"] or len(argv) < i + 2 or argv[i + 1] not in EVENTS:
        return None
    event = argv[i + 1]
    found = _options(argv[i + 2:], _HOOK, flags=("--verbose",))
    if found is None or found[1] != len(argv) - i - 2:  # something after the options: not ours to read
        return None
    opts = found[0]
    try:
        timeout = float(opts.get("timeout", 2.0))
    except ValueError:
        return None
    if not TIMEOUT_RANGE[0] <= timeout <= TIMEOUT_RANGE[1]:
        return None
    from ._env import read_env
    from .hooks import DEFAULT_AGENT

    env = read_env()
    return {"event": event, "url": settings.get("url") or env["url"], "api_key": settings.get("api_key") or env["api_key"],
            "agent_id": opts.get("agent_id") or DEFAULT_AGENT, "timeout": timeout,
            "state_dir": opts.get("state_dir") or None, "verbose": bool(opts.get("verbose"))}  # fmt: skip


def hoist_global_options(argv: Sequence[str]) -> list[str]:
    """``--url``, ``--api-key`` and ``--admin-key`` moved before the command wherever they stand
    (``tenants create acme --admin-key K`` as ``--admin-key K tenants create acme``); ``--`` ends
    the options."""
    front: list[str] = []
    rest: list[str] = []
    i = 0
    while i < len(argv):
        word = argv[i]
        if word == "--":
            rest += argv[i:]
            break
        name, eq, _ = word.partition("=")
        if name in _GLOBAL:
            if eq:
                front.append(word)
            elif i + 1 < len(argv):
                front += [word, argv[i + 1]]
                i += 1
            else:
                rest.append(word)  # no value: typer says so
        else:
            rest.append(word)
        i += 1
    return front + rest


def main(argv: Sequence[str] | None = None) -> None:
    args = hoist_global_options(sys.argv[1:] if argv is None else argv)
    hook = hook_command(args)
    if hook is not None:
        from .hooks import run_hook

        raise SystemExit(run_hook(hook.pop("event"), **hook))
    from .cli import app

    app(args=args, prog_name="hindsight-xp")
