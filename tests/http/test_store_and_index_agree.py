"""A manual write and its retry leave the lesson recallable; a lock timeout answers 503, not 500."""
from __future__ import annotations

import sqlite3

from chalicelib.adapters.embedded.db import DatabaseBusy



def _hold_the_write_lock(api) -> sqlite3.Connection:
    other = sqlite3.connect(api.deps.experiences.db.path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    api.deps.experiences.db.connection().execute("PRAGMA busy_timeout=50")
    return other


def test_a_write_that_cannot_get_the_database_lock_answers_503_with_retry_after(api):
    key = api.tenant()
    other = _hold_the_write_lock(api)
    try:
        resp = api.call("POST", "/v1/experiences", key, {"experience_id": "x1", "situation": "s", "advice": "Use the v2 billing endpoint."})
        assert resp.status_code == 503 and resp.json_body["error"]["code"] == "unavailable"
        assert resp.headers["Retry-After"] == "1"
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert api.call("POST", "/v1/experiences", key, {"experience_id": "x1", "situation": "s", "advice": "Use the v2 billing endpoint."}).status_code == 201


def test_a_retry_of_a_write_stored_but_not_indexed_makes_the_lesson_recallable(api, monkeypatch):
    key = api.tenant()
    body = {"experience_id": "x1", "situation": "Paying a vendor", "advice": "Call `lookup_vendor` before `pay_vendor`."}
    upsert = api.deps.index.upsert

    def busy(*args, **kwargs):
        raise DatabaseBusy("the database is busy; retry shortly")

    monkeypatch.setattr(api.deps.index, "upsert", busy)
    assert api.call("POST", "/v1/experiences", key, body).status_code == 503  # stored, not indexed
    monkeypatch.setattr(api.deps.index, "upsert", upsert)
    assert api.call("POST", "/v1/experiences", key, body).status_code == 200
    hits = api.call("POST", "/v1/recall", key, {"query": "pay the vendor lookup_vendor pay_vendor"}).json_body["hits"]
    assert [h["experience"]["experience_id"] for h in hits] == ["x1"]


def test_an_append_that_cannot_get_the_database_lock_answers_503_and_its_retry_is_stored_once(api):
    key = api.tenant()
    assert api.call("POST", "/v1/trajectories", key, {"trajectory_id": "tr1", "agent_id": "a", "goal": "g"}).status_code == 201
    body = {"events": [{"event_id": "e1", "type": "llm_reasoning", "content": {"text": "plan"}}]}
    other = _hold_the_write_lock(api)
    try:
        resp = api.call("POST", "/v1/trajectories/tr1/events", key, body)
        assert resp.status_code == 503 and resp.headers["Retry-After"] == "1"
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert api.call("POST", "/v1/trajectories/tr1/events", key, body).json_body == {"accepted": 1, "duplicates": 0}
    assert api.call("POST", "/v1/trajectories/tr1/events", key, body).json_body == {"accepted": 0, "duplicates": 1}
