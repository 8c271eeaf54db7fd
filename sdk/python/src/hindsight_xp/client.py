"""``Hindsight`` (sync) and ``AsyncHindsight``: one list of endpoints, two transports.

Each endpoint is declared once, as an ``endpoint`` descriptor over a pure builder from ``_calls``.
Looked up on a client, it becomes a method that hands the built ``Call`` to the client's
transport: the sync transport returns the result, the async one returns a coroutine. The
``__get__`` overloads give type checkers the exact return type of each flavour.
"""
from __future__ import annotations

import functools
import time
from typing import Any, Awaitable, Callable, Generic, Iterator, ParamSpec, TypeVar, overload

import httpx

from . import _calls
from ._core import Call, Credentials
from ._retry import RetryPolicy
from ._transport import AsyncTransport, SyncTransport
from .config import Config
from .models import Experience, ExperienceStatus, Tenant, Trajectory

P = ParamSpec("P")
T = TypeVar("T")
_USER_AGENT = "hindsight-python/0.1.0"


class endpoint(Generic[P, T]):  # noqa: N801 - used like a decorator/field, named like one
    def __init__(self, build: Callable[P, Call[T]]) -> None:
        self.build = build
        self.__doc__ = build.__doc__

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> endpoint[P, T]: ...
    @overload
    def __get__(self, obj: Hindsight, owner: type | None = None) -> Callable[P, T]: ...
    @overload
    def __get__(self, obj: AsyncHindsight, owner: type | None = None) -> Callable[P, Awaitable[T]]: ...

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:
            return self
        build, run = self.build, obj._transport.run

        @functools.wraps(build)
        def method(*args: P.args, **kwargs: P.kwargs) -> Any:
            return run(build(*args, **kwargs))

        return method


class _Endpoints:
    """The whole HTTP API v1. Method names follow the contract; see ``_calls`` for arguments."""

    _transport: Any

    health = endpoint(_calls.health)
    openapi = endpoint(_calls.openapi)
    # tenants and maintenance (admin key)
    create_tenant = endpoint(_calls.create_tenant)
    list_tenants_page = endpoint(_calls.list_tenants_page)
    rotate_key = endpoint(_calls.rotate_key)
    start_tenant_export = endpoint(_calls.start_tenant_export)
    get_tenant_export = endpoint(_calls.get_tenant_export)
    get_tenant_export_part = endpoint(_calls.get_tenant_export_part)
    delete_tenant = endpoint(_calls.delete_tenant)
    get_tenant_deletion = endpoint(_calls.get_tenant_deletion)

    set_retention = endpoint(_calls.set_retention)
    decay = endpoint(_calls.decay)
    failed_reviews = endpoint(_calls.failed_reviews)
    redrive = endpoint(_calls.redrive)
    # tenant key
    reindex = endpoint(_calls.reindex)
    stats = endpoint(_calls.stats)
    start_trajectory = endpoint(_calls.start_trajectory)
    append_events = endpoint(_calls.append_events)
    finalize = endpoint(_calls.finalize)
    get_trajectory = endpoint(_calls.get_trajectory)
    write_experience = endpoint(_calls.write_experience)
    get_experience = endpoint(_calls.get_experience)
    list_experiences = endpoint(_calls.list_experiences)
    forget = endpoint(_calls.forget)
    feedback = endpoint(_calls.feedback)
    restore = endpoint(_calls.restore)
    recall = endpoint(_calls.recall)
    advise = endpoint(_calls.advise)


def _settings(url: str | None, api_key: str | None, admin_key: str | None, timeout: float | None) -> Config:
    env = Config.from_env()
    return Config(
        url=(url or env.url).rstrip("/"),
        api_key=api_key if api_key is not None else env.api_key,
        admin_key=admin_key if admin_key is not None else env.admin_key,
        timeout=timeout if timeout is not None else env.timeout,
    )


class Hindsight(_Endpoints):
    """Blocking client. Arguments left out come from HINDSIGHT_URL / HINDSIGHT_API_KEY /
    HINDSIGHT_ADMIN_KEY. Pass ``http_client`` to share a connection pool or set proxies."""

    def __init__(self, url: str | None = None, api_key: str | None = None, *, admin_key: str | None = None,
                 timeout: float | None = None, retry: RetryPolicy | None = None,
                 http_client: httpx.Client | None = None) -> None:  # fmt: skip
        self.config = _settings(url, api_key, admin_key, timeout)
        self._owns_http = http_client is None
        self._http = http_client or httpx.Client(
            base_url=self.config.url, timeout=self.config.timeout, headers={"User-Agent": _USER_AGENT}
        )
        self.retry = retry or RetryPolicy()
        self._transport = SyncTransport(self._http, Credentials(self.config.api_key, self.config.admin_key), self.retry)

    def with_api_key(self, api_key: str) -> Hindsight:
        """The same client (same connection pool) acting for another tenant."""
        return Hindsight(self.config.url, api_key, admin_key=self.config.admin_key, retry=self.retry, http_client=self._http)

    def iter_tenants(self, *, page_size: int = 100) -> Iterator[Tenant]:
        """Every tenant, oldest first, page after page (the service's cursor; admin key)."""
        cursor: str | None = None
        while True:
            page = self.list_tenants_page(limit=page_size, cursor=cursor)
            yield from page.tenants
            if not page.cursor:
                return
            cursor = page.cursor

    def list_tenants(self, *, page_size: int = 100) -> list[Tenant]:
        """Every tenant, oldest first (all the pages; admin key)."""
        return list(self.iter_tenants(page_size=page_size))

    def iter_experiences(self, *, agent_id: str | None = None, status: ExperienceStatus | None = None,
                         page_size: int = 200) -> Iterator[Experience]:  # fmt: skip
        """Every experience, page after page (the service's cursor), without holding them all."""
        cursor: str | None = None
        while True:
            page = self.list_experiences(agent_id=agent_id, status=status, limit=page_size, cursor=cursor)
            yield from page.items
            if not page.cursor:
                return
            cursor = page.cursor

    def wait_for_review(self, trajectory_id: str, *, timeout: float = 30.0, interval: float = 0.1) -> Trajectory:
        """Poll until the service reviewed a finalized trajectory (or gave up on it)."""
        deadline = time.monotonic() + timeout
        while True:
            traj = self.get_trajectory(trajectory_id)
            if traj.done:
                return traj
            if time.monotonic() >= deadline:
                raise TimeoutError(f"trajectory {trajectory_id} is still {traj.status} after {timeout} s")
            time.sleep(interval)

    def close(self) -> None:
        if self._owns_http:
            self._http.close()

    def __enter__(self) -> Hindsight:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncHindsight(_Endpoints):
    """The same API for asyncio (or trio) code: every endpoint method returns a coroutine."""

    def __init__(self, url: str | None = None, api_key: str | None = None, *, admin_key: str | None = None,
                 timeout: float | None = None, retry: RetryPolicy | None = None,
                 http_client: httpx.AsyncClient | None = None) -> None:  # fmt: skip
        self.config = _settings(url, api_key, admin_key, timeout)
        self._owns_http = http_client is None
        self._http = http_client or httpx.AsyncClient(
            base_url=self.config.url, timeout=self.config.timeout, headers={"User-Agent": _USER_AGENT}
        )
        self.retry = retry or RetryPolicy()
        self._transport = AsyncTransport(self._http, Credentials(self.config.api_key, self.config.admin_key), self.retry)

    def with_api_key(self, api_key: str) -> AsyncHindsight:
        """The same client (same connection pool) acting for another tenant."""
        return AsyncHindsight(self.config.url, api_key, admin_key=self.config.admin_key, retry=self.retry,
                              http_client=self._http)  # fmt: skip

    async def list_tenants(self, *, page_size: int = 100) -> list[Tenant]:
        """Every tenant, oldest first (all the pages; admin key)."""
        tenants: list[Tenant] = []
        cursor: str | None = None
        while True:
            page = await self.list_tenants_page(limit=page_size, cursor=cursor)
            tenants += page.tenants
            if not page.cursor:
                return tenants
            cursor = page.cursor

    async def aclose(self) -> None:
        if self._owns_http:
            await self._http.aclose()

    async def __aenter__(self) -> AsyncHindsight:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
