"""Wrap a tool function so that every call is recorded, with no change to the agent's code."""
from __future__ import annotations

import functools
import inspect
import time
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from .recorder import TrajectoryRecorder


def _binder(fn: Callable[..., Any]) -> Callable[[tuple[Any, ...], dict[str, Any]], dict[str, Any]]:
    """Turn (args, kwargs) into a name -> value dict. The signature is read once, here, because
    reading it per call would cost the agent more than the recording itself."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):  # builtins and some C callables have none
        sig = None

    def params(args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        if not args:  # the tool-calling loop's case: fn(**json.loads(arguments))
            return kwargs
        if sig is not None:
            try:
                bound = sig.bind(*args, **kwargs).arguments
            except TypeError:
                pass
            else:
                out: dict[str, Any] = {}
                for name, value in bound.items():
                    kind = sig.parameters[name].kind
                    if kind is inspect.Parameter.VAR_KEYWORD:
                        out.update(value)
                    else:
                        out[name] = list(value) if kind is inspect.Parameter.VAR_POSITIONAL else value
                return out
        return {"args": list(args), **kwargs}

    return params


def _error_text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def traced(recorder: TrajectoryRecorder, fn: Callable[..., Any], *, name: str | None = None,
           is_error: Callable[[Any], Any] | None = None) -> Callable[..., Any]:  # fmt: skip
    """``fn`` recording each call: params, result or exception (re-raised unchanged), duration.

    ``is_error(result)`` flags tools that report failure in their return value instead of
    raising; a truthy return is recorded as the error.
    """
    tool: str = name or getattr(fn, "__name__", None) or "tool"
    params_of = _binder(fn)

    def record(args: tuple[Any, ...], kwargs: dict[str, Any], started: float, result: Any, exc: BaseException | None) -> None:
        elapsed = (time.perf_counter() - started) * 1000
        params = params_of(args, kwargs)
        if exc is not None:
            recorder.tool_call(tool, params, error=_error_text(exc), duration_ms=elapsed)
            return
        flagged = is_error(result) if is_error is not None else None
        if flagged:
            recorder.tool_call(tool, params, error=flagged if isinstance(flagged, str) else result, duration_ms=elapsed)
        else:
            recorder.tool_call(tool, params, result=result, duration_ms=elapsed)

    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
            if recorder.advise:
                import anyio  # httpx's own dependency: the event loop goes on while advise runs

                await anyio.to_thread.run_sync(recorder.consult, tool, params_of(args, kwargs))
            started = time.perf_counter()
            try:
                result = await fn(*args, **kwargs)
            except Exception as exc:
                record(args, kwargs, started, None, exc)
                raise
            record(args, kwargs, started, result, None)
            return result

        return async_wrapper

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if recorder.advise:
            recorder.consult(tool, params_of(args, kwargs))
        started = time.perf_counter()
        try:
            result = fn(*args, **kwargs)
        except Exception as exc:
            record(args, kwargs, started, None, exc)
            raise
        record(args, kwargs, started, result, None)
        return result

    return wrapper
