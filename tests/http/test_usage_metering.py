"""Usage per tenant (``domain.usage``) as the routes and the review pipeline report it to the
deployment's meter: what metering and the stack's dashboard count."""
from __future__ import annotations

from collections import Counter, defaultdict

from chalicelib.domain import usage
from tests.support.http_api import ADMIN

from .test_api import WEATHER_EVENTS, start


class RecordingMeter:
    def __init__(self) -> None:
        self.by_tenant: dict[str | None, Counter] = defaultdict(Counter)

    def record(self, tenant_id, counts) -> None:
        self.by_tenant[tenant_id].update(counts)


def tenant_id_of(api, name: str) -> str:
    return next(t["tenant_id"] for t in api.call("GET", "/v1/tenants", ADMIN).json_body["tenants"] if t["name"] == name)


def test_requests_recalls_and_stored_events_are_counted_per_tenant(api):
    meter = api.deps.meter = RecordingMeter()
    a, b = api.tenant("a"), api.tenant("b")
    assert start(api, a).status_code == 201
    assert api.call("POST", "/v1/trajectories/tr1/events", a, {"events": WEATHER_EVENTS}).status_code == 202
    assert api.call("POST", "/v1/trajectories/tr1/events", a, {"events": WEATHER_EVENTS[:2]}).status_code == 202  # repeats
    assert api.call("POST", "/v1/recall", a, {"query": "rain?"}).status_code == 200
    assert api.call("POST", "/v1/recall", b, {"query": "rain?"}).status_code == 200
    assert api.call("GET", "/v1/experiences/nope", b).status_code == 404  # a request all the same
    ta, tb = tenant_id_of(api, "a"), tenant_id_of(api, "b")
    assert meter.by_tenant[ta] == {usage.REQUESTS: 4, usage.EVENTS: len(WEATHER_EVENTS), usage.RECALLS: 1}
    assert meter.by_tenant[tb] == {usage.REQUESTS: 2, usage.RECALLS: 1}
    assert set(meter.by_tenant) == {ta, tb}  # admin calls and the health check are no tenant's usage


def test_denied_keys_and_failed_validation_count_what_reached_the_tenant(api):
    meter = api.deps.meter = RecordingMeter()
    key = api.tenant("a")
    assert api.call("POST", "/v1/recall", "hs_unknown", {"query": "x"}).status_code == 401
    assert api.call("POST", "/v1/recall", key, {"query": ""}).status_code == 422
    assert meter.by_tenant[tenant_id_of(api, "a")] == {usage.REQUESTS: 1}  # no recall answered
    assert None not in meter.by_tenant


def test_without_a_meter_nothing_is_counted_and_nothing_fails(api):
    assert api.deps.meter is None
    key = api.tenant("a")
    assert api.call("POST", "/v1/recall", key, {"query": "rain?"}).status_code == 200
