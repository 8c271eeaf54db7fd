"""What every command shares: the settings from the global options, the client, error display."""
from __future__ import annotations

import functools
from typing import Any, Callable, TypeVar

import typer
from rich.console import Console

from ..client import Hindsight
from ..config import Config
from ..errors import APIError, ConfigurationError, HindsightError

F = TypeVar("F", bound=Callable[..., Any])


def out() -> Console:
    """A console per use, so it sees the terminal (and COLUMNS) of this invocation."""
    return Console()


def err() -> Console:
    return Console(stderr=True)


def config(ctx: typer.Context) -> Config:
    cfg = ctx.find_root().obj
    return cfg if isinstance(cfg, Config) else Config.from_env()


def client(ctx: typer.Context) -> Hindsight:
    cfg = config(ctx)
    return Hindsight(cfg.url, cfg.api_key, admin_key=cfg.admin_key, timeout=cfg.timeout)


def handles_errors(command: F) -> F:
    """Service errors end the command with a one-line message and exit code 1, not a traceback."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except ConfigurationError as exc:
            err().print(f"[red]error:[/red] {exc} (or use --api-key / --admin-key)")
        except APIError as exc:
            hint = " (this service does not have that endpoint yet)" if exc.status in (404, 405) and exc.code in (
                "not_found", "method_not_allowed") and "no route" in exc.message else ""  # fmt: skip
            err().print(f"[red]error:[/red] {exc.status} {exc.code}: {exc.message}{hint}")
        except HindsightError as exc:
            err().print(f"[red]error:[/red] {exc}")
        raise typer.Exit(1)

    return wrapper  # type: ignore[return-value]
