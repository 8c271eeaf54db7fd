from dataclasses import replace

import pytest

from chalicelib.domain.distill import written_keeping
from chalicelib.domain.generalize import generalize, is_kind_word
from chalicelib.domain.lesson import error_class
from chalicelib.domain.review import review_by_rules

from tests.support.builders import call, said, traj


def test_a_failure_fixed_by_calling_another_tool_first_teaches_the_order():
    events = [
        call("get_weather", {"date": "tomorrow"}, ok=False, error="MissingParameter: city is required"),
        call("ask_user", {"question": "Which city?"}, result="Paris"),
        call("get_weather", {"date": "tomorrow", "city": "Paris"}, result="sunny"),
    ]
    review = review_by_rules(traj(), events)
    assert [l.kind for l in review.lessons] == ["recovery"]
    lesson = review.lessons[0]
    assert "Call `ask_user` before `get_weather`" in lesson.advice
    assert "city is required" in lesson.advice
    assert set(lesson.tools) == {"get_weather", "ask_user"}


def test_a_failure_fixed_by_changing_a_parameter_names_the_parameter():
    events = [
        call("search_flights", {"from": "Paris", "date": "2026-05-01"}, ok=False, error="ValueError: airport code expected"),
        call("search_flights", {"from": "CDG", "date": "2026-05-01"}, result=["AF12"]),
    ]
    lesson = review_by_rules(traj(tools=["search_flights"]), events).lessons[0]
    assert lesson.kind == "recovery"
    assert "`from`" in lesson.advice and "CDG" in lesson.advice
    assert "ValueError" in lesson.lesson


def test_a_failure_fixed_by_another_tool_alone_teaches_the_swap():
    events = [
        call("web_search", {"q": "EUR USD"}, ok=False, error="TimeoutError: upstream"),
        call("fx_rate", {"pair": "EURUSD"}, result=1.08),
    ]
    lesson = review_by_rules(traj(), events).lessons[0]
    assert lesson.advice.startswith("Use `fx_rate` instead of `web_search`")


def test_identical_failures_teach_not_to_retry_blindly():
    events = [call("db_query", {"sql": "select 1"}, ok=False, error="PermissionError: denied") for _ in range(3)]
    review = review_by_rules(traj(outcome="failure"), events)
    assert [l.kind for l in review.lessons] == ["blind_retry"]
    assert review.wasted_calls == 3 and review.effective_steps == []
    assert "Do not retry `db_query` with the same parameters" in review.lessons[0].advice


def test_a_transient_error_that_passes_on_identical_retry_teaches_nothing():
    events = [call("api", {"x": 1}, ok=False, error="503 busy"), call("api", {"x": 1})]
    assert review_by_rules(traj(), events).lessons == []


def test_negative_feedback_points_at_the_step_before_it():
    events = [
        call("book_table", {"time": "19:00"}),
        said("No, I said no restaurants near the station", kind="feedback", sentiment="negative"),
    ]
    lesson = review_by_rules(traj(), events).lessons[0]
    assert lesson.kind == "negative_feedback"
    assert "book_table" in lesson.advice and "no restaurants near the station" in lesson.advice


def test_a_clean_success_yields_no_lesson_and_says_why():
    review = review_by_rules(traj(), [call("get_weather", {"city": "Paris"})])
    assert review.lessons == [] and review.notes


def test_the_same_input_always_gives_the_same_lessons():
    events = [call("a", {"k": 1}, ok=False, error="KeyError: k"), call("a", {"k": 2})]
    first = review_by_rules(traj(), events)
    second = review_by_rules(traj(), list(reversed(events)))  # order comes from seq, not the list
    assert first.lessons == second.lessons


def test_error_class_prefers_exception_names_then_http_status():
    assert error_class(call("t", ok=False, error="ValueError: bad")) == "ValueError"
    assert error_class(call("t", ok=False, error="got HTTP 404 from upstream")) == "404"
    assert error_class(call("t", ok=False, error={"type": "RateLimit", "message": "slow down"})) == "RateLimit"


def test_generalize_replaces_ids_and_numbers():
    assert generalize("order 12345 of user 9f8e7d6c5b4a failed after 3.5s") == "order <n> of user <id> failed after <n>s"


def test_a_long_text_parameter_is_described_by_its_difference():
    events = [
        call("sql_query", {"query": "SELECT * FROM events WHERE user_id = 42"}, ok=False, error="QueryTimeout: 30s"),
        call("sql_query", {"query": "SELECT * FROM events WHERE user_id = 42 LIMIT 100"}),
    ]
    lesson = review_by_rules(traj(tools=["sql_query"]), events).lessons[0]
    assert "in `query`, add `LIMIT 100` at the end" in lesson.advice


def test_a_structured_parameter_is_described_by_its_keys():
    events = [
        call("http_post", {"url": "/pay", "headers": {"Auth": "x"}}, ok=False, error="409 duplicate request"),
        call("http_post", {"url": "/pay", "headers": {"Auth": "x", "Idempotency-Key": "k1"}}),
    ]
    lesson = review_by_rules(traj(tools=["http_post"]), events).lessons[0]
    assert "include `Idempotency-Key` in `headers`" in lesson.advice


def test_a_prerequisite_that_feeds_a_parameter_is_named_with_it():
    events = [
        call("search_flights", {"from": "Paris"}, ok=False, error="InvalidAirport: IATA code expected"),
        call("lookup_airport", {"city": "Paris"}, result="CDG"),
        call("search_flights", {"from": "CDG"}),
    ]
    lesson = review_by_rules(traj(tools=["search_flights", "lookup_airport"]), events).lessons[0]
    assert lesson.advice.startswith("Call `lookup_airport` before `search_flights` and pass what it returns as `from`")


def test_snake_case_error_codes_are_error_classes_so_literals_stay_out_of_the_key():
    a = review_by_rules(traj(), [call("post_message", {"channel": "@omar"}, ok=False, error="channel_not_found: '@omar'"), call("send_dm", {"user": "U1"})])
    b = review_by_rules(traj(), [call("post_message", {"channel": "@lea"}, ok=False, error="channel_not_found: '@lea'"), call("send_dm", {"user": "U2"})])
    assert a.lessons[0].error_class == "channel_not_found"
    assert a.lessons[0].fingerprint == b.lessons[0].fingerprint


def test_a_fix_found_after_blind_retries_makes_the_do_not_retry_lesson_redundant():
    events = [
        call("git_push", {"branch": "main"}, ok=False, error="Protected: branch is protected"),
        call("git_push", {"branch": "main"}, ok=False, error="Protected: branch is protected"),
        call("create_pull_request", {"branch": "main"}),
    ]
    review = review_by_rules(traj(tools=["git_push", "create_pull_request"]), events)
    assert [l.kind for l in review.lessons] == ["recovery"]
    assert review.wasted_calls == 2


def test_long_free_text_stays_in_the_situation_while_short_literals_are_hidden():
    events = [
        call("post_message", {"channel": "#design", "text": "the new mockups are in Figma"}, ok=False, error="channel_not_found"),
        call("list_channels", {}, result=[{"id": "C42", "name": "design"}]),
        call("post_message", {"channel": "C42", "text": "the new mockups are in Figma"}),
    ]
    lesson = review_by_rules(traj(goal="Tell #design that the new mockups are in Figma"), events).lessons[0]
    assert "Tell #<channel> that the new mockups are in Figma" in lesson.situation


def _protected_push(branch_fix: str, goal: str = "Push this hotfix straight to release/2.x"):
    events = [
        call("git_push", {"remote": "origin", "branch": "release/2.x"}, ok=False, error="Protected: branch 'release/2.x' is protected"),
        call("git_push", {"remote": "origin", "branch": branch_fix}),
    ]
    return traj(goal=goal, tools=["git_push"]), events


def test_literals_are_generalized_and_remembered_only_as_digests():
    t, events = _protected_push("hotfix/login-500")
    (lesson,) = review_by_rules(t, events).lessons
    assert "<branch>" in lesson.situation and "'release/2.x'" not in lesson.situation
    assert lesson.example == "Push this hotfix straight to <branch>"
    assert set(lesson.literals.values()) == {"<branch>"} and len(lesson.literals) == 2  # "origin" is a word: kept
    assert not {"release/2.x", "hotfix/login-500"} & set(lesson.literals)  # no value in clear
    other_tenant = review_by_rules(traj(goal=t.goal, tools=["git_push"], tenant_id="t2"), events).lessons[0]
    assert not set(other_tenant.literals) & set(lesson.literals)  # salted per tenant


def test_a_lesson_written_again_keeps_the_literals_asked_for_and_stays_the_same_lesson():
    t, events = _protected_push("hotfix/login-500")
    (lesson,) = review_by_rules(t, events).lessons
    for digest in lesson.literals:  # whatever is kept, it is the same lesson
        kept = written_keeping(lesson, {digest}, t.tenant_id)
        assert (kept.fingerprint, kept.situation_key) == (lesson.fingerprint, lesson.situation_key)
    shared = set(lesson.literals) & set(review_by_rules(*_protected_push("fix/footer-link")).lessons[0].literals)
    special = written_keeping(lesson, shared, t.tenant_id)  # what two pushes to release/2.x have in common: "release/2.x"
    assert "branch 'release/2.x' is protected" in special.situation and "straight to release/2.x" in special.example
    # the fix's value is only an example, as a kind of value: one run's value is no part of the advice
    assert "`hotfix/login-<n>`" in special.advice and "hotfix/login-500" not in special.advice
    assert special.literals == lesson.literals
    assert written_keeping(lesson, (), t.tenant_id) == lesson


def test_feedback_lessons_keep_their_identity_when_written_with_kept_literals():
    events = [
        call("git_push", {"branch": "release/2.x", "force": True}, ok=False, error="Protected: branch 'release/2.x' is protected"),
        said("Never force-push to release/2.x!", kind="feedback", sentiment="negative"),
    ]
    t = traj(tools=["git_push"])
    (lesson,) = [d for d in review_by_rules(t, events).lessons if d.kind == "negative_feedback"]
    special = written_keeping(lesson, set(lesson.literals), t.tenant_id)
    assert "Never force-push to release/2.x!" in special.advice and "<branch>" in lesson.advice
    assert (special.fingerprint, special.situation_key) == (lesson.fingerprint, lesson.situation_key)


def _void_instead_of_refund(note: str):
    return [
        said("Table 12 sent back the ribeye and they are still eating, take it off the bill"),
        call("pos_refund", {"check": "CHK-4410", "item": "ribeye"}, ok=False, error="NOT_PERMITTED: operation not allowed"),
        call("pos_check_get", {"check": "CHK-4410"}, result={"status": "open", "paid": 0}),
        said(note, kind="llm_reasoning"),
        call("pos_item_void", {"check": "CHK-4410", "item": "ribeye"}, result={"total": 64.5}),
    ]


def test_a_recovery_lesson_keeps_the_note_that_found_the_fix():
    note = "The check is open and unpaid: there is nothing to refund. Void the item instead."
    events = _void_instead_of_refund(note)
    review = review_by_rules(traj(goal="Take the steak off table 12's bill", tools=["pos_refund", "pos_item_void"]), events)
    (lesson,) = [l for l in review.lessons if l.kind == "recovery"]
    assert "open and unpaid" in lesson.advice and "open and unpaid" in lesson.lesson
    assert "CHK-4410" not in lesson.advice  # the note's literals are generalized like the rest


def _fee_after_a_wrong_guess(guess: str, user: str):
    return [
        said("Schedule the rough plumbing inspection for BP-2026-0388, any day next week."),
        call("schedule_inspection", {"permit": "BP-2026-0388", "date": "2026-05-04"}, ok=False,
             error="INSPECTION_NOT_SCHEDULABLE: permit not in ready state"),
        said(guess, kind="llm_reasoning"),
        said(user),
        call("pay_fee", {"permit": "BP-2026-0388", "amount": 95.0}, result={"paid": True, "status": "ready"}),
        call("schedule_inspection", {"permit": "BP-2026-0388", "date": "2026-05-04"}, result={"inspection_id": "IN-77452"}),
    ]


def test_a_user_correction_after_the_agents_guess_is_quoted_with_it():
    # the agent's guess (revised drawings) is the look-alike task's fix; the user's words are why the fee was paid
    events = _fee_after_a_wrong_guess(
        "The permit isn't ready; maybe the plans need updating. I'll upload the current drawings again.",
        "The drawings haven't changed. We failed the first plumbing check and there's a re-inspection charge outstanding, pay that.",
    )
    t = traj(goal="Schedule the plumbing inspection", tools=["schedule_inspection", "pay_fee"])
    (lesson,) = [l for l in review_by_rules(t, events).lessons if l.kind == "recovery"]
    assert "re-inspection charge outstanding" in lesson.lesson and "re-inspection charge outstanding" in lesson.advice
    assert lesson.advice.index("plans need updating") < lesson.advice.index("the user:") < lesson.advice.index("re-inspection")


def test_a_long_correction_keeps_what_it_asks_for_at_its_end():
    # the instruction closes a long reply; a cut at the limit kept the complaint and lost it
    correction = (
        "Stop resubmitting that one. Look at the date on the permit, the last check failed in March. "
        "The office refers anything with an open failure no matter how complete the drawings are, it has been "
        "like that since they changed the booking system in the spring and it catches somebody every other week, "
        "usually on a Friday when nobody is around to sort it out. Just pay the re-inspection charge first."
    )
    assert len(correction) > 240
    events = _fee_after_a_wrong_guess("The permit isn't ready; maybe the plans need updating.", correction)
    (lesson,) = [l for l in review_by_rules(traj(tools=["schedule_inspection", "pay_fee"]), events).lessons if l.kind == "recovery"]
    assert "Just pay the re-inspection charge first." in lesson.advice
    assert "Stop resubmitting that one." in lesson.advice and "usually on a Friday" not in lesson.advice


def test_the_users_answer_to_the_agents_question_is_not_taken_for_a_correction():
    events = _fee_after_a_wrong_guess(
        "A failed inspection adds a re-inspection charge; ask the user whether to pay it by card.",
        "Yes, charge the card on file for the whole amount.",
    )
    (lesson,) = [l for l in review_by_rules(traj(tools=["schedule_inspection", "pay_fee"]), events).lessons if l.kind == "recovery"]
    assert "adds a re-inspection charge" in lesson.advice
    assert "card on file" not in lesson.advice and "the user:" not in lesson.advice


def test_a_note_that_says_nothing_of_its_own_is_left_out():
    events = _void_instead_of_refund("`pos_refund` failed (NOT_PERMITTED: operation not allowed). Trying again.")
    (lesson,) = [l for l in review_by_rules(traj(), events).lessons if l.kind == "recovery"]
    assert "What showed it" not in lesson.advice


def test_the_task_example_holds_the_users_request_when_it_says_more_than_the_goal():
    events = _void_instead_of_refund("The check is open and unpaid: void the item instead.")
    lesson = review_by_rules(traj(goal="Take the steak off table 12's bill"), events).lessons[0]
    assert "still eating" in lesson.example
    same = [said("Take the steak off table 12's bill"), *events[1:]]
    assert "(" not in review_by_rules(traj(goal="Take the steak off table 12's bill"), same).lessons[0].example


def test_the_users_objection_is_quoted_whole_up_to_a_long_sentence():
    text = ("Half the visitors still land on the old server because the old record was never removed; "
            "delete the old A record before adding the new one next time.")
    events = [call("dns_record_upsert", {"name": "www"}), said(text, kind="feedback", sentiment="negative")]
    lesson = review_by_rules(traj(), events).lessons[0]
    assert "delete the old A record before adding the new one next time." in lesson.advice


def test_the_state_a_look_returned_before_the_fix_is_part_of_the_situation():
    events = _void_instead_of_refund("The check is open and unpaid: there is nothing to refund. Void the item instead.")
    (lesson,) = [l for l in review_by_rules(traj(), events).lessons if l.kind == "recovery"]
    assert 'Seen before the fix: "status open".' in lesson.situation
    plain = [e for e in events if e.tool != "pos_check_get"]
    (lesson,) = [l for l in review_by_rules(traj(), plain).lessons if l.kind == "recovery"]
    assert "Seen before" not in lesson.situation


@pytest.mark.parametrize("value, kind", [
    ("kinetic", True), ("pending_start", True), ("night shift", True), ("main", True),
    ("Paris", False), ("USD", False), ("A4", False), ("W-90017", False), ("eu-arena", False), ("450", False),
])
def test_a_value_in_lowercase_letters_names_a_kind_and_anything_else_an_instance(value, kind):
    assert is_kind_word(value) is kind


def test_the_kind_of_task_a_value_names_stays_in_the_lesson_while_its_instances_are_hidden():
    events = [
        call("plate_reader_run", {"reader": "SR-04", "plate_id": "P-2231", "mode": "kinetic", "temperature_c": 37},
             ok=False, error="INSTRUMENT_NOT_READY: optical reference invalid"),
        call("plate_reader_set_chamber", {"reader": "SR-04", "temperature_c": 37}),
        call("plate_reader_run", {"reader": "SR-04", "plate_id": "P-2231", "mode": "kinetic", "temperature_c": 37}),
    ]
    t = traj(goal="Kinetic read of plate P-2231 on SR-04 at 37 degrees", tools=["plate_reader_run"])
    (lesson,) = review_by_rules(t, events).lessons
    assert lesson.example == "Kinetic read of plate <plate_id> on <reader> at <temperature_c> degrees"
    assert "Kinetic read" in lesson.situation and "SR-04" not in lesson.situation + lesson.advice
    # the look-alike task with the same tool and error in another mode is told apart by that word
    other = [call(e.tool, {**e.content["params"], "mode": "endpoint"}, ok=not e.failed, error=e.content.get("error"))
             for e in events]
    (look_alike,) = review_by_rules(replace(t, goal="Endpoint read of plate P-2231 on SR-04 at 37 degrees"), other).lessons
    assert look_alike.example != lesson.example and look_alike.fingerprint == lesson.fingerprint


def _purge_with_the_rule_stated(note: str, *, purge_ok: bool = True, feedback: str = "positive"):
    return [
        said("Delete KYC files past retention for accounts closed before 2019."),
        said(note, kind="llm_reasoning"),
        call("search_records", {"type": "kyc", "account_closed_before": "2019-01-01"}, result={"count": 6120, "batch": "B-2230"}),
        call("check_legal_hold", {"batch": "B-2230"}, result={"held": ["CUST-440981"]}),
        call("purge_records", {"batch": "B-2230", "exclude_customers": ["CUST-440981"]}, ok=purge_ok,
             **({"result": {"purged": 6098}} if purge_ok else {"error": "PURGE_ABORTED: batch contains protected records"})),
        said("Good." if feedback == "positive" else "You deleted the wrong batch.", kind="feedback", sentiment=feedback),
    ]


RULE = "Anything under a legal hold must survive, and a single held record aborts the whole purge; check holds first and exclude them."


def test_a_task_done_right_the_first_time_teaches_the_rule_the_agent_stated_before_acting():
    t = traj(goal="Delete closed-account KYC files past retention", tools=["search_records", "check_legal_hold", "purge_records"])
    review = review_by_rules(t, _purge_with_the_rule_stated(RULE))
    (lesson,) = review.lessons
    assert lesson.kind == "stated_rule"
    assert "legal hold must survive" in lesson.advice and "legal hold must survive" in lesson.lesson
    assert lesson.advice.index("`check_legal_hold`") < lesson.advice.index("`purge_records`")
    assert "`purge_records` (with `batch`, `exclude_customers`)" in lesson.advice  # what it was called with, not the values
    assert set(lesson.tools) == {"search_records", "check_legal_hold", "purge_records"}
    assert "B-2230" not in lesson.advice  # literals generalized like every lesson's
    assert review_by_rules(t, _purge_with_the_rule_stated(RULE)).lessons[0].fingerprint == lesson.fingerprint


def test_a_question_the_agent_chose_to_ask_before_acting_is_a_rule_too():
    note = "Two batches match and the request doesn't say which; asking the user which one to purge."
    t = traj(tools=["search_records", "check_legal_hold", "purge_records"])
    (lesson,) = review_by_rules(t, _purge_with_the_rule_stated(note)).lessons
    assert lesson.kind == "stated_rule" and "asking the user which one" in lesson.advice


@pytest.mark.parametrize("case", ["failed call", "negative feedback", "task failed", "nothing of its own"])
def test_no_rule_is_taken_from_a_task_that_did_not_simply_go_right(case):
    note = {"nothing of its own": "Calling search_records, check_legal_hold, purge_records."}.get(case, RULE)
    events = _purge_with_the_rule_stated(note, purge_ok=case != "failed call",
                                         feedback="negative" if case == "negative feedback" else "positive")
    t = traj(outcome="failure" if case == "task failed" else "success", tools=["search_records", "check_legal_hold", "purge_records"])
    assert [l for l in review_by_rules(t, events).lessons if l.kind == "stated_rule"] == []


def _refiled(upload_again: dict):
    first = {"case": "2026-CV-01877", "file": "motion.pdf", "doc_type": "motion"}
    return [
        said("File the scanned motion in 2026-CV-01877."),
        call("efile_document_upload", first, result={"document_id": "D-55120", "text_layer": False}),
        call("efile_submit", {"case": "2026-CV-01877", "documents": ["D-55120"]}, ok=False,
             error="Filing rejected by clerk: document not accepted (E-214)"),
        call("efile_document_upload", first | upload_again, result={"document_id": "D-55121"}),
        call("efile_submit", {"case": "2026-CV-01877", "documents": ["D-55121"]}, result={"status": "submitted"}),
    ]


def test_a_prerequisite_called_again_differently_is_taught_by_how_it_was_called_the_second_time():
    t = traj(goal="File the motion", tools=["efile_document_upload", "efile_submit"])
    (ocr,) = review_by_rules(t, _refiled({"ocr": True})).lessons
    assert "set `ocr` to `true`" in ocr.advice and "`efile_document_upload`" in ocr.advice
    (sealed,) = review_by_rules(t, _refiled({"public_copy_of": "D-70001"})).lessons
    # two fixes behind the same rejection: two lessons, not one merged by their shared prerequisite
    assert ocr.fingerprint != sealed.fingerprint and "public_copy_of" in sealed.advice


def test_a_value_fix_explained_once_it_had_worked_keeps_that_explanation():
    events = [
        said("Set MSKU 884120-3 to 46 F for the pharma load."),
        call("set_setpoint", {"container": "MSKU8841203", "setpoint": 46}, ok=False,
             error="SETPOINT_REJECTED: value outside operating range for current mode"),
        call("set_setpoint", {"container": "MSKU8841203", "setpoint": 7.8}, result={"setpoint": 7.8}),
        said("That worked. The controller reads the setpoint in Celsius; the shipper's 46 was Fahrenheit.", kind="llm_reasoning"),
    ]
    (lesson,) = review_by_rules(traj(goal="Set the reefer for the pharma load", tools=["set_setpoint"]), events).lessons
    assert "reads the setpoint in Celsius" in lesson.advice


def test_the_explanation_after_the_fix_was_applied_to_every_item_is_kept():
    events = [
        call("register_player", {"player_id": "P-1", "team": "u10"}, ok=False, error="Registration refused by the league"),
        call("register_player", {"player_id": "P-1", "team": "u11"}, result={"registered": True}),
        call("register_player", {"player_id": "P-2", "team": "u11"}, result={"registered": True}),
        said("Born on 31 August, the day before the cut-off, so they are U11 this season.", kind="llm_reasoning"),
    ]
    (lesson,) = review_by_rules(traj(goal="Register the twins for the U10s", tools=["register_player"]), events).lessons
    assert "the day before the cut-off" in lesson.advice


def test_a_note_after_the_next_step_of_the_task_is_not_the_fixs_explanation():
    events = [
        call("register_player", {"player_id": "P-1", "team": "u10"}, ok=False, error="Registration refused by the league"),
        call("register_player", {"player_id": "P-1", "team": "u11"}, result={"registered": True}),
        call("order_kit", {"player_id": "P-1", "size": "S"}, result={"ordered": True}),
        said("Kit ordered in size small, it ships on Monday with the rest.", kind="llm_reasoning"),
    ]
    (lesson,) = review_by_rules(traj(goal="Register the player", tools=["register_player", "order_kit"]), events).lessons
    assert "Kit ordered" not in lesson.advice


def test_what_the_agent_checked_between_the_failure_and_the_fix_is_named_with_its_fields():
    # the same refusal has look-alikes (a driver out of hours, a driver without the endorsement):
    # what the agent looked at to find which is what to check next time
    events = [
        call("dispatch_load", {"load": "L-1", "driver": "D-GARY"}, ok=False, error="Dispatch refused (code D-17)"),
        call("get_driver_hours", {"driver": "D-GARY"}, result={"drive_remaining_h": 1.5, "duty_remaining_h": 3.0}),
        call("list_drivers", {"depot": "Leeds"}, result={"drivers": ["D-ANNA"]}),
        call("get_driver_hours", {"driver": "D-ANNA"}, result={"drive_remaining_h": 9.0, "duty_remaining_h": 11.0}),
        call("dispatch_load", {"load": "L-1", "driver": "D-ANNA"}, result={"dispatched": True}),
    ]
    (lesson,) = review_by_rules(traj(tools=["dispatch_load", "get_driver_hours", "list_drivers"]), events).lessons
    assert "Call `list_drivers` before `dispatch_load`" in lesson.advice
    assert "Checked before the fix: `get_driver_hours` (`drive_remaining_h`, `duty_remaining_h`)." in lesson.advice
    assert lesson.advice.count("get_driver_hours") == 1 and "Checked before the fix" in lesson.lesson


def test_a_fix_found_without_looking_names_no_check():
    events = [
        call("search_flights", {"from": "Paris"}, ok=False, error="ValueError: airport code expected"),
        call("search_flights", {"from": "CDG"}, result=["AF12"]),
    ]
    (lesson,) = review_by_rules(traj(tools=["search_flights"]), events).lessons
    assert "Checked" not in lesson.advice
