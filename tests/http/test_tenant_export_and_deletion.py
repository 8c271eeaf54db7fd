"""The admin routes of a tenant's export and deletion, through the real routes on the embedded
backend: the export holds the tenant's data and no other's; after the deletion no row of the
tenant is left in any table of either database, nor a file of its exports, and the other tenant
still recalls."""
from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from chalicelib.services.tenant_jobs import run_pending
from tests.support.http_api import ADMIN

EVENTS = [
    {"event_id": "e1", "type": "tool_call", "content": {"tool": "get_weather", "params": {"date": "tomorrow"}, "status": "error",
                                                        "error": "MissingParameter: city is required"}},
    {"event_id": "e2", "type": "tool_call", "content": {"tool": "ask_user", "params": {"question": "Which city?"}, "result": "Lyon"}},
    {"event_id": "e3", "type": "tool_call", "content": {"tool": "get_weather", "params": {"date": "tomorrow", "city": "Lyon"},
                                                        "result": "rain"}},
]
QUERY = {"query": "Will it be sunny this weekend?", "agent_id": "weather-bot", "tools": ["get_weather", "ask_user"]}


def learn(api, key: str, tid: str) -> None:
    assert api.call("POST", "/v1/trajectories", key, {"trajectory_id": tid, "agent_id": "weather-bot", "goal": "Will it rain tomorrow?",
                                                      "tools": ["get_weather", "ask_user"]}).status_code == 201
    assert api.call("POST", f"/v1/trajectories/{tid}/events", key, {"events": EVENTS}).status_code == 202
    assert api.call("POST", f"/v1/trajectories/{tid}/finalize", key, {"outcome": "success"}).status_code == 202


def tenant_id_of(api, name: str) -> str:
    (tenant,) = [t for t in api.call("GET", "/v1/tenants", ADMIN).json_body["tenants"] if t["name"] == name]
    return tenant["tenant_id"]


def rows_of(db: Path, tenant_id: str) -> dict[str, int]:
    """Rows that name the tenant, in every table of the database (any column)."""
    conn = sqlite3.connect(db)
    found = {}
    for (table,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%'"):
        cols = [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]
        where = " OR ".join(f"CAST({c} AS TEXT) LIKE ?" for c in cols)
        (n,) = conn.execute(f"SELECT COUNT(*) FROM {table} WHERE {where}", [f"%{tenant_id}%"] * len(cols)).fetchone()
        if n:
            found[table] = n
    conn.close()
    return found


def forever() -> float:
    return 1e9


def test_export_then_delete_a_tenant_leaves_nothing_of_it_and_the_other_untouched(api, tmp_path):
    key_a, key_b = api.tenant("alpha"), api.tenant("beta")
    learn(api, key_a, "a1")
    learn(api, key_b, "b1")
    api.run_reviews()
    a, b = tenant_id_of(api, "alpha"), tenant_id_of(api, "beta")
    assert api.call("POST", "/v1/recall", key_a, QUERY).json_body["hits"]

    started = api.call("POST", f"/v1/tenants/{a}/exports", ADMIN)
    assert started.status_code == 202 and started.json_body["state"] == "running"
    export_id = started.json_body["export_id"]
    run_pending(api.deps, forever)
    export = api.call("GET", f"/v1/tenants/{a}/exports/{export_id}", ADMIN).json_body
    assert export["state"] == "done" and export["counts"]["experiences"] >= 1 and export["counts"]["events"] == 3
    text = ""
    for part in export["parts"]:
        got = api.call("GET", f"/v1/tenants/{a}/exports/{export_id}/data?part={part['number']}", ADMIN)
        assert got.status_code == 200 and got.headers["Content-Type"].startswith("application/x-ndjson")
        text += got.body.decode() if isinstance(got.body, bytes) else got.body
    lines = [json.loads(line) for line in text.splitlines()]
    assert {line["type"] for line in lines} >= {"tenant", "experience", "trajectory", "event"}
    assert a in text and b not in text and '"b1"' not in text  # the id quoted: a tenant id may hold "b1"
    assert api.call("GET", f"/v1/tenants/{a}/exports/{export_id}/data?part=99", ADMIN).status_code == 404
    assert api.call("GET", f"/v1/tenants/{b}/exports/{export_id}", ADMIN).status_code == 404  # another tenant's path

    deleted = api.call("DELETE", f"/v1/tenants/{a}", ADMIN)
    assert deleted.status_code == 202 and deleted.json_body["keys_revoked"] == 1
    assert api.call("POST", "/v1/recall", key_a, QUERY).status_code == 401  # at once, before the purge
    assert api.call("POST", f"/v1/tenants/{a}/exports", ADMIN).status_code == 409
    run_pending(api.deps, forever)
    status = api.call("GET", f"/v1/tenants/{a}/deletion", ADMIN).json_body
    assert status["state"] == "done" and status["deleted"]["items"] > 0 and status["deleted"]["index_entries"] >= 1
    assert api.call("DELETE", f"/v1/tenants/{a}", ADMIN).json_body["state"] == "done"  # idempotent

    assert rows_of(tmp_path / "hindsight.db", a) == {"checkpoints": 2}  # the two jobs' records, no data
    assert rows_of(tmp_path / "vectors.db", a) == {}
    assert not (tmp_path / "exports" / a).exists()
    assert api.deps.index.count(a) == 0
    assert a not in [t["tenant_id"] for t in api.call("GET", "/v1/tenants", ADMIN).json_body["tenants"]]

    assert rows_of(tmp_path / "hindsight.db", b)  # the other tenant is untouched
    assert api.call("POST", "/v1/recall", key_b, QUERY).json_body["hits"]
    assert api.call("POST", "/v1/tenants", ADMIN, {"name": "alpha"}).status_code == 201  # the name is free again


def test_unknown_tenants_answer_404(api):
    for method, path in (("POST", "/v1/tenants/t_nobody/exports"), ("GET", "/v1/tenants/t_nobody/exports/x_1"),
                         ("GET", "/v1/tenants/t_nobody/exports/x_1/data"), ("DELETE", "/v1/tenants/t_nobody"),
                         ("GET", "/v1/tenants/t_nobody/deletion")):
        assert api.call(method, path, ADMIN).status_code == 404, (method, path)
        assert api.call(method, path, "not-the-admin").status_code == 401, (method, path)
