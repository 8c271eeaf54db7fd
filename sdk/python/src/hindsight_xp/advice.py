"""``advice_for``: the lessons to put in an agent's system prompt before it acts."""
from __future__ import annotations

import logging
from typing import Sequence

from .client import Hindsight
from .errors import HindsightError

log = logging.getLogger("hindsight_xp")


def advice_for(
    query: str,
    *,
    tools: Sequence[str] = (),
    agent_id: str | None = None,
    user_id: str | None = None,
    task_type: str | None = None,
    intent: str | None = None,
    tags: Sequence[str] = (),
    top_k: int = 5,
    min_score: float = 0.0,
    client: Hindsight | None = None,
    fail_open: bool = True,
) -> str:
    """The ``<hindsight>...</hindsight>`` advice block for this task, or "" when nothing applies.

    ``query`` is the task in the agent's words (the user's request, the goal). ``tools`` are the
    tools the agent has now: lessons about those rank higher. Memory is an aid, so by default
    (``fail_open``) an unreachable or failing service yields "" and a warning, not an exception.
    """
    own = client is None
    client = client or Hindsight()
    try:
        result = client.recall(query, agent_id=agent_id, user_id=user_id, task_type=task_type, tools=tools,
                               intent=intent, tags=tags, top_k=top_k, min_score=min_score)  # fmt: skip
        return result.advice
    except HindsightError as exc:
        if not fail_open:
            raise
        log.warning("hindsight recall failed, running without advice: %s", exc)
        return ""
    finally:
        if own:
            client.close()


def with_advice(system_prompt: str, advice: str) -> str:
    """The system prompt with the advice block appended (unchanged when there is no advice)."""
    return f"{system_prompt.rstrip()}\n\n{advice}" if advice else system_prompt
