"""Tenants and API keys. Keys are random, shown once, stored only as a SHA-256 hash."""
from __future__ import annotations

import hashlib
import hmac
import secrets
import uuid

from ..domain.errors import InvalidInput, NotFound, RateLimited, Unauthorized
from ..domain.models import Tenant
from ..domain.ratelimit import retry_after_seconds
from ..domain.tenant_names import name_key
from ..ports import TenantPage
from .deps import Deps

KEY_PREFIX = "hs_"


def hash_key(key: str) -> str:
    # Keys carry 256 random bits, so a fast hash is enough; a slow KDF would only cost latency.
    return hashlib.sha256(key.encode()).hexdigest()


def new_key() -> str:
    return KEY_PREFIX + secrets.token_urlsafe(32)


def create_tenant(deps: Deps, name: str) -> tuple[Tenant, str]:
    if not name_key(name):
        raise InvalidInput("a tenant name needs a visible character")
    tenant = Tenant(tenant_id="t_" + uuid.uuid4().hex[:20], name=name, created_at=deps.clock.now())
    key = new_key()
    deps.tenants.create_tenant(tenant, hash_key(key))
    return tenant, key


def list_tenants(deps: Deps, limit: int = 100, cursor: str | None = None) -> TenantPage:
    """A page of tenants, oldest first; ``cursor``: the previous page's (InvalidInput if forged)."""
    return deps.tenants.list_tenants_page(limit, cursor)


def set_event_retention(deps: Deps, tenant_id: str, days: int | None) -> Tenant:
    """The days the events of the trajectories the tenant starts from now on are kept (0: for
    good; None: the deployment's default). Trajectories started before keep the expiry they
    started with. Raises NotFound."""
    if days is not None and days < 0:
        raise InvalidInput("event_retention_days must be 0 or more")
    return deps.tenants.set_event_retention(tenant_id, days)


def rotate_key(deps: Deps, tenant_id: str, revoke_old: bool = True) -> str:
    from .tenant_jobs import being_deleted

    if being_deleted(deps, tenant_id):  # its keys were revoked: none is issued again
        raise NotFound(f"tenant {tenant_id} is deleted")
    key = new_key()
    deps.tenants.add_key(tenant_id, hash_key(key), deps.clock.now())
    if revoke_old:
        deps.tenants.revoke_keys(tenant_id, keep=hash_key(key))
    return key


def bearer(authorization: str | None) -> str:
    if not authorization:
        raise Unauthorized("missing Authorization header (expected 'Bearer <key>')")
    scheme, _, key = authorization.strip().partition(" ")
    if scheme.lower() != "bearer" or not key.strip():
        raise Unauthorized("malformed Authorization header (expected 'Bearer <key>')")
    return key.strip()


def is_admin(deps: Deps, key: str) -> bool:
    admin = deps.admin_key() if callable(deps.admin_key) else deps.admin_key
    return admin is not None and hmac.compare_digest(key.encode(), admin.encode())


def require_admin(deps: Deps, authorization: str | None) -> None:
    if not is_admin(deps, bearer(authorization)):
        raise Unauthorized("this operation needs the admin key")


def authenticate(deps: Deps, authorization: str | None) -> str:
    """The tenant id of a tenant key. The admin key manages tenants, it reads no tenant's data.

    Neither comparison leaks the key through its timing: the admin key is compared with
    ``hmac.compare_digest``; a tenant key is never compared at all, its SHA-256 is looked up. The
    admin key is compared only with a key that is no tenant's (to say why it is refused): a
    tenant's request never reads it (in the cloud, a Secrets Manager read on a cold start).
    """
    key = bearer(authorization)
    tenant_id = deps.tenants.tenant_for_key(hash_key(key))
    if tenant_id is not None:
        return tenant_id
    if is_admin(deps, key):
        raise Unauthorized("the admin key cannot read or write tenant data; use a tenant key")
    raise Unauthorized("unknown or revoked API key")


def admit(deps: Deps, tenant_id: str, cost: int = 1) -> None:
    """Take ``cost`` tokens from the tenant's rate limit; RateLimited (with retry_after) when it
    has not that many."""
    if deps.rate_limiter is None or cost <= 0:
        return
    wait = deps.rate_limiter.acquire(tenant_id, deps.clock.now(), cost)
    if wait > 0:
        retry_after = retry_after_seconds(wait)
        raise RateLimited(f"too many requests for this tenant; retry in {retry_after} s", retry_after=retry_after)
