"""A Lambda cold start without the cyclic garbage collector's passes over the code it loads.

A cold start imports some 600 modules and builds the clients: a few hundred thousand objects
(classes, functions, service models) that live as long as the process. The collector runs every
700 allocations and scans the young ones again in each older generation, so it walks them over and
over while they are made and finds almost nothing to free: about 55 ms of the review worker's
~0.8 s import + first batch on this machine, in 174 passes. ``loading()`` turns it off while
such code loads, then moves every object alive at that moment out of the collected generations
(``gc.freeze``): they are never scanned again, in this invocation or in the warm ones after it.

What it costs: cyclic garbage made inside the block and still uncollected when it ends is never
freed (a few hundred objects after the review worker's set-up). So the block holds imports,
one-time set-up and at most the process's first request (``first_call``: bounded work, which
builds the Deps and their botocore client), never a review job's loop, and each entry point
enters it once per process.
"""
from __future__ import annotations

import contextlib
import functools
import gc
from typing import Any, Callable, Iterator, TypeVar

F = TypeVar("F", bound=Callable[..., Any])
_first_call_done = False


@contextlib.contextmanager
def loading() -> Iterator[None]:
    """The collector off for the block, and what the block left alive frozen at its end. Inside
    another such block, or with the collector turned off on purpose, it changes nothing."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.enable()


def first_call(fn: F) -> F:
    """``fn``, whose call runs inside ``loading()`` if it is the first call of the process to any
    function so wrapped (the API's first request: the Deps, the DynamoDB client, the validators of
    its models); every later call runs as it is."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        global _first_call_done
        if _first_call_done:
            return fn(*args, **kwargs)
        _first_call_done = True
        with loading():
            return fn(*args, **kwargs)

    return wrapper  # type: ignore[return-value]
