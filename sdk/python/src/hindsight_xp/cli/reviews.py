"""`hindsight reviews ...`: reviews the service gave up on, and sending them round again (admin key)."""
from __future__ import annotations

import json
from typing import Optional

import typer
from rich.table import Table

from ._common import client, err, handles_errors, out

app = typer.Typer(help="See failed reviews and redrive them (needs the admin key).", no_args_is_help=True)


@app.command("failed")
@handles_errors
def failed(
    ctx: typer.Context,
    tenant_id: Optional[str] = typer.Option(None, "--tenant-id", help="Only this tenant's."),
    limit: int = typer.Option(100, "--limit", min=1, max=1000),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """List reviews given up on after their last attempt, oldest first, with the reason."""
    with client(ctx) as hs:
        listed = hs.failed_reviews(tenant_id, limit)
    if as_json:
        out().print_json(json.dumps([{"tenant_id": f.tenant_id, "trajectory_id": f.trajectory_id, "kind": f.kind,
                                        "attempts": f.attempts, "error": f.error,
                                        "failed_at": f.failed_at.isoformat() if f.failed_at else None}
                                       for f in listed]))  # fmt: skip
        return
    if not listed:
        out().print("[green]no failed reviews[/green]")
        return
    table = Table("tenant_id", "trajectory_id", "kind", "attempts", "failed_at", "error", title=f"{len(listed)} failed reviews")
    for f in listed:
        table.add_row(f.tenant_id, f.trajectory_id, f.kind, str(f.attempts),
                      f.failed_at.isoformat(timespec="seconds") if f.failed_at else "", f.error or "")  # fmt: skip
    out().print(table)


@app.command("redrive")
@handles_errors
def redrive(
    ctx: typer.Context,
    tenant_id: Optional[str] = typer.Option(None, "--tenant-id", help="Only this tenant's failed reviews."),
    trajectory_id: list[str] = typer.Option([], "--trajectory-id", help="Only these trajectories (repeatable)."),
    all_: bool = typer.Option(False, "--all", help="Every failed review of every tenant."),
) -> None:
    """Send failed reviews round again with a fresh set of attempts (after fixing their cause)."""
    if not (all_ or tenant_id or trajectory_id):
        raise typer.BadParameter("say which: --tenant-id, --trajectory-id, or --all", param_hint="--all")
    with client(ctx) as hs:
        n = hs.redrive(tenant_id, trajectory_id or None)
    out().print(f"redriven {n}")
    if n:
        err().print("their trajectories are finalized again; the reviews run in the background")
