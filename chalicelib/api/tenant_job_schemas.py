"""Request and response models of the tenant export and deletion routes (admin)."""
from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import Field

from .schemas import Model, Strict

JobState = Literal["running", "done", "cancelled"]


class ExportPartOut(Model):
    number: int = Field(description="Its place in the export, from 1: read the parts in order")
    lines: int = Field(description="JSON Lines it holds")
    bytes: int
    location: str = Field(description="Where the operator finds it outside the API: a path in the data folder, or an s3:// URL")


class TenantExportOut(Model):
    export_id: str
    tenant_id: str
    state: JobState = Field(description="running, done, or cancelled (the tenant was deleted meanwhile)")
    requested_at: datetime
    finished_at: datetime | None = None
    phase: str = Field(description="What it reads now: tenant, experiences, trajectories (with their events), reviews, done")
    counts: dict[str, int] = Field(description="Records exported so far, by type")
    parts: list[ExportPartOut] = Field(description="The parts written so far (JSON Lines, each line an object with a type and its data)")
    runs: int = Field(description="Runs of the job so far (each within one invocation's time)")


class TenantDeletionOut(Model):
    tenant_id: str
    state: JobState
    requested_at: datetime
    not_before: datetime = Field(description="The purge starts then: once the authorizer's cache of the revoked keys has run out")
    finished_at: datetime | None = None
    keys_revoked: int = Field(description="Keys revoked when the deletion was asked for")
    deleted: dict[str, int] = Field(description="What was deleted so far: index entries, export parts, stored items, checkpoints")
    runs: int


class ExportPartQuery(Strict):
    part: Annotated[int, Field(ge=1, le=1_000_000)] = Field(default=1, description="The part to read, from 1")


def export_out(state: dict) -> TenantExportOut:
    return TenantExportOut(export_id=state["job_id"], tenant_id=state["tenant_id"], state=state["state"],
                           requested_at=state["requested_at"], finished_at=state.get("finished_at"), phase=state["phase"],
                           counts=state["counts"], parts=[ExportPartOut(**p) for p in state["parts"]], runs=state["runs"])


def deletion_out(state: dict) -> TenantDeletionOut:
    return TenantDeletionOut(tenant_id=state["tenant_id"], state=state["state"], requested_at=state["requested_at"],
                             not_before=state["not_before"], finished_at=state.get("finished_at"),
                             keys_revoked=state["keys_revoked"], deleted=state["deleted"], runs=state["runs"])
