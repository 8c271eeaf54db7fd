"""The claim order every review queue shares: tenants take turns.

One tenant's thousands of due jobs must not hold back another tenant's one job (a flood of local
reviews kept a tenant's 3-event trajectory unreviewed for 23 minutes): among due jobs, each tenant
with one goes once per round, the least recently served tenant first, each taking its oldest due
job; a second round only when the limit leaves room.
"""
from __future__ import annotations

from typing import Mapping, Sequence, TypeVar

J = TypeVar("J")


def in_turns(due: Mapping[str, Sequence[J]], served: Mapping[str, int], limit: int) -> list[J]:
    """Up to ``limit`` jobs from ``due`` (tenant -> its due jobs, oldest first), in turns: the
    tenants never served first, then the least recently served (``served``: tenant -> the time it
    was last served); ties by insertion order of ``due`` (callers insert by oldest due job)."""
    order = sorted(due, key=lambda t: served.get(t, -1))
    out: list[J] = []
    turn = 0
    while len(out) < limit:
        took = False
        for tenant in order:
            jobs = due[tenant]
            if turn < len(jobs):
                out.append(jobs[turn])
                took = True
                if len(out) == limit:
                    break
        if not took:
            break
        turn += 1
    return out


