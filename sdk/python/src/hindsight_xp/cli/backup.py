"""`hindsight-xp export` / `hindsight-xp import`: a tenant's experiences as JSON lines.

An export line is the experience as the service returns it (every field, every status). Import
re-creates each with POST /v1/experiences and its own experience_id, so importing the same file
twice changes nothing (and says so: created, unchanged, or already there with other content); a forgotten one is forgotten again with its reason (kept as a tombstone).
The API has no call to archive, so archived lessons are skipped unless asked to come back active.
"""
from __future__ import annotations

import json
import sys
from enum import Enum
from pathlib import Path
from typing import IO, Iterator

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from ..client import Hindsight
from ..errors import APIError, HindsightError, NotFound
from ..models import WRITABLE_EXPERIENCE_FIELDS, Experience
from ._common import client, err, handles_errors

STATUSES = ("active", "archived", "forgotten")


def _progress() -> Progress:
    return Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TimeElapsedColumn(), console=err(), transient=False)  # fmt: skip


def _known_total(hs: Hindsight, statuses: tuple[str, ...]) -> int | None:
    """From GET /v1/stats when the service has it: a bar with an end rather than a spinner."""
    try:
        counts = hs.stats().experiences
    except HindsightError:
        return None
    return sum(int(counts.get(s, 0)) for s in statuses)


def iter_all(hs: Hindsight, statuses: tuple[str, ...], agent_id: str | None) -> Iterator[Experience]:
    seen: set[str] = set()  # a lesson whose status changes mid-export would otherwise appear twice
    for status in statuses:
        for exp in hs.iter_experiences(agent_id=agent_id, status=status):  # type: ignore[arg-type]
            if exp.experience_id not in seen:
                seen.add(exp.experience_id)
                yield exp


def export(
    ctx: typer.Context,
    out: Path = typer.Option(None, "--out", "-o", help="File to write (default: standard output)."),
    status: list[str] = typer.Option(list(STATUSES), "--status", help="Statuses to export (repeatable)."),
    agent_id: str = typer.Option(None, "--agent-id", help="Only this agent's experiences."),
) -> None:
    """Export every experience of the tenant as JSON lines: the backup."""
    statuses = tuple(s for s in STATUSES if s in status)
    with client(ctx) as hs:
        total = None if agent_id else _known_total(hs, statuses)
        sink: IO[str] = open(out, "w", encoding="utf-8") if out else sys.stdout
        try:
            with _progress() as progress:
                task = progress.add_task("exporting", total=total)
                n = 0
                for exp in iter_all(hs, statuses, agent_id):
                    sink.write(json.dumps(exp.raw, ensure_ascii=False, sort_keys=True) + "\n")
                    n += 1
                    progress.advance(task)
                progress.update(task, total=n, completed=n)
        finally:
            if out:
                sink.close()
    err().print(f"exported {n} experiences" + (f" to {out}" if out else ""))


class Archived(str, Enum):
    skip = "skip"
    active = "active"


class BadLine(ValueError):
    """A line of the file that is not an exported experience; the message names the field."""


def line_body(doc: object) -> dict:
    """The POST /v1/experiences body of an export line, or BadLine naming what is wrong."""
    if not isinstance(doc, dict):
        raise BadLine(f"expected a JSON object (an exported experience), got {type(doc).__name__}")
    if not isinstance(doc.get("situation"), str) or not doc["situation"].strip():
        raise BadLine("field 'situation' is missing or empty")
    if not any(isinstance(doc.get(f), str) and doc[f].strip() for f in ("lesson", "advice")):
        raise BadLine("neither field 'lesson' nor field 'advice' is given")
    return {k: doc[k] for k in WRITABLE_EXPERIENCE_FIELDS if doc.get(k) is not None}


def import_(
    ctx: typer.Context,
    file: Path = typer.Argument(..., exists=True, dir_okay=False, help="A file written by `hindsight-xp export`."),
    archived: Archived = typer.Option(Archived.skip, "--archived",
                                      help="Archived lessons: skip them, or bring them back as active."),  # fmt: skip
) -> None:
    """Re-create experiences from an export. Idempotent: a second import changes nothing.

    Each line is reported as created, unchanged (already there, the same), or different (already
    there with other content: the service never overwrites an experience, so the stored one stays).
    """
    lines = [(n, line) for n, line in enumerate(file.read_text(encoding="utf-8").splitlines(), 1) if line.strip()]
    counts = {"created": 0, "unchanged": 0, "different": 0, "forgotten": 0, "skipped": 0}
    failures: list[str] = []
    with client(ctx) as hs, _progress() as progress:
        task = progress.add_task("importing", total=len(lines))
        for number, line in lines:
            try:
                try:
                    doc = json.loads(line)
                except ValueError as exc:
                    raise BadLine(f"not JSON ({exc})") from exc
                body = line_body(doc)
                if doc.get("status") == "archived" and archived is Archived.skip:
                    counts["skipped"] += 1
                    continue
                stored = _stored(hs, body.get("experience_id"))
                if stored is None:
                    exp = hs.write_experience(body.pop("situation"), **body)
                    counts["created"] += 1
                else:
                    exp = stored
                    same = all(stored.raw.get(k) == v for k, v in body.items())
                    counts["unchanged" if same else "different"] += 1
                if doc.get("status") == "forgotten" and exp.status != "forgotten":
                    hs.forget(exp.experience_id, doc.get("status_reason") or "forgotten before export")
                    counts["forgotten"] += 1
            except (BadLine, APIError) as exc:  # one bad line does not stop a restore
                failures.append(f"line {number}: {exc}")
            finally:
                progress.advance(task)
    done = counts["created"] + counts["unchanged"] + counts["different"]
    err().print(
        f"imported {done} experiences: {counts['created']} created, {counts['unchanged']} unchanged, "
        f"{counts['different']} already there with other content (kept as stored); "
        f"{counts['forgotten']} forgotten again, skipped {counts['skipped']} archived"
    )
    if failures:
        for failure in failures[:10]:
            err().print(f"[red]failed[/red] {failure}")
        err().print(f"[red]{len(failures)} lines failed[/red]")
        raise typer.Exit(1)


def _stored(hs: Hindsight, experience_id: str | None) -> Experience | None:
    if not experience_id:
        return None
    try:
        return hs.get_experience(experience_id)
    except NotFound:
        return None


export = handles_errors(export)
import_ = handles_errors(import_)
