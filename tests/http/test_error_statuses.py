"""Every error a service can raise has its HTTP status in the HTTP layer, and the body the contract says."""
from __future__ import annotations

import json

from chalicelib.api.http import STATUS, answer_for, status_of
from chalicelib.domain import errors


def subclasses(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from subclasses(sub)


def test_every_error_class_maps_to_a_client_or_dependency_status():
    # an adapter's own subclass (the DynamoDB store's StoreUnavailable) takes its parent's status
    import chalicelib.adapters.dynamo.errors  # noqa: F401

    for cls in subclasses(errors.HindsightError):
        assert any(issubclass(cls, mapped) for mapped in STATUS), f"{cls.__name__} has no HTTP status in api/http.py"
    assert [status_of(cls("x")) for cls in STATUS] == list(STATUS.values())
    assert status_of(errors.MalformedRequest("x")) == 400 and status_of(errors.InvalidInput("x")) == 422


def test_the_error_answer_has_the_contract_shape_and_retry_after_where_a_client_waits():
    status, headers, body = answer_for(errors.RateLimited("slow down", retry_after=3))
    assert (status, headers["Retry-After"]) == (429, "3")
    assert json.loads(body) == {"error": {"code": "rate_limited", "message": "slow down"}}
    status, headers, body = answer_for(errors.InvalidInput("bad", details=[{"field": "a"}]))
    assert status == 422 and "Retry-After" not in headers
    assert json.loads(body)["error"]["details"] == [{"field": "a"}]
