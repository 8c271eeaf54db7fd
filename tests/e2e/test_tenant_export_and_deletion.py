"""A tenant's export and deletion on the real embedded server (its worker runs the jobs: in the
review process when there is one): the export holds the tenant's data and none of the other's;
after the deletion the tenant's key answers 401, no row of it is left in any table of either
database, nor a file of its exports, and the other tenant still recalls its lesson."""
from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

import httpx
import pytest

pytestmark = pytest.mark.e2e

ADMIN = "e2e-admin-key"
EVENTS = [
    {"event_id": "e1", "type": "tool_call", "content": {"tool": "get_weather", "params": {"date": "tomorrow"}, "status": "error",
                                                        "error": "MissingParameter: city is required"}},
    {"event_id": "e2", "type": "tool_call", "content": {"tool": "ask_user", "params": {"question": "Which city?"}, "result": "Lyon"}},
    {"event_id": "e3", "type": "tool_call", "content": {"tool": "get_weather", "params": {"date": "tomorrow", "city": "Lyon"},
                                                        "result": "rain"}},
]
QUERY = {"query": "Will it be sunny this weekend?", "agent_id": "weather-bot", "tools": ["get_weather", "ask_user"]}


def until(read, done, seconds: float = 60.0):
    deadline = time.monotonic() + seconds
    while True:
        value = read()
        if done(value):
            return value
        assert time.monotonic() < deadline, value
        time.sleep(0.1)


def rows_naming(db: Path, text: str) -> dict[str, int]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    found = {}
    for (table,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%'"):
        cols = [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]
        where = " OR ".join(f"CAST({c} AS TEXT) LIKE ?" for c in cols)
        (n,) = conn.execute(f"SELECT COUNT(*) FROM {table} WHERE {where}", [f"%{text}%"] * len(cols)).fetchone()
        if n:
            found[table] = n
    conn.close()
    return found


def test_export_and_delete_a_tenant_on_the_real_server(start_server, tmp_path):
    data = tmp_path / "data"
    server = start_server({"HINDSIGHT_EMBEDDER": "hash", "HINDSIGHT_ADMIN_KEY": ADMIN}, data_dir=data)
    admin = httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {ADMIN}"}, timeout=30)
    made = {}
    for name in ("alpha", "beta"):
        created = admin.post("/v1/tenants", json={"name": name}).json()
        made[name] = (created["tenant_id"], httpx.Client(base_url=server.url, timeout=30,
                                                          headers={"Authorization": f"Bearer {created['api_key']}"}))
        c = made[name][1]
        for t in ("t1", "t2"):
            assert c.post("/v1/trajectories", json={"trajectory_id": f"{name}-{t}", "agent_id": "weather-bot",
                                                    "goal": "Will it rain tomorrow?", "tools": ["get_weather", "ask_user"]}).status_code == 201
            assert c.post(f"/v1/trajectories/{name}-{t}/events", json={"events": EVENTS}).status_code == 202
            assert c.post(f"/v1/trajectories/{name}-{t}/finalize", json={"outcome": "success"}).status_code == 202
            until(lambda: c.get(f"/v1/trajectories/{name}-{t}").json()["status"], lambda s: s == "reviewed")
        assert c.post("/v1/recall", json=QUERY).json()["hits"]
    (a, client_a), (b, client_b) = made["alpha"], made["beta"]

    started = admin.post(f"/v1/tenants/{a}/exports")
    assert started.status_code == 202
    export_id = started.json()["export_id"]
    t0 = time.monotonic()
    export = until(lambda: admin.get(f"/v1/tenants/{a}/exports/{export_id}").json(), lambda e: e["state"] == "done")
    export_seconds = time.monotonic() - t0
    lines = []
    for part in export["parts"]:
        got = admin.get(f"/v1/tenants/{a}/exports/{export_id}/data", params={"part": part["number"]})
        assert got.status_code == 200 and got.headers["content-type"].startswith("application/x-ndjson")
        lines += [json.loads(line) for line in got.text.splitlines()]
    kinds = [line["type"] for line in lines]
    assert kinds.count("tenant") == 1 and kinds.count("trajectory") == 2 and kinds.count("event") == 6
    assert kinds.count("experience") >= 1
    assert {line["data"]["trajectory_id"] for line in lines if line["type"] == "trajectory"} == {"alpha-t1", "alpha-t2"}
    text = json.dumps(lines)
    assert b not in text and "beta-" not in text
    assert (data / "exports" / a / export_id).is_dir()

    deleted = admin.delete(f"/v1/tenants/{a}")
    assert deleted.status_code == 202
    assert client_a.post("/v1/recall", json=QUERY).status_code == 401  # at once
    t0 = time.monotonic()
    status = until(lambda: admin.get(f"/v1/tenants/{a}/deletion").json(), lambda d: d["state"] == "done")
    delete_seconds = time.monotonic() - t0
    assert status["deleted"]["items"] > 0 and status["deleted"]["index_entries"] >= 1 and status["deleted"]["export_parts"] >= 1
    assert client_a.get("/v1/stats").status_code == 401

    assert rows_naming(data / "hindsight.db", a) == {"checkpoints": 2}  # the two jobs' records, no data of the tenant
    assert rows_naming(data / "vectors.db", a) == {}
    assert not (data / "exports" / a).exists()
    assert a not in [t["tenant_id"] for t in admin.get("/v1/tenants").json()["tenants"]]

    assert client_b.post("/v1/recall", json=QUERY).json()["hits"]  # the other tenant is untouched
    assert client_b.get("/v1/trajectories/beta-t1").json()["status"] == "reviewed"
    assert rows_naming(data / "hindsight.db", b)
    assert admin.post("/v1/tenants", json={"name": "alpha"}).status_code == 201  # the name is free again
    print(f"export done {export_seconds:.1f} s after it was asked for, deletion {delete_seconds:.1f} s")
