"""Day-to-day commands: recall, advise, write, restore, stats, reindex, decay, health."""
from __future__ import annotations

import json
from datetime import datetime
from typing import Literal, Optional

import typer
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from ._common import client, err, handles_errors, out


def _split(values: list[str]) -> list[str]:
    """--tools a,b --tools c -> [a, b, c]"""
    return [v.strip() for value in values for v in value.split(",") if v.strip()]


@handles_errors
def recall(
    ctx: typer.Context,
    query: str = typer.Argument(..., help="The task or situation, in plain words."),
    tools: list[str] = typer.Option([], "--tools", "-t", help="Tools the agent has (comma-separated or repeated)."),
    agent_id: Optional[str] = typer.Option(None, "--agent-id"),
    user_id: Optional[str] = typer.Option(None, "--user-id"),
    task_type: Optional[str] = typer.Option(None, "--task-type"),
    tags: list[str] = typer.Option([], "--tags"),
    top_k: int = typer.Option(5, "--top-k", min=1, max=50),
    min_score: float = typer.Option(0.0, "--min-score", min=0.0, max=1.0),
    as_json: bool = typer.Option(False, "--json", help="Print the service's answer as JSON."),
) -> None:
    """What the agent would be told before acting: ranked lessons and the advice block."""
    with client(ctx) as hs:
        result = hs.recall(query, agent_id=agent_id, user_id=user_id, task_type=task_type, tools=_split(tools),
                           tags=_split(tags), top_k=top_k, min_score=min_score)  # fmt: skip
    if as_json:
        out().print_json(json.dumps({"advice": result.advice, "hits": [
            {"experience": h.experience.raw, "score": h.score,
             "explanation": {"semantic": h.explanation.semantic, "tag_match": h.explanation.tag_match,
                             "freshness": h.explanation.freshness, "utility": h.explanation.utility}}
            for h in result.hits]}))  # fmt: skip
        return
    if not result.hits:
        out().print("[dim]nothing recalled for this query[/dim]")
        return
    table = Table("#", "score", "advice", "tools", "semantic", "fresh", "utility", "experience_id",
                  title=f"recall: {query}", show_lines=True)  # fmt: skip
    for n, hit in enumerate(result.hits, 1):
        e, x = hit.experience, hit.explanation
        table.add_row(str(n), f"{hit.score:.3f}", e.advice or e.lesson, ", ".join(e.tools),
                      f"{x.semantic:.2f}", f"{x.freshness:.2f}", f"{x.utility:.2f}", e.experience_id)  # fmt: skip
    out().print(table)
    out().print(Panel(result.advice, title="advice block (what goes in the prompt)", expand=False))


@handles_errors
def advise(
    ctx: typer.Context,
    tool: str = typer.Argument(..., help="The tool about to be called."),
    params: str = typer.Option("{}", "--params", "-p", help="Its arguments, as a JSON object."),
    goal: Optional[str] = typer.Option(None, "--goal"),
    agent_id: Optional[str] = typer.Option(None, "--agent-id"),
    user_id: Optional[str] = typer.Option(None, "--user-id"),
    trajectory_id: Optional[str] = typer.Option(None, "--trajectory-id", help="The running trajectory, if any."),
    as_json: bool = typer.Option(False, "--json", help="Print the service's answer as JSON."),
) -> None:
    """What past runs say about this call, before it is made: warnings and the advice block."""
    try:
        arguments = json.loads(params)
    except ValueError as exc:
        raise typer.BadParameter(f"not JSON: {exc}", param_hint="--params") from exc
    if not isinstance(arguments, dict):
        raise typer.BadParameter("expected a JSON object", param_hint="--params")
    with client(ctx) as hs:
        result = hs.advise(tool, arguments, goal=goal, agent_id=agent_id, user_id=user_id, trajectory_id=trajectory_id)
    if as_json:
        out().print_json(json.dumps({
            "recall_id": result.recall_id, "advice": result.advice,
            "warnings": [{"experience_id": w.experience_id, "message": w.message, "fix": w.fix} for w in result.warnings],
            "hits": [{"experience": h.experience.raw, "score": h.score} for h in result.hits]}))  # fmt: skip
        return
    if not result.hits:
        out().print(f"[dim]nothing to say about this call of {tool}[/dim] (recall_id {result.recall_id})")
        return
    for w in result.warnings:  # lesson text is not markup: Text keeps its brackets as they are
        out().print(Text.assemble(("warning ", "yellow"), w.message, "\n  ", ("fix: ", "green"), w.fix,
                                  (f"  ({w.experience_id})", "dim")))  # fmt: skip
    out().print(Panel(result.advice, title=f"advice before {tool} (recall_id {result.recall_id})", expand=False))


@handles_errors
def write(
    ctx: typer.Context,
    situation: str = typer.Argument(..., help="When the lesson applies, in plain words."),
    lesson: str = typer.Option("", "--lesson", help="What was learned."),
    advice: str = typer.Option("", "--advice", help="The lesson as an instruction, ready for a prompt."),
    tools: list[str] = typer.Option([], "--tools", "-t", help="Tools the lesson is about (comma-separated or repeated)."),
    tags: list[str] = typer.Option([], "--tags"),
    task_type: Optional[str] = typer.Option(None, "--task-type"),
    agent_id: Optional[str] = typer.Option(None, "--agent-id"),
    user_id: Optional[str] = typer.Option(None, "--user-id"),
    experience_id: Optional[str] = typer.Option(None, "--experience-id", help="Your id for it: writing it again changes nothing."),
    supersedes: list[str] = typer.Option(
        [], "--supersedes",
        help="A lesson this one corrects (repeat for several; same --agent-id and --user-id): archived and chained to "
        "this one in the same write. 'auto': the probable corrections the service finds."),
    as_json: bool = typer.Option(False, "--json", help="Print the service's answer as JSON."),
) -> None:
    """Write a lesson by hand (source human), optionally replacing the lessons it corrects."""
    if not (lesson.strip() or advice.strip()):
        err().print("[red]error:[/red] give --lesson, --advice or both")
        raise typer.Exit(2)
    ids = _split(supersedes)
    if "auto" in ids and len(ids) > 1:
        err().print("[red]error:[/red] --supersedes auto stands alone: it cannot be mixed with ids")
        raise typer.Exit(2)
    replaced: list[str] | Literal["auto"] | None = "auto" if ids == ["auto"] else (ids or None)
    with client(ctx) as hs:
        exp = hs.write_experience(situation, lesson=lesson, advice=advice, tools=_split(tools), tags=_split(tags),
                                  task_type=task_type, agent_id=agent_id, user_id=user_id,
                                  experience_id=experience_id, supersedes=replaced)  # fmt: skip
        named = ids if replaced != "auto" else [exp.supersedes] if exp.supersedes else []
        olds = [hs.get_experience(i) for i in named] if exp.supersedes else []
    if as_json:
        out().print_json(json.dumps(exp.raw))
        return
    out().print(f"{exp.experience_id}: {exp.status} (version {exp.version})")
    for old in olds:
        out().print(f"supersedes {old.experience_id}: now {old.status} ({old.status_reason})")
    if exp.correction_of:
        out().print(f"probable correction of {', '.join(exp.correction_of)}: write it with --supersedes ID (or "
                    "--supersedes auto) to replace them")  # fmt: skip


@handles_errors
def restore(ctx: typer.Context, experience_id: str = typer.Argument(..., help="The archived lesson's id.")) -> None:
    """Bring an archived lesson back into recall (its history kept); a forgotten one cannot be."""
    with client(ctx) as hs:
        exp = hs.restore(experience_id)
    out().print(f"{exp.experience_id}: {exp.status} (version {exp.version})")


@handles_errors
def stats(ctx: typer.Context, as_json: bool = typer.Option(False, "--json")) -> None:
    """Counts of experiences and trajectories by status, and how fresh the lessons are."""
    with client(ctx) as hs:
        s = hs.stats()
    if as_json:
        out().print_json(json.dumps({"experiences": s.experiences, "trajectories": s.trajectories,
                                       "freshness_histogram": [{"bucket": b, "count": c}
                                                               for b, c in s.freshness_histogram]}))  # fmt: skip
        return
    counts = Table("kind", "status", "count", title="hindsight-xp stats")
    for kind, by_status in (("experiences", s.experiences), ("trajectories", s.trajectories)):
        for status, count in by_status.items():
            counts.add_row(kind, status, str(count))
    out().print(counts)
    peak = max((c for _, c in s.freshness_histogram), default=0) or 1
    hist = Table("freshness", "count", "", title="freshness of experiences")
    for bucket, count in s.freshness_histogram:
        hist.add_row(bucket, str(count), "█" * round(30 * count / peak))
    out().print(hist)


@handles_errors
def reindex(ctx: typer.Context) -> None:
    """Rebuild the tenant's vector index from its stored experiences (tenant key)."""
    with client(ctx) as hs, err().status("reindexing…"):
        report = hs.reindex()
    out().print(f"reindexed {report.reindexed} experiences")


@handles_errors
def decay(
    ctx: typer.Context,
    as_of: Optional[str] = typer.Option(None, "--as-of", help="Decay as if it were this time (ISO-8601; naive = UTC)."),
    tenant: Optional[str] = typer.Option(None, "--tenant", help="Only this tenant's lessons."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Write nothing; show what would be archived."),
) -> None:
    """Run freshness decay and archiving now, for every tenant or one (admin key)."""
    try:
        when = datetime.fromisoformat(as_of) if as_of else None
    except ValueError as exc:
        raise typer.BadParameter(f"not an ISO-8601 time: {as_of!r}", param_hint="--as-of") from exc
    with client(ctx) as hs, err().status("decaying…"):
        report = hs.decay(when, tenant_id=tenant, dry_run=dry_run)
    if report.dry_run:
        out().print(f"dry run: would decay {report.decayed}, archive {report.archived}")
        for experience_id in report.archived_ids:
            out().print(f"  {experience_id}")
    else:
        out().print(f"decayed {report.decayed}, archived {report.archived}")


@handles_errors
def health(ctx: typer.Context) -> None:
    """Check that the service answers."""
    with client(ctx) as hs:
        h = hs.health()
    out().print(f"{hs.config.url}: {h.status} (backend: {h.backend})")
