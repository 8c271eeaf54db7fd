"""`hindsight-xp tenants ...`: tenants and their API keys (admin key)."""
from __future__ import annotations

import json

import typer
from rich.table import Table

from ._common import client, err, handles_errors, out

app = typer.Typer(help="Create and list tenants, rotate their API keys (needs the admin key).", no_args_is_help=True)


@app.command("create")
@handles_errors
def create(ctx: typer.Context, name: str = typer.Argument(..., help="A name for the tenant, e.g. the team."),
           as_json: bool = typer.Option(False, "--json", help="Print JSON (for scripts).")) -> None:  # fmt: skip
    """Create a tenant and print its API key (shown once: only its hash is stored)."""
    with client(ctx) as hs:
        tenant = hs.create_tenant(name)
    if as_json:
        out().print_json(json.dumps({"tenant_id": tenant.tenant_id, "name": name, "api_key": tenant.api_key}))
        return
    out().print(f"tenant_id: [bold]{tenant.tenant_id}[/bold]")
    out().print(f"api_key:   [bold]{tenant.api_key}[/bold]", soft_wrap=True)
    err().print("[yellow]Keep the key now: the service stores only its hash and cannot show it again.[/yellow]")


@app.command("list")
@handles_errors
def list_(ctx: typer.Context, as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """List the tenants."""
    with client(ctx) as hs:
        tenants = hs.list_tenants()
    if as_json:
        out().print_json(json.dumps([{"tenant_id": t.tenant_id, "name": t.name,
                                        "created_at": t.created_at.isoformat() if t.created_at else None,
                                        "event_retention_days": t.event_retention_days}
                                       for t in tenants]))  # fmt: skip
        return
    table = Table("tenant_id", "name", "created_at", "event retention", title=f"{len(tenants)} tenants")
    for t in tenants:
        table.add_row(t.tenant_id, t.name, t.created_at.isoformat(timespec="seconds") if t.created_at else "",
                      "default" if t.event_retention_days is None else f"{t.event_retention_days} d")
    out().print(table)


@app.command("retention")
@handles_errors
def retention(
    ctx: typer.Context,
    tenant_id: str = typer.Argument(..., help="The tenant."),
    days: str = typer.Argument(..., help="Days its new trajectories keep their events; 0: for good; 'default': the deployment's."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Set how long the events of the trajectories a tenant starts from now on are kept (lessons never expire)."""
    value = None if days == "default" else int(days)
    with client(ctx) as hs:
        tenant = hs.set_retention(tenant_id, value)
    if as_json:
        out().print_json(json.dumps({"tenant_id": tenant.tenant_id, "event_retention_days": tenant.event_retention_days}))
        return
    shown = "the deployment's default" if tenant.event_retention_days is None else f"{tenant.event_retention_days} days"
    out().print(f"{tenant.tenant_id}: events kept {shown}" if tenant.event_retention_days != 0 else f"{tenant.tenant_id}: events kept for good")


@app.command("rotate-key")
@handles_errors
def rotate_key(
    ctx: typer.Context,
    tenant_id: str = typer.Argument(..., help="The tenant whose key to replace."),
    keep_old: bool = typer.Option(False, "--keep-old", help="Keep the old keys working (to roll agents over)."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Issue a new API key for a tenant; the old keys stop working unless --keep-old."""
    with client(ctx) as hs:
        rotated = hs.rotate_key(tenant_id, revoke_old=not keep_old)
    if as_json:
        out().print_json(json.dumps({"tenant_id": rotated.tenant_id, "api_key": rotated.api_key}))
        return
    out().print(f"api_key: [bold]{rotated.api_key}[/bold]", soft_wrap=True)
    err().print("old keys: " + ("[green]still valid[/green]" if keep_old else "[red]revoked[/red]"))
