"""Errors the services raise; the HTTP layer (``api/http.py``) maps each to a status.

    HindsightError
    ├── InvalidInput       the request is well-formed JSON but not acceptable
    │   └── MalformedRequest   the body is not JSON
    ├── PayloadTooLarge    a limit on count or size was exceeded
    ├── Unauthorized       missing, unknown or wrong-kind key
    ├── NotFound           unknown id, or an id of another tenant (never "forbidden")
    ├── Conflict           the state forbids the change (e.g. events after finalize)
    ├── RateLimited        too many requests for this tenant
    └── Unavailable        a dependency (store, index, LLM) failed; retry later
"""
from __future__ import annotations


class HindsightError(Exception):
    code = "internal_error"

    def __init__(self, message: str, *, details: object | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details = details


class InvalidInput(HindsightError):
    code = "invalid_input"


class MalformedRequest(InvalidInput):
    code = "malformed_request"


class PayloadTooLarge(HindsightError):
    code = "payload_too_large"


class Unauthorized(HindsightError):
    code = "unauthorized"


class NotFound(HindsightError):
    code = "not_found"


class Conflict(HindsightError):
    code = "conflict"


class TenantNameTaken(Conflict):
    """Tenant names are unique per deployment: a CLI or SDK that names a tenant means that one.
    Names that read alike are one name (``domain.tenant_names``)."""

    code = "tenant_exists"

    def __init__(self, name: str, tenant_id: str, existing_name: str | None = None) -> None:
        """``existing_name``: the taken tenant's name as it was given, when it differs from ``name``
        only as look-alikes do (case, width, normalization, invisible characters)."""
        existing = existing_name if existing_name is not None else name
        if existing == name:
            message = f"a tenant named {name!r} already exists: {tenant_id}"
        else:
            message = f"{name!r} reads as the name of tenant {tenant_id}, {existing!r}, which already exists"
        super().__init__(message, details={"tenant_id": tenant_id, "name": existing})
        self.tenant_id = tenant_id
        self.existing_name = existing


class TrajectoryFull(Conflict):
    """An append would take a trajectory past the events it may hold (``max_events_per_trajectory``)."""

    code = "trajectory_full"

    def __init__(self, trajectory_id: str, stored: int, new: int, max_events: int) -> None:
        super().__init__(
            f"trajectory {trajectory_id} holds {stored} events and may hold {max_events}: these {new} new events"
            " are refused (none stored); finalize it and record the rest of the task in a new trajectory"
        )


class RateLimited(HindsightError):
    code = "rate_limited"

    def __init__(self, message: str, *, retry_after: int = 1) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class Unavailable(HindsightError):
    """Raised by adapters (``from`` the SDK's error) when their service cannot answer."""

    code = "unavailable"
    retry_after = 1


def expired_message(trajectory_id: str, expired_at: object) -> str:
    """Why an append to a trajectory whose events expired is refused (Conflict)."""
    return f"trajectory {trajectory_id}: its events expired at {expired_at} (event retention); it takes no more events"
