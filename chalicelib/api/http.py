"""The HTTP side of every route: the status of each error, the error body, request parsing."""
from __future__ import annotations

import json
import logging
from typing import Any, TypeVar

from chalice import Response
from pydantic import BaseModel, ValidationError
from pydantic_core import from_json

from ..domain.errors import (
    Conflict,
    HindsightError,
    InvalidInput,
    MalformedRequest,
    NotFound,
    PayloadTooLarge,
    RateLimited,
    Unauthorized,
    Unavailable,
)
from .structure import MAX_DEPTH, check_structure

log = logging.getLogger("hindsight.api")
M = TypeVar("M", bound=BaseModel)
JSON_HEADERS = {"Content-Type": "application/json"}

# Most specific first: MalformedRequest is an InvalidInput with its own status.
STATUS: dict[type[HindsightError], int] = {
    MalformedRequest: 400,
    Unauthorized: 401,
    NotFound: 404,
    Conflict: 409,
    PayloadTooLarge: 413,
    InvalidInput: 422,
    RateLimited: 429,
    Unavailable: 503,
}
INTERNAL = (500, "internal_error", "an internal error occurred; it has been logged")


def status_of(exc: HindsightError) -> int:
    return next((status for cls, status in STATUS.items() if isinstance(exc, cls)), 500)


def error_answer(
    status: int, code: str, message: str, details: Any = None, retry_after: int | None = None
) -> tuple[int, dict[str, str], str]:
    """Status, headers and body of every error answer, the contract's ``{"error": {...}}``."""
    body: dict[str, Any] = {"code": code, "message": message}
    if details is not None:
        body["details"] = details
    headers = dict(JSON_HEADERS)
    if retry_after is not None:
        headers["Retry-After"] = str(retry_after)
    return status, headers, json.dumps({"error": body})


def answer_for(exc: HindsightError) -> tuple[int, dict[str, str], str]:
    """The error answer of a service's error (Retry-After where the client should wait)."""
    retry_after = exc.retry_after if isinstance(exc, (RateLimited, Unavailable)) else None
    return error_answer(status_of(exc), exc.code, exc.message, exc.details, retry_after)


def error_response(answer: tuple[int, dict[str, str], str]) -> Response:
    status, headers, body = answer
    return Response(body=body, status_code=status, headers={**headers})


def json_response(body: Any, status: int = 200) -> Response:
    return Response(body=json.dumps(body, default=str), status_code=status, headers={**JSON_HEADERS})


def parse_json(raw: bytes | None, max_bytes: int, required: bool = True) -> Any:
    if raw is not None and len(raw) > max_bytes:
        raise PayloadTooLarge(f"request body is larger than {max_bytes} bytes")
    if not raw:
        if required:
            raise MalformedRequest("request body is empty; expected a JSON object")
        return {}
    if not raw.strip():  # not empty, and not JSON either: a body that is there must parse
        raise MalformedRequest("request body is only whitespace; expected a JSON object (or no body)")
    try:
        value = from_json(raw)
    except ValueError:
        value = _parse_json_by_json(raw)
    check_structure(raw, value)
    return value


def _parse_json_by_json(raw: bytes) -> Any:
    """What pydantic-core's parser refused: the standard library's decides, and words the error.

    The two give the same value for every text both accept (pydantic-core's in about two thirds of
    the time); only json accepts a lone surrogate escape (refused later, by check_structure), a BOM,
    UTF-16 and UTF-32, and nesting past pydantic-core's limit."""
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise MalformedRequest(f"request body is not valid JSON: {exc}") from exc
    except RecursionError as exc:
        raise InvalidInput(f"request body nests deeper than {MAX_DEPTH} levels") from exc


def validate(model: type[M], data: Any) -> M:
    if not isinstance(data, dict):
        raise InvalidInput("request body must be a JSON object")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        problems = [
            {"field": ".".join(str(p) for p in e["loc"]) or "(body)", "problem": e["msg"]}
            for e in exc.errors(include_url=False, include_input=False)
        ]
        summary = "; ".join(f"{p['field']}: {p['problem']}" for p in problems[:5])
        raise InvalidInput(f"invalid request: {summary}", details=problems) from exc


def body_required(model: type[BaseModel]) -> bool:
    """An empty body is read as ``{}`` where every field is optional, and refused (400) elsewhere."""
    return any(f.is_required() for f in model.model_fields.values())


def to_json(value: Any) -> Any:
    """What a view returns, as JSON data: a response model instance, or a plain value."""
    return value.model_dump(mode="json") if isinstance(value, BaseModel) else value
