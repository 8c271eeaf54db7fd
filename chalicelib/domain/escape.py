"""Tools that are never a fix: a call that ends the task or hands it to someone else (a transfer to
a human, an escalation, a give-up), and a scratchpad that changes nothing (``think``).

Such a call "works" after a failure in many runs: the agent gave up on the failed call. Taken as
the fix, it made lessons that advise handing off instead of doing the task ("Use
`transfer_to_human_agents` instead of `book_reservation`"). Tools are told apart by their names,
the only thing every agent framework shares about them.
"""
from __future__ import annotations

import re

_ENDS = re.compile(
    r"(?:^|_)(?:human|humans|escalate|escalation|handoff|hand_off|give_up|giveup|abandon)(?:_|$)"
    r"|^transfer_to_|^(?:end|close|abort)_(?:conversation|chat|call|session|task)$",
    re.I,
)
_SCRATCH = re.compile(r"^(?:think|thinking|reflect|reflection|scratchpad|scratch_pad|note_to_self)$", re.I)


def ends_task(tool: str | None) -> bool:
    """A tool that ends the task or hands it off."""
    return bool(tool) and bool(_ENDS.search(tool or ""))


def is_scratchpad(tool: str | None) -> bool:
    """A tool that only records the agent's thoughts."""
    return bool(tool) and bool(_SCRATCH.match(tool or ""))


def never_a_fix(tool: str | None) -> bool:
    return ends_task(tool) or is_scratchpad(tool)
