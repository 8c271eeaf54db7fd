"""Request parsing and error mapping shared by every route, so that app.py stays thin."""
from __future__ import annotations

import functools
import json
import logging
from dataclasses import asdict
from typing import Any, Callable, TypeVar

from chalice import Response
from pydantic import BaseModel, ValidationError

from ..domain.errors import HindsightError, InvalidInput, MalformedRequest, PayloadTooLarge, RateLimited, Unavailable
from ..domain.models import Experience, Hit, Trajectory
from . import schemas as s

log = logging.getLogger("hindsight.api")
M = TypeVar("M", bound=BaseModel)
JSON_HEADERS = {"Content-Type": "application/json"}


def error_response(status: int, code: str, message: str, details: Any = None, headers: dict | None = None) -> Response:
    body: dict[str, Any] = {"code": code, "message": message}
    if details is not None:
        body["details"] = details
    return Response(body=json.dumps({"error": body}), status_code=status, headers={**JSON_HEADERS, **(headers or {})})


def json_response(body: Any, status: int = 200) -> Response:
    return Response(body=json.dumps(body, default=str), status_code=status, headers=JSON_HEADERS)


def endpoint(view: Callable[..., Response]) -> Callable[..., Response]:
    """Map every failure to the contract's error shape: no stack trace, no 500 for bad input."""

    @functools.wraps(view)
    def wrapper(*args: Any, **kwargs: Any) -> Response:
        try:
            return view(*args, **kwargs)
        except (RateLimited, Unavailable) as exc:
            return error_response(exc.status, exc.code, exc.message, headers={"Retry-After": str(exc.retry_after)})
        except HindsightError as exc:
            return error_response(exc.status, exc.code, exc.message, exc.details)
        except Exception:
            log.exception("unhandled error in %s", view.__name__)
            return error_response(500, "internal_error", "an internal error occurred; it has been logged")

    return wrapper


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
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise MalformedRequest(f"request body is not valid JSON: {exc}") from exc


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


def experience_out(exp: Experience) -> dict[str, Any]:
    return s.ExperienceOut.model_validate(
        {**asdict(exp), "source": exp.source.value, "status": exp.status.value}
    ).model_dump(mode="json")


def trajectory_out(traj: Trajectory) -> dict[str, Any]:
    return s.TrajectoryOut.model_validate({**asdict(traj), "status": traj.status.value}).model_dump(mode="json")


def hit_out(hit: Hit) -> dict[str, Any]:
    return {"experience": experience_out(hit.experience), "score": hit.score, "explanation": asdict(hit.explanation)}


def failed_review_out(job: Any) -> dict[str, Any]:
    return s.FailedReviewOut.model_validate(asdict(job)).model_dump(mode="json")
