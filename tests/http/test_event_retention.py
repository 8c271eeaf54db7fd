"""Event retention through the routes, on the embedded backend: a tenant's retention set by the
admin, a trajectory's events expiring while the trajectory, its review and its lessons stay, and
the decay pass deleting the expired events (docs/decisions/0403-event-retention.md)."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

from tests.http.test_api import WEATHER_EVENTS, learn_weather_lesson, start
from tests.support.fakes import FakeClock
from tests.support.http_api import ADMIN


def tenant_id_of(api, name: str) -> str:
    return next(t["tenant_id"] for t in api.call("GET", "/v1/tenants", ADMIN).json_body["tenants"] if t["name"] == name)


def test_the_admin_sets_a_tenants_retention_and_new_trajectories_take_it(api):
    key = api.tenant("acme")
    tid = tenant_id_of(api, "acme")
    before = datetime.now(timezone.utc)
    default = start(api, key, "by-default").json_body  # the deployment's default: 90 days
    assert timedelta(days=90) <= datetime.fromisoformat(default["events_expire_at"]) - before < timedelta(days=90, minutes=5)
    assert default["events_expired"] is False

    set_ = api.call("POST", f"/v1/tenants/{tid}/retention", ADMIN, {"event_retention_days": 7})
    assert set_.status_code == 200 and set_.json_body["event_retention_days"] == 7
    assert [t["event_retention_days"] for t in api.call("GET", "/v1/tenants", ADMIN).json_body["tenants"]] == [7]
    week = start(api, key, "a-week").json_body
    assert timedelta(days=7) <= datetime.fromisoformat(week["events_expire_at"]) - before < timedelta(days=7, minutes=5)
    # the trajectory started before keeps the expiry it started with
    assert api.call("GET", "/v1/trajectories/by-default", key).json_body["events_expire_at"] == default["events_expire_at"]

    assert api.call("POST", f"/v1/tenants/{tid}/retention", ADMIN, {"event_retention_days": 0}).status_code == 200
    assert start(api, key, "for-good").json_body["events_expire_at"] is None
    cleared = api.call("POST", f"/v1/tenants/{tid}/retention", ADMIN, {"event_retention_days": None}).json_body
    assert cleared["event_retention_days"] is None

    assert api.call("POST", "/v1/tenants/t_nobody/retention", ADMIN, {"event_retention_days": 3}).status_code == 404
    for bad in ({"event_retention_days": -1}, {"event_retention_days": 4000}, {"event_retention_days": "7"}, {}):
        assert api.call("POST", f"/v1/tenants/{tid}/retention", ADMIN, bad).status_code == 422, bad
    assert api.call("POST", f"/v1/tenants/{tid}/retention", key, {"event_retention_days": 1}).status_code == 401


def test_expired_events_are_gone_from_reads_and_purged_while_the_lessons_stay(api):
    key = api.tenant("acme")
    api.call("POST", f"/v1/tenants/{tenant_id_of(api, 'acme')}/retention", ADMIN, {"event_retention_days": 1})
    clock = FakeClock(datetime.now(timezone.utc))
    api.deps.clock = clock
    ids = learn_weather_lesson(api, key, "tr1")
    assert start(api, key, "still-open").status_code == 201
    assert len(api.call("GET", "/v1/trajectories/tr1/events", key).json_body["events"]) == 4
    assert api.call("POST", "/v1/maintenance/decay", ADMIN, {}).json_body["events_purged"] == 0  # not expired yet

    clock.advance(days=1, seconds=1)
    traj = api.call("GET", "/v1/trajectories/tr1", key)
    assert traj.status_code == 200
    assert traj.json_body["events_expired"] is True and traj.json_body["event_count"] == 4
    assert traj.json_body["status"] == "reviewed" and traj.json_body["experience_ids"] == ids
    page = api.call("GET", "/v1/trajectories/tr1/events", key).json_body
    assert page["events"] == [] and page["events_expired"] is True and page["cursor"] is None

    decay = api.call("POST", "/v1/maintenance/decay", ADMIN, {}).json_body
    assert decay["events_purged"] == 4
    assert api.deps.trajectories.events(api.deps.tenants.tenant_for_key(_hash(key)), "tr1") == []
    assert api.call("POST", "/v1/maintenance/decay", ADMIN, {}).json_body["events_purged"] == 0

    # the lesson, whose sources name the trajectory, is still recalled, read and advised
    lesson = api.call("GET", f"/v1/experiences/{ids[0]}", key)
    assert lesson.status_code == 200 and lesson.json_body["status"] == "active"
    recalled = api.call("POST", "/v1/recall", key, {"query": "Will it rain tomorrow?", "agent_id": "agent-1"}).json_body
    assert [h["experience"]["experience_id"] for h in recalled["hits"]] == ids
    advised = api.call("POST", "/v1/advise", key, {"tool": "get_weather", "params": {"date": "tomorrow"}, "agent_id": "agent-1"})
    assert advised.status_code == 200
    # a trajectory still open past its events' expiry takes no more, and says why
    late = api.call("POST", "/v1/trajectories/still-open/events", key, {"events": WEATHER_EVENTS[:1]})
    assert late.status_code == 409 and "expired" in late.json_body["error"]["message"]


def _hash(key: str) -> str:
    from chalicelib.services.tenants import hash_key

    return hash_key(key)
