"""The HTTP API (docs/api.md), route by route, through the real app."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

WEATHER_EVENTS = [
    {"event_id": "e1", "type": "user_input", "content": {"text": "Will it rain tomorrow?"}},
    {"event_id": "e2", "type": "tool_call",
     "content": {"tool": "get_weather", "params": {"date": "tomorrow"}, "status": "error", "error": "MissingParameter: city is required"}},
    {"event_id": "e3", "type": "tool_call", "content": {"tool": "ask_user", "params": {"question": "Which city?"}, "result": "Lyon"}},
    {"event_id": "e4", "type": "tool_call",
     "content": {"tool": "get_weather", "params": {"date": "tomorrow", "city": "Lyon"}, "status": "ok", "result": "rain"}},
]


def start(api, key, tid="tr1", agent="agent-1", **extra):
    body = {"agent_id": agent, "goal": "Will it rain tomorrow in my city?", "trajectory_id": tid,
            "task_type": "query", "tools": ["get_weather", "ask_user"]} | extra
    return api.call("POST", "/v1/trajectories", key, body)


def learn_weather_lesson(api, key, tid="tr1", **extra) -> list[str]:
    assert start(api, key, tid, **extra).status_code == 201
    assert api.call("POST", f"/v1/trajectories/{tid}/events", key, {"events": WEATHER_EVENTS}).status_code == 202
    assert api.call("POST", f"/v1/trajectories/{tid}/finalize", key, {"outcome": "success"}).status_code == 202
    api.run_reviews()
    traj = api.call("GET", f"/v1/trajectories/{tid}", key).json_body
    assert traj["status"] == "reviewed"
    return traj["experience_ids"]


def test_health_needs_no_key_and_names_the_backend(api):
    resp = api.call("GET", "/v1/health")
    assert resp.status_code == 200 and resp.json_body == {"status": "ok", "backend": "embedded"}


def test_openapi_describes_every_contract_route(api):
    doc = api.call("GET", "/v1/openapi.json").json_body
    assert doc["openapi"].startswith("3.")
    expected = {
        ("post", "/v1/tenants"), ("post", "/v1/trajectories"), ("get", "/v1/trajectories/{trajectory_id}"),
        ("post", "/v1/trajectories/{trajectory_id}/events"), ("post", "/v1/trajectories/{trajectory_id}/finalize"),
        ("post", "/v1/experiences"), ("get", "/v1/experiences"), ("get", "/v1/experiences/{experience_id}"),
        ("delete", "/v1/experiences/{experience_id}"), ("post", "/v1/experiences/{experience_id}/feedback"),
        ("post", "/v1/recall"), ("post", "/v1/maintenance/decay"), ("get", "/v1/health"),
    }
    documented = {(m, p) for p, ops in doc["paths"].items() for m in ops}
    assert expected <= documented
    assert doc["paths"]["/v1/recall"]["post"]["requestBody"]["content"]["application/json"]["schema"]["$ref"] == "#/components/schemas/RecallIn"
    assert "query" in doc["components"]["schemas"]["RecallIn"]["required"]


def test_a_tenant_is_created_with_the_admin_key_only(api):
    assert api.call("POST", "/v1/tenants", None, {"name": "x"}).status_code == 401
    assert api.call("POST", "/v1/tenants", "wrong", {"name": "x"}).status_code == 401
    key = api.tenant()
    assert key.startswith("hs_")
    assert api.call("POST", "/v1/tenants", key, {"name": "x"}).status_code == 401


def test_the_api_key_is_stored_only_as_a_hash(api):
    key = api.tenant()
    db = api.deps.tenants.db.read()
    stored = [tuple(r) for r in db.execute("SELECT * FROM api_keys")]
    assert stored and all(key not in str(row) for row in stored)


def test_the_admin_key_reads_no_tenant_data(api):
    resp = api.call("POST", "/v1/recall", "admin-test-key", {"query": "x"})
    assert resp.status_code == 401 and resp.json_body["error"]["code"] == "unauthorized"


def test_the_whole_loop_turns_a_recovered_failure_into_recalled_advice(api):
    key = api.tenant()
    ids = learn_weather_lesson(api, key)
    assert len(ids) == 1
    resp = api.call("POST", "/v1/recall", key, {"query": "Will it rain tomorrow?", "agent_id": "agent-1", "tools": ["get_weather", "ask_user"]})
    assert resp.status_code == 200
    hits = resp.json_body["hits"]
    assert hits[0]["experience"]["experience_id"] == ids[0]
    assert set(hits[0]["explanation"]) >= {"semantic", "tag_match", "freshness", "utility"}
    assert 0 < hits[0]["score"] <= 1
    assert resp.json_body["advice_placement"] == "after_tools"
    assert set(hits[0]["explanation"]) >= {"lexical", "confidence", "matched_tools"}
    advice = resp.json_body["advice"]
    assert "ask_user" in advice and "get_weather" in advice and "city is required" in advice


def test_trajectory_creation_is_idempotent_on_its_id(api):
    key = api.tenant()
    first = start(api, key)
    again = start(api, key)
    assert first.status_code == 201 and again.status_code == 200
    assert again.json_body["trajectory_id"] == first.json_body["trajectory_id"] == "tr1"


def test_events_are_idempotent_on_event_id(api):
    key = api.tenant()
    start(api, key)
    first = api.call("POST", "/v1/trajectories/tr1/events", key, {"events": WEATHER_EVENTS[:2]})
    again = api.call("POST", "/v1/trajectories/tr1/events", key, {"events": WEATHER_EVENTS[1:3]})
    assert first.json_body == {"accepted": 2, "duplicates": 0}
    assert again.json_body == {"accepted": 1, "duplicates": 1}
    assert api.call("GET", "/v1/trajectories/tr1", key).json_body["event_count"] == 3


def test_events_after_finalize_are_refused_with_409(api):
    key = api.tenant()
    start(api, key)
    api.call("POST", "/v1/trajectories/tr1/finalize", key, {"outcome": "failure"})
    resp = api.call("POST", "/v1/trajectories/tr1/events", key, {"events": WEATHER_EVENTS[:1]})
    assert resp.status_code == 409 and resp.json_body["error"]["code"] == "conflict"
    assert api.call("POST", "/v1/trajectories/tr1/finalize", key, {"outcome": "failure"}).status_code == 202
    assert api.call("POST", "/v1/trajectories/tr1/finalize", key, {"outcome": "success"}).status_code == 409


def test_a_retried_append_after_finalize_counts_duplicates_and_new_events_still_409(api):
    # the README's recipe run twice: the same trajectory, the same events, the same finalize
    key = api.tenant()
    learn_weather_lesson(api, key)
    again = api.call("POST", "/v1/trajectories/tr1/events", key, {"events": WEATHER_EVENTS})
    assert again.status_code == 202 and again.json_body == {"accepted": 0, "duplicates": len(WEATHER_EVENTS)}
    new = {"event_id": "e9", "type": "user_input", "content": {"text": "And the day after?"}}
    mixed = api.call("POST", "/v1/trajectories/tr1/events", key, {"events": [WEATHER_EVENTS[0], new]})
    assert mixed.status_code == 409 and mixed.json_body["error"]["code"] == "conflict"
    assert api.call("GET", "/v1/trajectories/tr1", key).json_body["event_count"] == len(WEATHER_EVENTS)


def test_a_review_that_runs_twice_creates_no_second_experience(api):
    key = api.tenant()
    ids = learn_weather_lesson(api, key)
    api.deps.queue.enqueue(api.deps.tenants and "x", "tr1", "full", api.deps.clock.now())  # unrelated id: dead-lettered
    tenant_id = api.deps.tenants.tenant_for_key(__import__("chalicelib.services.tenants", fromlist=["hash_key"]).hash_key(key))
    api.deps.trajectories.save_review(tenant_id, "tr1", "finalized", [], {}, api.deps.clock.now())
    api.deps.queue.enqueue(tenant_id, "tr1", "full", api.deps.clock.now())
    api.run_reviews()
    listed = api.call("GET", "/v1/experiences", key).json_body["items"]
    assert [e["experience_id"] for e in listed] == ids


def test_the_same_lesson_from_a_second_trajectory_is_merged_not_duplicated(api):
    key = api.tenant()
    first = learn_weather_lesson(api, key, "tr1")
    second = learn_weather_lesson(api, key, "tr2")
    assert first == second
    exp = api.call("GET", f"/v1/experiences/{first[0]}", key).json_body
    assert exp["support"] == 2 and exp["sources"] == ["tr1", "tr2"]


def test_other_tenants_ids_answer_404(api):
    a, b = api.tenant("a"), api.tenant("b")
    ids = learn_weather_lesson(api, a)
    for method, path, body in [
        ("GET", "/v1/trajectories/tr1", None),
        ("POST", "/v1/trajectories/tr1/events", {"events": WEATHER_EVENTS[:1]}),
        ("POST", "/v1/trajectories/tr1/finalize", {"outcome": "success"}),
        ("GET", f"/v1/experiences/{ids[0]}", None),
        ("DELETE", f"/v1/experiences/{ids[0]}", {"reason": "x"}),
        ("POST", f"/v1/experiences/{ids[0]}/feedback", {"signal": "failed"}),
    ]:
        resp = api.call(method, path, b, body)
        assert resp.status_code == 404, (method, path, resp.body)
        assert resp.json_body["error"]["code"] == "not_found"
    recall = api.call("POST", "/v1/recall", b, {"query": "Will it rain tomorrow?", "agent_id": "agent-1"}).json_body
    assert recall["hits"] == [] and recall["advice"] == ""
    assert api.call("GET", "/v1/experiences", b).json_body["items"] == []
    # the same client-chosen trajectory id in another tenant is another trajectory
    assert start(api, b).status_code == 201


def test_agent_and_user_scopes_hold_inside_a_tenant(api):
    key = api.tenant()
    def write(advice, **scope):
        body = {"situation": "Booking a table for dinner", "advice": advice, "tools": ["book_table"]} | scope
        resp = api.call("POST", "/v1/experiences", key, body)
        assert resp.status_code == 201, resp.body
        return resp.json_body["experience_id"]
    shared = write("Confirm the party size before you call book_table.")
    mine = write("Confirm the time zone before you call book_table.", agent_id="agent-1")
    theirs = write("Confirm the restaurant before you call book_table.", agent_id="agent-2")
    private = write("This user is vegetarian: filter book_table results.", agent_id="agent-1", user_id="u1")

    def seen(**who):
        body = {"query": "book a table for dinner", "top_k": 10} | who
        return {h["experience"]["experience_id"] for h in api.call("POST", "/v1/recall", key, body).json_body["hits"]}

    assert seen(agent_id="agent-1") == {shared, mine}
    assert seen(agent_id="agent-1", user_id="u1") == {shared, mine, private}
    assert seen(agent_id="agent-2", user_id="u1") == {shared, theirs}
    assert seen() == {shared}


def test_tools_the_agent_lacks_filter_lessons_out(api):
    key = api.tenant()
    api.call("POST", "/v1/experiences", key, {"situation": "Weather", "advice": "Ask for the city before get_weather.", "tools": ["get_weather"]})
    hits = api.call("POST", "/v1/recall", key, {"query": "weather", "tools": ["send_email"]}).json_body["hits"]
    assert hits == []
    hits = api.call("POST", "/v1/recall", key, {"query": "weather", "tools": ["GET_WEATHER"]}).json_body["hits"]
    assert len(hits) == 1


def test_top_k_and_min_score_bound_the_hits(api):
    key = api.tenant()
    for i in range(6):
        api.call("POST", "/v1/experiences", key, {"situation": f"Weather lookup case {i}", "advice": f"Ask for the city first, variant {i}.", "tools": ["get_weather"]})
    body = {"query": "weather lookup", "top_k": 3}
    hits = api.call("POST", "/v1/recall", key, body).json_body["hits"]
    assert len(hits) == 3 and [h["score"] for h in hits] == sorted((h["score"] for h in hits), reverse=True)
    assert api.call("POST", "/v1/recall", key, body | {"min_score": 0.99}).json_body["hits"] == []


def test_manual_experiences_are_written_read_and_listed_with_a_cursor(api):
    key = api.tenant()
    ids = []
    for i in range(5):
        resp = api.call("POST", "/v1/experiences", key, {"situation": f"case {i}", "lesson": f"Lesson number {i} about tools.", "tags": ["t"]})
        assert resp.status_code == 201
        exp = resp.json_body
        assert exp["source"] == "human" and exp["status"] == "active" and exp["advice"] == exp["lesson"]
        ids.append(exp["experience_id"])
    assert api.call("GET", f"/v1/experiences/{ids[0]}", key).json_body["situation"] == "case 0"
    seen, cursor = [], None
    while True:
        path = "/v1/experiences?limit=2" + (f"&cursor={cursor}" if cursor else "")
        page = api.call("GET", path, key).json_body
        seen += [e["experience_id"] for e in page["items"]]
        cursor = page["cursor"]
        if cursor is None:
            break
    assert sorted(seen) == sorted(ids) and len(seen) == 5


def test_a_client_chosen_experience_id_makes_writes_idempotent(api):
    key = api.tenant()
    body = {"experience_id": "my-1", "situation": "s", "advice": "Use the v2 endpoint of the billing tool."}
    assert api.call("POST", "/v1/experiences", key, body).status_code == 201
    assert api.call("POST", "/v1/experiences", key, body).status_code == 200
    assert len(api.call("GET", "/v1/experiences", key).json_body["items"]) == 1


def test_a_forgotten_experience_is_never_recalled_and_kept_as_a_tombstone(api):
    key = api.tenant()
    ids = learn_weather_lesson(api, key)
    resp = api.call("DELETE", f"/v1/experiences/{ids[0]}", key, {"reason": "user asked"})
    assert resp.status_code == 200 and resp.json_body["status"] == "forgotten"
    assert resp.json_body["status_reason"] == "user asked"
    recall = api.call("POST", "/v1/recall", key, {"query": "Will it rain tomorrow?", "agent_id": "agent-1"}).json_body
    assert recall["hits"] == []
    assert api.call("GET", f"/v1/experiences/{ids[0]}", key).json_body["status"] == "forgotten"
    assert api.call("GET", "/v1/experiences?status=forgotten", key).json_body["items"][0]["experience_id"] == ids[0]
    assert api.call("POST", f"/v1/experiences/{ids[0]}/feedback", key, {"signal": "adopted"}).status_code == 409


def test_forgetting_again_keeps_the_first_reason_and_records_a_new_one(api):
    key = api.tenant()
    exp = api.call("POST", "/v1/experiences", key, {"situation": "s", "advice": "Use the v2 endpoint of the billing tool."}).json_body
    path = f"/v1/experiences/{exp['experience_id']}"
    assert api.call("DELETE", path, key, {"reason": "wrong"}).json_body["status_reason"] == "wrong"
    again = api.call("DELETE", path, key, {"reason": "also outdated"})
    assert again.status_code == 200 and again.json_body["status"] == "forgotten"
    assert again.json_body["status_reason"] == "wrong; also: also outdated"
    # the same reason twice (a retry), or none, changes nothing
    for body in ({"reason": "also outdated"}, {"reason": "wrong"}, {}):
        assert api.call("DELETE", path, key, body).json_body["status_reason"] == "wrong; also: also outdated"
    assert api.call("GET", path, key).json_body["status_reason"] == "wrong; also: also outdated"


def test_feedback_moves_utility_both_ways(api):
    key = api.tenant()
    exp = api.call("POST", "/v1/experiences", key, {"situation": "s", "advice": "Use the v2 endpoint of the billing tool."}).json_body
    up = api.call("POST", f"/v1/experiences/{exp['experience_id']}/feedback", key, {"signal": "succeeded"}).json_body
    down = api.call("POST", f"/v1/experiences/{exp['experience_id']}/feedback", key, {"signal": "failed"}).json_body
    assert up["utility"] > exp["utility"] and up["confidence"] > exp["confidence"]
    assert down["utility"] < up["utility"]


def test_decay_is_admin_only_and_archives_stale_lessons(api):
    key = api.tenant()
    ids = learn_weather_lesson(api, key)
    assert api.call("POST", "/v1/maintenance/decay", key, {}).status_code == 401
    soon = api.call("POST", "/v1/maintenance/decay", "admin-test-key", {}).json_body
    assert soon["archived"] == 0
    year = datetime.now(timezone.utc) + timedelta(days=365)
    later = api.call("POST", "/v1/maintenance/decay", "admin-test-key", {"as_of": year.isoformat()}).json_body
    assert later == {"decayed": 1, "archived": 1, "archived_ids": ids, "dry_run": False, "examined": 1, "written": 1, "conflicts": 0,
                     "events_purged": 0}
    exp = api.call("GET", f"/v1/experiences/{ids[0]}", key).json_body
    assert exp["status"] == "archived" and exp["freshness"] < 0.01
    assert api.call("POST", "/v1/recall", key, {"query": "Will it rain tomorrow?", "agent_id": "agent-1"}).json_body["hits"] == []
    # epoch milliseconds are accepted too, and a second run finds nothing left to archive
    again = api.call("POST", "/v1/maintenance/decay", "admin-test-key", {"as_of": int(year.timestamp() * 1000)}).json_body
    assert again == {"decayed": 0, "archived": 0, "archived_ids": [], "dry_run": False, "examined": 0, "written": 0, "conflicts": 0,
                     "events_purged": 0}


def test_decay_is_bounded_in_time_rehearsed_by_a_dry_run_and_scoped_to_a_tenant(api):
    """One admin decay with as_of in the year 9999 archived every tenant's lessons."""
    a, b = api.tenant("a"), api.tenant("b")
    ids_a, ids_b = learn_weather_lesson(api, a), learn_weather_lesson(api, b)
    far = api.call("POST", "/v1/maintenance/decay", "admin-test-key", {"as_of": "9998-01-01T00:00:00Z"})
    assert far.status_code == 422 and "as_of must be between" in far.json_body["error"]["message"]
    past = (datetime.now(timezone.utc) - timedelta(days=3)).isoformat()
    assert api.call("POST", "/v1/maintenance/decay", "admin-test-key", {"as_of": past}).status_code == 422

    year = (datetime.now(timezone.utc) + timedelta(days=365)).isoformat()
    tenant_a = next(t["tenant_id"] for t in api.call("GET", "/v1/tenants", "admin-test-key").json_body["tenants"] if t["name"] == "a")
    rehearsal = api.call("POST", "/v1/maintenance/decay", "admin-test-key", {"as_of": year, "dry_run": True}).json_body
    assert rehearsal["dry_run"] and rehearsal["archived"] == 2 and sorted(rehearsal["archived_ids"]) == sorted(ids_a + ids_b)
    assert api.call("GET", f"/v1/experiences/{ids_a[0]}", a).json_body["status"] == "active"  # nothing written

    scoped = api.call("POST", "/v1/maintenance/decay", "admin-test-key", {"as_of": year, "tenant_id": tenant_a}).json_body
    assert scoped["archived_ids"] == ids_a
    assert api.call("GET", f"/v1/experiences/{ids_a[0]}", a).json_body["status"] == "archived"
    assert api.call("GET", f"/v1/experiences/{ids_b[0]}", b).json_body["status"] == "active"
    assert api.call("POST", "/v1/maintenance/decay", "admin-test-key", {"dry_run": "yes"}).status_code == 422


def test_the_admin_lists_tenants_and_rotates_keys(api):
    old = api.tenant("acme")
    listed = api.call("GET", "/v1/tenants", "admin-test-key").json_body["tenants"]
    assert [t["name"] for t in listed] == ["acme"]
    assert api.call("GET", "/v1/tenants", old).status_code == 401
    tid = listed[0]["tenant_id"]
    resp = api.call("POST", f"/v1/tenants/{tid}/keys", "admin-test-key", {})
    assert resp.status_code == 201
    new = resp.json_body["api_key"]
    assert api.call("GET", "/v1/experiences", old).status_code == 401  # revoked at once
    assert api.call("GET", "/v1/experiences", new).status_code == 200
    kept = api.call("POST", f"/v1/tenants/{tid}/keys", "admin-test-key", {"revoke_old": False}).json_body["api_key"]
    assert api.call("GET", "/v1/experiences", new).status_code == 200
    assert api.call("GET", "/v1/experiences", kept).status_code == 200
    assert api.call("POST", "/v1/tenants/t_nobody/keys", "admin-test-key", {}).status_code == 404


def test_the_admin_lists_tenants_a_page_at_a_time_and_a_forged_cursor_is_422(api):
    names = [f"tenant-{i}" for i in range(5)]
    for name in names:
        api.tenant(name)
    seen, cursor, pages = [], None, 0
    while True:
        page = api.call("GET", "/v1/tenants?limit=2" + (f"&cursor={cursor}" if cursor else ""), "admin-test-key").json_body
        assert len(page["tenants"]) <= 2
        seen += [t["name"] for t in page["tenants"]]
        pages += 1
        cursor = page["cursor"]
        if cursor is None:
            break
    assert seen == names and pages == 3
    assert api.call("GET", "/v1/tenants", "admin-test-key").json_body["cursor"] is None
    forged = api.call("GET", "/v1/tenants?cursor=WyJ4IiwxXQ", "admin-test-key")
    assert forged.status_code == 422 and forged.json_body["error"]["message"] == "invalid cursor"
    assert api.call("GET", "/v1/tenants?limit=0", "admin-test-key").status_code == 422


def test_stats_count_by_status_with_a_freshness_histogram(api):
    key = api.tenant()
    ids = learn_weather_lesson(api, key)
    api.call("POST", "/v1/experiences", key, {"situation": "s", "advice": "Use the v2 endpoint of the billing tool."})
    api.call("DELETE", f"/v1/experiences/{ids[0]}", key, {})
    start(api, key, "tr-open")
    stats = api.call("GET", "/v1/stats", key).json_body
    assert stats["experiences"] == {"active": 1, "archived": 0, "forgotten": 1}
    assert stats["trajectories"] == {"open": 1, "finalized": 0, "reviewed": 1, "review_failed": 0}
    assert len(stats["freshness_histogram"]) == 10
    assert stats["freshness_histogram"][-1] == {"bucket": "0.9-1.0", "count": 1}


def test_reindex_rebuilds_the_tenants_vectors(api):
    key = api.tenant()
    ids = learn_weather_lesson(api, key)
    tenant_id = api.call("GET", "/v1/tenants", "admin-test-key").json_body["tenants"][0]["tenant_id"]
    api.deps.index.delete(tenant_id, ids)
    query = {"query": "Will it rain tomorrow?", "agent_id": "agent-1"}
    assert api.call("POST", "/v1/recall", key, query).json_body["hits"] == []
    assert api.call("POST", "/v1/maintenance/reindex", key, {}).json_body == {"reindexed": 1, "cursor": None}
    assert [h["experience"]["experience_id"] for h in api.call("POST", "/v1/recall", key, query).json_body["hits"]] == ids


def test_a_tenant_name_is_taken_once_and_the_refusal_names_its_tenant(api):
    first = api.call("POST", "/v1/tenants", "admin-test-key", {"name": "acme"})
    assert first.status_code == 201
    again = api.call("POST", "/v1/tenants", "admin-test-key", {"name": "acme"})
    assert again.status_code == 409
    error = again.json_body["error"]
    assert error["code"] == "tenant_exists"
    assert first.json_body["tenant_id"] in error["message"]
    assert error["details"] == {"tenant_id": first.json_body["tenant_id"], "name": "acme"}
    listed = api.call("GET", "/v1/tenants", "admin-test-key").json_body["tenants"]
    assert [t["name"] for t in listed] == ["acme"]


@pytest.mark.parametrize("name", ["ACME", "Acme", "\uff41\uff43\uff4d\uff45", "ac\u200bme", "acme\u2060", "\u202dacme", "acme\u00ad"])
def test_a_look_alike_tenant_name_is_409_naming_the_tenant_that_has_it(api, name):
    first = api.call("POST", "/v1/tenants", "admin-test-key", {"name": "acme"}).json_body
    again = api.call("POST", "/v1/tenants", "admin-test-key", {"name": name})
    assert again.status_code == 409
    error = again.json_body["error"]
    assert error["code"] == "tenant_exists" and error["details"] == {"tenant_id": first["tenant_id"], "name": "acme"}
    assert first["tenant_id"] in error["message"] and "'acme'" in error["message"]
    assert [t["name"] for t in api.call("GET", "/v1/tenants", "admin-test-key").json_body["tenants"]] == ["acme"]


def test_a_tenant_name_of_nothing_visible_is_422(api):
    resp = api.call("POST", "/v1/tenants", "admin-test-key", {"name": "\u200b\u200d"})
    assert resp.status_code == 422 and "visible" in resp.json_body["error"]["message"]


def test_get_recall_and_stats_agree_on_freshness_at_any_decay_time(api):
    """One freshness, derived from the clock on every read: a decay as of any moment writes
    none (only archives), and a read, recall's score and the stats histogram all show the same."""
    from datetime import datetime, timedelta, timezone

    key = api.tenant()
    ids = learn_weather_lesson(api, key)
    now = datetime.now(timezone.utc)
    for as_of, expected in ((now + timedelta(days=30), 1.0), (now + timedelta(days=60), 1.0), (now - timedelta(hours=23), 1.0)):  # the past: at most a day back
        decayed = api.call("POST", "/v1/maintenance/decay", "admin-test-key", {"as_of": as_of.isoformat()})
        assert decayed.status_code == 200
        assert decayed.json_body["written"] == decayed.json_body["archived"] == 0
        shown = api.call("GET", f"/v1/experiences/{ids[0]}", key).json_body["freshness"]
        assert shown == pytest.approx(expected, abs=1e-3)
        hit = api.call("POST", "/v1/recall", key, {"query": "Will it rain tomorrow?", "agent_id": "agent-1", "tools": ["get_weather", "ask_user"]}).json_body["hits"][0]
        assert hit["explanation"]["freshness"] == pytest.approx(shown, abs=1e-4)
        assert hit["experience"]["freshness"] == pytest.approx(shown, abs=1e-4)
        listed = api.call("GET", "/v1/experiences", key).json_body["items"][0]["freshness"]
        assert listed == pytest.approx(shown, abs=1e-4)
        histogram = api.call("GET", "/v1/stats", key).json_body["freshness_histogram"]
        (bucket,) = [b["bucket"] for b in histogram if b["count"]]
        low, high = map(float, bucket.split("-"))
        assert low <= shown <= high, (bucket, shown)


def test_the_api_page_is_served_self_contained_and_renders_the_openapi_document(api):
    page = api.call("GET", "/v1/docs")
    assert page.status_code == 200 and page.headers["Content-Type"].startswith("text/html")
    html = page.body.decode()
    assert 'fetch("openapi.json")' in html  # the document next to it, wherever the API is mounted
    # offline: no script, style, font or image from anywhere else
    assert "http://" not in html and "https://" not in html and "<script src" not in html and "<link" not in html
