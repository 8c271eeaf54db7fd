"""``POST /v1/experiences`` with ``supersedes``: the answers a client sees."""
from __future__ import annotations

import pytest

SITUATION = "Choosing the database for the orders service"


def write(api, key, advice, **extra):
    return api.call("POST", "/v1/experiences", key, {"situation": SITUATION, "advice": advice, "agent_id": "bot"} | extra)


def test_supersedes_archives_the_old_lesson_and_the_console_reads_the_chain(api):
    key = api.tenant()
    old = write(api, key, "Use SQLite.").json_body
    resp = write(api, key, "Use PostgreSQL.", supersedes=[old["experience_id"]])
    assert resp.status_code == 201
    new = resp.json_body
    assert new["supersedes"] == old["experience_id"] and new["correction_of"] == []
    stored = api.call("GET", f"/v1/experiences/{old['experience_id']}", key).json_body
    assert stored["status"] == "archived" and stored["superseded_by"] == new["experience_id"]


def test_another_tenants_id_answers_404(api):
    mine, theirs = api.tenant(), api.tenant()
    other = write(api, theirs, "Use SQLite.").json_body
    resp = write(api, mine, "Use PostgreSQL.", supersedes=[other["experience_id"]])
    assert resp.status_code == 404
    assert api.call("GET", f"/v1/experiences/{other['experience_id']}", theirs).json_body["status"] == "active"


def test_another_agents_id_answers_404(api):
    key = api.tenant()
    other = write(api, key, "Use SQLite.", agent_id="other-bot").json_body
    assert write(api, key, "Use PostgreSQL.", supersedes=[other["experience_id"]]).status_code == 404


def test_a_forgotten_id_answers_409(api):
    key = api.tenant()
    old = write(api, key, "Use SQLite.").json_body
    assert api.call("DELETE", f"/v1/experiences/{old['experience_id']}", key, {"reason": "wrong"}).status_code == 200
    resp = write(api, key, "Use PostgreSQL.", supersedes=[old["experience_id"]])
    assert resp.status_code == 409 and "forgotten" in str(resp.json_body)


@pytest.mark.parametrize("bad", [[], "sometimes", [""], ["a" * 201], 3])
def test_a_malformed_supersedes_answers_422(api, bad):
    key = api.tenant()
    assert write(api, key, "Use PostgreSQL.", supersedes=bad).status_code == 422


def test_a_probable_correction_is_named_and_auto_applies_it(api):
    key = api.tenant()
    old = write(api, key, "Use SQLite for the orders service.").json_body
    flagged = write(api, key, "Use PostgreSQL for the orders service.").json_body
    assert flagged["correction_of"] == [old["experience_id"]]
    applied = write(api, key, "Use MySQL for the orders service.", supersedes="auto").json_body
    assert set(applied["correction_of"]) == set() and applied["supersedes"] in {old["experience_id"], flagged["experience_id"]}
