"""The names of what the service meters per tenant, and of the operational counts beside them.

A deployment's meter (``ports.Meter``; in the cloud ``adapters.emf``) writes them; the stack's
alarms and dashboard (infra/) read them under these names, in the ``hindsight`` namespace with
the ``stage`` dimension.
"""
from __future__ import annotations

NAMESPACE = "hindsight"
STAGE_DIMENSION = "stage"

# per tenant, for metering
REQUESTS = "Requests"  # requests the tenant's key was let through for (past its rate limit), whatever their answer
RECALLS = "Recalls"  # recalls answered
EVENTS = "Events"  # events stored (a repeated event_id is not counted again)
LLM_TOKENS = "LlmTokens"  # tokens the language model reviewer used on the tenant's trajectories (prompt and answer)
TENANT_METRICS = (REQUESTS, RECALLS, EVENTS, LLM_TOKENS)

# operations
REVIEW_JOBS_DEAD = "ReviewJobsDead"  # review jobs given up on (their last attempt failed, or they cannot run)
