"""Recall ids: every recall and advise answer is kept, by id, with what it served, so that the
review of a trajectory that attached the id (a ``recall`` event) can credit those lessons."""
from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Literal, Sequence

from ..domain.models import Hit
from ..ports import ServedRecall
from . import recall as recall_service
from .deps import Deps


def new_recall_id() -> str:
    return "rc_" + uuid.uuid4().hex


def remember(
    deps: Deps, tenant_id: str, experience_ids: Sequence[str], kind: str = "recall", tool: str | None = None,
    *, agent_id: str | None = None, user_id: str | None = None, trajectory_id: str | None = None,
) -> str:
    """A fresh recall id for this answer, its lessons and the scope it served (agent, user, and the
    trajectory when the caller named one) kept for ``recall_ttl_days``."""
    recall_id = new_recall_id()
    if deps.recalls is not None:
        now = deps.clock.now()
        deps.recalls.record(ServedRecall(
            tenant_id, recall_id, tuple(experience_ids), now, now + timedelta(days=deps.recall_ttl_days), kind, tool,
            agent_id, user_id, trajectory_id,
        ))
    return recall_id


@dataclass(frozen=True)
class Recalled:
    recall_id: str
    hits: list[Hit]
    advice: str
    hidden_by_scope: dict[str, dict[str, int]] = field(default_factory=dict)
    degraded: Literal["lexical_only"] | None = None  # ``services.recall.RecallAnswer.degraded``


def recall(deps: Deps, tenant_id: str, query: str, **kwargs: Any) -> Recalled:
    """``services.recall.recall_answer`` (same arguments) with a recall id for what it served."""
    answer = recall_service.recall_answer(deps, tenant_id, query, **kwargs)
    ids = [h.experience.experience_id for h in answer.hits]
    recall_id = remember(deps, tenant_id, ids, agent_id=kwargs.get("agent_id"), user_id=kwargs.get("user_id"))
    return Recalled(recall_id, answer.hits, answer.advice, answer.hidden_by_scope, answer.degraded)
