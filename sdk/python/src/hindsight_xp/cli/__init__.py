"""The `hindsight-xp` command. Settings: --url/--api-key/--admin-key, else HINDSIGHT_URL /
HINDSIGHT_API_KEY / HINDSIGHT_ADMIN_KEY."""
from __future__ import annotations

from dataclasses import replace
from typing import Optional

import typer

from ..config import Config
from . import backup, hooks, ops, reviews, tenants
from ._common import config

app = typer.Typer(
    name="hindsight-xp",
    help="hindsight: experience memory for LLM agents. Manage tenants, back up lessons, recall, serve MCP.",
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,  # locals would print API keys
)
app.add_typer(tenants.app, name="tenants")
app.add_typer(reviews.app, name="reviews")
app.add_typer(hooks.app, name="hook")
app.command("export")(backup.export)
app.command("import")(backup.import_)
app.command("recall")(ops.recall)
app.command("advise")(ops.advise)
app.command("write")(ops.write)
app.command("restore")(ops.restore)
app.command("stats")(ops.stats)
app.command("reindex")(ops.reindex)
app.command("decay")(ops.decay)
app.command("health")(ops.health)


@app.callback()
def settings(
    ctx: typer.Context,
    url: Optional[str] = typer.Option(None, "--url", help="Service URL [env HINDSIGHT_URL, default http://127.0.0.1:8000]"),
    api_key: Optional[str] = typer.Option(None, "--api-key", help="Tenant key [env HINDSIGHT_API_KEY]"),
    admin_key: Optional[str] = typer.Option(None, "--admin-key", help="Admin key [env HINDSIGHT_ADMIN_KEY]"),
) -> None:
    env = Config.from_env()
    ctx.obj = replace(env, url=url or env.url, api_key=api_key or env.api_key, admin_key=admin_key or env.admin_key)


@app.command("mcp")
def mcp(
    ctx: typer.Context,
    http: bool = typer.Option(False, "--http", help="Serve streamable HTTP on /mcp instead of stdio."),
    host: str = typer.Option("127.0.0.1", "--host"),
    port: int = typer.Option(8765, "--port"),
) -> None:
    """Run the MCP server (stdio by default; --http for streamable HTTP with GET /health).

    Over HTTP, the tenant key may come from each MCP request's Authorization header.
    """
    from ..mcp_server import run

    run("streamable-http" if http else "stdio", host=host, port=port, config=config(ctx))


def main() -> None:
    """The typer app, with the global options accepted after the command too (``_entry``)."""
    import sys

    from .._entry import hoist_global_options

    app(args=hoist_global_options(sys.argv[1:]), prog_name="hindsight-xp")
