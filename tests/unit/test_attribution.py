from chalicelib.domain.attribution import attribute, build_parents
from chalicelib.domain.generalize import describe_value, generalize, literal_values
from chalicelib.domain.models import Event
from chalicelib.domain.review import review_by_rules

from tests.support.builders import T0, call, said, traj


def ev(eid, kind="tool_call", parent=None, node=None, seq=0, **content):
    return Event(event_id=eid, type=kind, timestamp=T0, content=content, parent_id=parent, node_id=node, seq=seq)


def test_events_without_a_parent_hang_under_the_previous_one():
    events = [ev("a", seq=1), ev("b", seq=2), ev("c", parent="a", seq=3), ev("d", parent="missing", seq=4)]
    assert build_parents(events) == {"a": None, "b": "a", "c": "a", "d": "c"}


def test_parents_may_be_named_by_node_id():
    events = [ev("e1", kind="llm_reasoning", node="plan", seq=1, text="t"), ev("e2", parent="plan", seq=2)]
    assert build_parents(events)["e2"] == "e1"


def test_calls_are_labelled_by_outcome():
    events = [
        call("get_weather", {"date": "tomorrow"}, ok=False, error="MissingParameter: city"),
        call("ask_user", {"q": "city?"}),
        call("get_weather", {"date": "tomorrow", "city": "Lyon"}),
        call("get_weather", {"date": "tomorrow", "city": "Lyon"}),
    ]
    labels = attribute(events).labels
    assert list(labels.values()) == ["failed", "recovery", "effective", "repeated"]


def test_contrast_names_the_changed_parameter():
    events = [
        call("search", {"q": "x", "limit": 10000}, ok=False, error="TimeoutError: too many rows"),
        call("search", {"q": "x", "limit": 100}),
    ]
    (contrast,) = attribute(events).contrasts
    assert contrast.kind == "param" and contrast.changed_params == ("limit",)


def test_branches_under_one_decision_are_contrasted():
    plan = ev("p", kind="llm_reasoning", node="plan", seq=1, text="Pick a source for the rate")
    bad = ev("b", parent="plan", seq=2, tool="web_search", params={"q": "EURUSD"}, status="error", error="TimeoutError")
    good = ev("g", parent="plan", seq=3, tool="fx_rate", params={"pair": "EURUSD"}, status="ok")
    attribution = attribute([plan, bad, good])
    (contrast,) = attribution.contrasts
    assert (contrast.failed.event_id, contrast.worked.event_id, contrast.kind) == ("b", "g", "swap")
    # the decision above both branches is not credited: one branch helped, one hurt
    assert attribution.contribution["p"] == 0.0


def test_a_decision_whose_branch_worked_is_credited():
    plan = ev("p", kind="llm_reasoning", node="plan", seq=1, text="Ask for the city first")
    ask = ev("a", parent="plan", seq=2, tool="ask_user", params={}, status="ok")
    attribution = attribute([plan, ask])
    assert attribution.contribution["p"] == 0.5
    assert attribution.key_decisions([plan, ask]) == [{"event_id": "p", "text": "Ask for the city first", "contribution": 0.5}]


def test_identical_retry_that_passes_is_not_a_decision():
    events = [call("api", {"x": 1}, ok=False, error="503"), call("api", {"x": 1})]
    assert attribute(events).contrasts == []


def test_literal_values_become_named_placeholders():
    values = literal_values([{"city": "Paris", "date": "2026-05-01", "flag": True, "n": 3}])
    assert values == {"Paris": "<city>", "2026-05-01": "<date>"}
    assert generalize("weather in paris on 2026-05-01 for 3 days", values) == "weather in <city> on <date> for <n> days"


def test_ids_urls_paths_and_emails_are_generalized():
    text = "GET https://api.x.io/v1/u/42 for bob@x.io at /var/log/app.log id 3f2a9c1b7d"
    assert generalize(text) == "GET <url> for <email> at <path> id <id>"


def test_values_are_described_as_patterns_with_an_example():
    assert describe_value("CDG") == "a 3-letter uppercase code (e.g. `CDG`)"
    assert describe_value("2026-05-01") == "an ISO date YYYY-MM-DD (e.g. `2026-05-01`)"
    assert describe_value(10) == "a whole number (e.g. 10)"
    # what tells cents from euros, or a charge from a refund, is in the pattern, not only the example
    assert describe_value(19.99) == "a decimal number (e.g. 19.99)"
    assert describe_value(-5) == "a negative whole number (e.g. -5)"
    assert describe_value("0.5") == "a decimal number in a string (e.g. `0.5`)"


def test_lessons_carry_placeholders_not_the_literals_of_one_task():
    events = [
        call("search_flights", {"from": "Paris", "to": "Rome"}, ok=False, error="InvalidAirport: Paris is not an IATA code"),
        call("search_flights", {"from": "CDG", "to": "FCO"}),
    ]
    lesson = review_by_rules(traj(goal="Fly from Paris to Rome on 2026-05-01"), events).lessons[0]
    assert "Paris" not in lesson.situation and "<from> to <to> on <date>" in lesson.situation
    assert "`from` to a 3-letter uppercase code (e.g. `CDG`)" in lesson.advice
    assert "<from> is not an IATA code" in lesson.advice


def test_a_value_fed_by_a_call_in_between_makes_that_call_the_prerequisite():
    events = [
        call("send_email", {"to": "Bob"}, ok=False, error="InvalidRecipient: not an address"),
        call("list_contacts", {}, result=["ann@x.io"]),
        call("lookup_contact", {"name": "Bob"}, result={"email": "bob@x.io"}),
        call("send_email", {"to": "bob@x.io"}),
    ]
    (c,) = attribute(events).contrasts
    assert (c.kind, c.prerequisite, c.changed_params) == ("order", "lookup_contact", ("to",))


def test_after_exploring_the_last_step_before_the_retry_is_the_prerequisite():
    events = [
        call("resize_vm", {"id": "vm1", "size": "L"}, ok=False, error="InvalidState: vm is running"),
        call("describe_vm", {"id": "vm1"}, result={"state": "running"}),
        call("stop_vm", {"id": "vm1"}, result="stopped"),
        call("resize_vm", {"id": "vm1", "size": "L"}),
    ]
    (c,) = attribute(events).contrasts
    assert (c.kind, c.prerequisite) == ("order", "stop_vm")


def test_a_replaced_tool_is_contrasted_with_what_worked_after_its_last_failure():
    events = [
        call("git_push", {"branch": "main"}, ok=False, error="ProtectedBranch: push to main refused"),
        call("git_pull", {}),
        call("git_push", {"branch": "main"}, ok=False, error="ProtectedBranch: push to main refused"),
        call("create_pull_request", {"branch": "feature"}),
    ]
    (c,) = attribute(events).contrasts
    assert (c.kind, c.worked.tool) == ("swap", "create_pull_request")


def test_the_replacement_is_the_call_that_acts_on_the_failed_calls_values_not_a_lookup_before_it():
    events = [
        call("pos_refund", {"check": "CHK-1", "item": "steak"}, ok=False, error="NOT_PERMITTED"),
        call("pos_check_get", {"check": "CHK-1"}, result={"status": "open"}),
        call("pos_item_void", {"check": "CHK-1", "item": "steak"}),
    ]
    (c,) = attribute(events).contrasts
    assert (c.kind, c.worked.tool) == ("swap", "pos_item_void")


def test_a_replacement_is_looked_for_only_until_the_next_failure():
    events = [
        call("pos_refund", {"check": "CHK-1", "item": "steak"}, ok=False, error="NOT_PERMITTED"),
        call("pos_check_get", {"check": "CHK-1"}),
        call("pos_close", {"check": "CHK-2"}, ok=False, error="CLOSED"),
        call("pos_item_void", {"check": "CHK-1", "item": "steak"}),
    ]
    swaps = [c for c in attribute(events).contrasts if c.failed.tool == "pos_refund"]
    assert [c.worked.tool for c in swaps] == ["pos_check_get"]


def test_failures_on_the_way_to_the_same_working_call_are_one_lesson_from_the_first():
    events = [
        call("provision", {"worker": "W1", "systems": ["email", "vpn"]}, ok=False, error="PROVISION_FAILED: identity not found"),
        call("provision", {"worker": "W1", "systems": ["email", "vpn"], "pre_start": True}, ok=False,
             error="PROVISION_FAILED: worker already started"),
        call("provision", {"worker": "W1", "systems": ["vpn"], "directory": "external"}, ok=False,
             error="POLICY: system not allowed"),
        call("provision", {"worker": "W1", "systems": ["vpn"], "directory": "external"}, ok=False,
             error="POLICY: system not allowed"),
        call("provision", {"worker": "W1", "systems": ["slack"], "directory": "external"}),
    ]
    (c,) = attribute(events).contrasts
    assert c.failed is events[0] and c.worked is events[-1]
    assert c.changed_params == ("directory", "systems")


def test_a_call_the_user_objected_to_is_not_a_fix():
    events = [
        call("post_message", {"channel": "#general"}, ok=False, error="channel_not_found"),
        call("post_message", {"channel": "C0100GEN1"}),
        said("No! That was meant for Omar privately", kind="feedback", sentiment="negative"),
    ]
    attribution = attribute(events)
    assert attribution.contrasts == []
    assert list(attribution.labels.values()) == ["failed", "objected"]


def test_a_call_that_worked_and_that_the_user_rejected_at_once_is_not_a_fix():
    """The user's next message undoes it ("No, that now says 0.8 a hectare"): its change is no lesson;
    what the agent did after the objection is."""
    events = [
        call("log_spray", {"field": "long-meadow", "rate": 0.8, "rate_unit": "L/acre"}, ok=False,
             error="Application record invalid"),
        said("It may not like the unit field; leaving it out.", kind="llm_reasoning"),
        call("log_spray", {"field": "long-meadow", "rate": 0.8}, result={"record_id": "SPR-1", "rate_unit": "L/ha"}),
        said("No, that now says 0.8 a hectare. It was 0.8 an acre, so about 2 a hectare. Fix it."),
        call("amend_spray", {"record_id": "SPR-1", "rate": 1.98, "rate_unit": "L/ha"}),
    ]
    attribution = attribute(events)
    assert attribution.labels[events[2].event_id] == "objected"
    assert [(c.failed, c.worked) for c in attribution.contrasts] == [(events[0], events[4])]
    lessons = review_by_rules(traj(goal="Record the spraying on Long Meadow"), events).lessons
    assert lessons and not any("leave out" in lesson.advice for lesson in lessons)


def test_a_users_answer_or_thanks_after_a_call_is_no_objection():
    for text in ("No problem, thanks!", "Updated the encoder to that URL.", "Great, that's the one."):
        events = [
            call("post_message", {"channel": "#general"}, ok=False, error="channel_not_found"),
            call("post_message", {"channel": "C0100GEN1"}),
            said(text),
        ]
        attribution = attribute(events)
        assert [(c.failed, c.worked) for c in attribution.contrasts] == [(events[0], events[1])], text


def test_a_value_nested_in_a_structured_parameter_is_traced_to_its_source():
    events = [
        call("http_request", {"url": "/orders", "headers": {}}, ok=False, error="401 Unauthorized"),
        call("get_token", {"scope": "orders"}, result={"access_token": "tok-9f2c"}),
        call("http_request", {"url": "/orders", "headers": {"Authorization": "Bearer tok-9f2c"}}),
    ]
    (c,) = attribute(events).contrasts
    assert (c.kind, c.prerequisite) == ("order", "get_token")


def test_sigils_survive_generalization():
    assert literal_values([{"channel": "#design", "user": "@omar", "city": "Lyon"}]) == {
        "#design": "#<channel>", "@omar": "@<user>", "Lyon": "<city>"
    }


def test_example_values_of_the_fix_are_left_out_of_matching_but_what_to_avoid_stays():
    from chalicelib.domain.generalize import without_examples

    advice = (f"set `branch` to a value like `hotfix/login-500`, not a value like `main`; "
              f"set `amount` to {describe_value(1999)}, not {describe_value(19.99)}")
    out = without_examples(advice)
    assert "hotfix" not in out and "1999" not in out
    assert "`main`" in out and "19.99" in out and "a whole number" in out and "a decimal number" in out


def test_a_change_between_values_of_one_kind_says_how_they_differ():
    from chalicelib.domain.lesson import describe_param_change

    assert describe_param_change({"amount": 500.0}, {"amount": 50000}).startswith(
        "set `amount` to the value that failed multiplied by 100")
    assert describe_param_change({"ra": 210.8}, {"ra": 14.0533}).startswith("set `ra` to the value that failed divided by 15")
    assert describe_param_change({"quantity": 12}, {"quantity": 8}).startswith("set `quantity` to a lower value")
    assert describe_param_change({"systems": ["email", "vpn"]}, {"systems": ["vpn", "slack"]}) == (
        "in `systems`, include `slack` and leave out `email`")
    # values of different kinds keep their patterns
    assert "a decimal number" in describe_param_change({"amount": 19.99}, {"amount": 1999})


def test_a_call_is_the_same_call_whatever_the_order_of_its_parameters_and_not_when_a_value_differs():
    from chalicelib.domain.attribution import call_key

    a = ev("a", tool="search", params={"q": "x", "limit": 10, "opts": {"b": 1, "a": [1, 2]}})
    b = ev("b", tool="search", params={"opts": {"a": [1, 2], "b": 1}, "limit": 10, "q": "x"})
    assert call_key(a) == call_key(b)
    # JSON tells these apart: 1 and 1.0 and True are different calls, as are another tool and no params
    others = [ev("c", tool="search", params={"q": "x", "limit": 10.0, "opts": {"b": 1, "a": [1, 2]}}),
              ev("d", tool="search", params={"q": "x", "limit": True, "opts": {"b": 1, "a": [1, 2]}}),
              ev("e", tool="lookup", params={"q": "x", "limit": 10, "opts": {"b": 1, "a": [1, 2]}}),
              ev("f", tool="search"), ev("g", tool="search", params="not an object")]
    keys = {call_key(e) for e in [a, *others]}
    assert len(keys) == 5 and call_key(others[-1]) == call_key(others[-2]) == "search:{}"


def test_a_calls_key_is_computed_once_per_event():
    """Ingest's anomaly check reads the same cached events on every append: their keys are kept."""
    from datetime import datetime

    from chalicelib.domain.attribution import call_key

    e = ev("a", tool="search", params={"when": datetime(2026, 1, 2, 3, 4, 5)})
    key = call_key(e)
    assert key == 'search:{"when": "2026-01-02 03:04:05"}'  # values JSON cannot write, as str() writes them
    e.content["params"]["when"] = "changed"  # events are never changed once built: the key is not recomputed
    assert call_key(e) is key


def test_of_replacements_acting_on_as_many_of_the_failed_calls_values_the_last_one_did_the_job():
    """An agent looks before it acts: the look and the call that replaced the failing one share
    the same value (the station), and the lesson is the call that did the failed one's job."""
    events = [
        call("upload_readings", {"station_id": "WS-1", "readings": "r.csv"}, ok=False, error="INGEST_REJECTED: too old"),
        call("get_station", {"station_id": "WS-1"}, result={"live_window_days": 7}),
        call("upload_backfill", {"station_id": "WS-1", "file": "dump.csv"}),
    ]
    (c,) = attribute(events).contrasts
    assert (c.kind, c.worked.tool) == ("swap", "upload_backfill")


def test_the_prerequisite_is_what_the_agent_did_between_its_repeated_looks():
    scale = {"fleet": "us-east", "desired": 4}
    events = [
        call("gs_fleet_scale", scale, ok=False, error="ScaleRejected: fleet is not in a scalable state"),
        call("gs_fleet_describe", {"fleet": "us-east"}, result={"sessions": 212}),
        call("gs_fleet_drain", {"fleet": "us-east"}, result={"draining": True}),
        call("gs_fleet_describe", {"fleet": "us-east"}, result={"sessions": 0}),
        call("gs_fleet_scale", scale),
    ]
    (c,) = attribute(events).contrasts
    assert (c.kind, c.prerequisite) == ("order", "gs_fleet_drain")


def test_a_look_repeated_until_it_showed_the_way_is_the_prerequisite_when_nothing_else_was_done():
    scale = {"fleet": "eu-west", "desired": 8}
    events = [
        call("gs_fleet_scale", scale, ok=False, error="ScaleRejected: fleet is not in a scalable state"),
        call("gs_fleet_describe", {"fleet": "eu-west"}, result={"status": "ACTIVATING"}),
        call("gs_fleet_describe", {"fleet": "eu-west"}, result={"status": "ACTIVE"}),
        call("gs_fleet_scale", scale),
    ]
    (c,) = attribute(events).contrasts
    assert (c.kind, c.prerequisite) == ("order", "gs_fleet_describe")


def test_a_tool_the_user_objected_to_is_not_the_replacement_of_the_call_it_followed():
    pr = {"repo": "oss/cli-tools", "pr": 302}
    events = [
        call("repo_pr_merge", pr, ok=False, error="Merge blocked: required status checks have not succeeded"),
        call("repo_pr_checks", pr, result={"workflow_runs": [{"status": "action_required"}]}),
        call("repo_pr_checks", pr, result={"workflow_runs": [{"status": "action_required"}]}),
        said("Polled for an hour; the run was waiting for us to let it start.", kind="feedback", sentiment="negative"),
    ]
    assert attribute(events).contrasts == []
    lessons = review_by_rules(traj(outcome="failure", tools=["repo_pr_merge", "repo_pr_checks"]), events).lessons
    assert [l.kind for l in lessons] == ["negative_feedback"]


def test_values_that_had_already_failed_are_not_the_fix_what_came_after_them_is():
    permit = {"account": "R-70233", "zone": "A"}
    events = [
        call("issue_permit", permit | {"plate": "HN73 KRV"}, ok=False, error="PERMIT_DENIED: vehicle not found on resident account"),
        call("issue_permit", permit | {"plate": "HN73KRV"}, ok=False, error="PERMIT_DENIED: vehicle not found on resident account"),
        call("lookup_vehicle", {"plate": "HN73KRV"}, result={"found": True, "account": None}),
        call("add_vehicle_to_account", {"account": "R-70233", "plate": "HN73KRV"}, result={"linked": True}),
        call("issue_permit", permit | {"plate": "HN73KRV"}, result={"permit_id": "PM-1"}),
    ]
    (c,) = attribute(events).contrasts
    assert (c.kind, c.prerequisite) == ("order", "add_vehicle_to_account")
