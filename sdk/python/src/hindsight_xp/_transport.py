"""The two drivers of ``_core.exchange``: they only send, sleep and hand back what happened."""
from __future__ import annotations

import time
from typing import Callable, Generator, TypeVar

import anyio
import httpx

from ._core import Call, Credentials, Outcome, Send, Step, build_request, exchange
from ._retry import RetryPolicy

T = TypeVar("T")


def _finish(gen: Generator[Step, Outcome, T], step_result: Outcome) -> tuple[Step | None, T | None]:
    """Advance the exchange by one step; (None, value) once it returned."""
    try:
        return gen.send(step_result), None
    except StopIteration as done:
        return None, done.value


class SyncTransport:
    def __init__(self, http: httpx.Client, credentials: Credentials, policy: RetryPolicy,
                 sleep: Callable[[float], None] = time.sleep) -> None:  # fmt: skip
        self.http, self.credentials, self.policy, self._sleep = http, credentials, policy, sleep

    def run(self, call: Call[T]) -> T:
        request = build_request(self.http, call, self.credentials)
        gen = exchange(request, call, self.policy)
        step: Step | None = next(gen)
        while True:
            if isinstance(step, Send):
                try:
                    outcome: Outcome = self.http.send(step.request)
                except httpx.TransportError as exc:
                    outcome = exc
            else:
                assert step is not None
                self._sleep(step.seconds)
                outcome = None
            step, value = _finish(gen, outcome)
            if step is None:
                return value  # type: ignore[return-value]


class AsyncTransport:
    def __init__(self, http: httpx.AsyncClient, credentials: Credentials, policy: RetryPolicy) -> None:
        self.http, self.credentials, self.policy = http, credentials, policy

    async def run(self, call: Call[T]) -> T:
        request = build_request(self.http, call, self.credentials)
        gen = exchange(request, call, self.policy)
        step: Step | None = next(gen)
        while True:
            if isinstance(step, Send):
                try:
                    outcome: Outcome = await self.http.send(step.request)
                except httpx.TransportError as exc:
                    outcome = exc
            else:
                assert step is not None
                await anyio.sleep(step.seconds)  # anyio: works under asyncio and trio alike
                outcome = None
            step, value = _finish(gen, outcome)
            if step is None:
                return value  # type: ignore[return-value]

