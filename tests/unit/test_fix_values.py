"""What a lesson keeps of the values its trajectory held, and what a merge keeps of each source's fix.

A lesson generalizes the instances of its task (what the user asked for, the values the calls
passed and got back) and keeps the rule: a number only an error, the agent's reasoning or the
user's complaint states ("divide by 15", "E-214", "7 days per request") is what the next task needs to know.
"""
from datetime import timedelta

import pytest

from chalicelib.domain.distill import ANOTHER_TASK, MAX_FIXES, advice_keeping, merge_into
from chalicelib.domain.generalize import generalize
from chalicelib.domain.lesson import trajectory_literals
from chalicelib.domain.review import review_by_rules

from tests.support.builders import T0, call, experience, said, traj

GOAL = "Schedule 300 s on the galaxy at RA 210.80 deg for 2 nights"


def telescope_events():
    return [
        said("Tonight, T1: 300 s in R band on the galaxy at RA 210.80°, 12 frames."),
        call("obs_schedule", {"scope": "T1", "ra": 210.8, "exposure_s": 300}, ok=False,
             error="SCHEDULE_REJECTED (E-214): target below horizon limit 30"),
        call("obs_resolve", {"coords": "210.80"}, result={"ra_hours": 14.0533, "alt_deg": 61.2}),
        said("The target is at 61.2 degrees. RA was given in degrees: divide by 15, so 14.0533 h; 7 of 9 catalogues do;"
             " 12 frames over 2 nights still fit.", kind="llm_reasoning"),
        call("obs_schedule", {"scope": "T1", "ra": 14.0533, "exposure_s": 300}, result={"id": "EXP-20011"}),
        said("Frames look great, all 12.", kind="feedback", sentiment="positive"),
    ]


@pytest.mark.parametrize("number, kept, why", [
    ("15", True, "only the agent's reasoning states it: the rule (divide by 15)"),
    ("214", True, "only the error states it: the error's code"),
    ("30", True, "only the error states it: the limit"),
    ("7", True, "only the agent's reasoning states it"),
    ("210.80", False, "the user gave it (and a call passed it as 210.8): an instance"),
    ("300", False, "a parameter of the calls: an instance"),
    ("14.0533", False, "a result the retry passed on: derived from this task's input"),
    ("61.2", False, "a result of a call: this task's state"),
    ("12", False, "what the user said (the request, the feedback)"),
    ("2", False, "the goal: the task itself"),
    ("99", False, "stated nowhere in the trajectory (a model inventing it): never kept"),
])
def test_a_number_stays_only_when_the_environment_or_the_agent_stated_it_and_the_task_did_not(number, kept, why):
    values = trajectory_literals(telescope_events(), GOAL)
    written = generalize(f"value {number} here", values)
    assert (written == f"value {number} here") is kept, why
    if not kept:
        assert "<" in written


def test_a_number_the_users_complaint_states_is_a_rule_and_its_tasks_own_numbers_stay_instances():
    """The user's negative feedback saying what was wrong ("only 7 days per request") states the
    rule the way an error does; what it repeats of the task (the 90 days asked for) is still the task's."""
    events = [
        said("Ozone for AQ-3310, the last 90 days please."),
        call("get_readings", {"station": "AQ-3310", "days": 90}, ok=False, error="RANGE_TOO_LARGE: requested range exceeds limit"),
        call("get_readings", {"station": "AQ-3310", "days": 90}, ok=False, error="RANGE_TOO_LARGE: requested range exceeds limit"),
        said("The API only gives 7 days per request; you had to ask in 7-day windows for the 90 days.", kind="feedback",
             sentiment="negative"),
    ]
    values = trajectory_literals(events, "Download 90 days of ozone for AQ-3310")
    assert generalize("ask in 7-day windows", values) == "ask in 7-day windows"
    assert generalize("for the 90 days", values) == "for the <days> days"  # the call passed it
    praise = [*events[:-1], said("Thanks, 7 charts done.", kind="feedback", sentiment="positive")]
    assert generalize("7 charts", trajectory_literals(praise, "Download 90 days of ozone for AQ-3310")) == "<n> charts"


def test_without_the_trajectory_every_number_is_generalized_as_before():
    assert generalize("divide by 15 after E-214") == "divide by <n> after E-<n>"
    assert generalize("divide by 15 after E-214", dict(trajectory_literals(telescope_events(), GOAL))) == \
        "divide by <n> after E-<n>"


def test_the_lesson_keeps_the_rule_it_learned_and_abstracts_the_task():
    events = telescope_events()
    (lesson,) = [d for d in review_by_rules(traj(goal=GOAL), events).lessons if d.kind == "recovery"]
    assert "divide by 15" in lesson.advice and "(E-214)" in lesson.advice
    assert "210.8" not in lesson.advice + lesson.lesson and "14.0533" not in lesson.advice + lesson.lesson
    assert "2 nights" not in lesson.example and "<n> nights" in lesson.example


def test_a_rewritten_wording_keeps_the_rule_numbers():
    from chalicelib.domain.distill import written_keeping

    (lesson,) = [d for d in review_by_rules(traj(goal=GOAL), telescope_events()).lessons if d.kind == "recovery"]
    again = written_keeping(lesson, {"not-a-digest"}, "t1")
    assert again.advice == lesson.advice and "divide by 15" in again.advice


TRAY = ('Call `printer_status` before `print_job_submit` and pass what it returns as `source`: calling '
        '`print_job_submit` first fails with "JOB_HELD: media mismatch". What showed it: "A3 sits in tray2 but the job goes to tray1.".')
LETTER = ('Call `printer_status` before `print_job_submit` and pass what it returns as `fit_to_page`, `media_size`: calling '
          '`print_job_submit` first fails with "JOB_HELD: media mismatch". What showed it: "No A4 on a US printer. Print on letter and scale.".')


def test_a_merge_keeps_the_other_tasks_fix_without_repeating_what_is_said():
    merged = advice_keeping(LETTER, TRAY)
    assert merged.startswith(LETTER) and merged.count(ANOTHER_TASK) == 1
    other = merged.split(ANOTHER_TASK)[1]
    assert "`source`" in other and "tray2" in other
    assert "JOB_HELD" not in other and "fails with" not in other  # the failure is said once
    assert other == 'Call `printer_status` before `print_job_submit` and pass what it returns as `source`: What showed it: "A3 sits in tray2 but the job goes to tray1.".'


@pytest.mark.parametrize("other, why", [
    (LETTER, "the same advice"),
    (LETTER.replace("US printer", "<site> printer"), "the same note with a literal generalized"),
    (LETTER.replace("a value like", "").replace("letter and scale", "letter and then scale"), "the same words"),
    ('Call `printer_status` before `print_job_submit` and pass what it returns as `media_size`: calling '
     '`print_job_submit` first fails with "JOB_HELD: media mismatch".', "names nothing new and quotes nothing new"),
])
def test_a_merge_adds_nothing_when_the_other_advice_says_nothing_new(other, why):
    assert advice_keeping(LETTER, other) == LETTER, why


def test_a_merge_adds_another_parameter_or_a_new_reason():
    names_more = LETTER.replace("`fit_to_page`, `media_size`", "`fit_to_page`, `media_size`, `duplex`")
    assert ANOTHER_TASK in advice_keeping(LETTER, names_more)
    new_reason = LETTER.replace("No A4 on a US printer. Print on letter and scale.", "Fresh toner cartridge was never primed today.")
    assert ANOTHER_TASK in advice_keeping(LETTER, new_reason)
    # values differ from task to task: not a new fix
    assert advice_keeping("When you call `pay`, set `amount` to a value like `19`.",
                          "When you call `pay`, set `amount` to a value like `25`.") == \
        "When you call `pay`, set `amount` to a value like `19`."
    assert advice_keeping("When you call `sql`, in `query`, add `LIMIT 20` at the end.",
                          "When you call `sql`, in `query`, add `LIMIT 200` at the end.") == \
        "When you call `sql`, in `query`, add `LIMIT 20` at the end."
    only_note = LETTER.replace("No A4 on a US printer. Print on letter and scale.", "The fork needs an approval first.")
    assert advice_keeping(LETTER, only_note) == f'{LETTER}{ANOTHER_TASK}What showed it: "The fork needs an approval first.".'


def test_an_advice_keeps_a_bounded_number_of_fixes():
    advice = LETTER
    for i in range(5):
        advice = advice_keeping(advice, LETTER.replace("`media_size`", f"`param_{i}`"))
    assert advice.count(ANOTHER_TASK) == MAX_FIXES - 1


def test_merging_two_tasks_fixed_differently_keeps_both_fixes_and_the_merge_is_stable():
    one = experience(sources=["tr1"], advice=LETTER, tools=["print_job_submit", "printer_status"])
    two = experience(experience_id="x2", sources=["tr2"], advice=TRAY, tools=["print_job_submit", "printer_status"])
    merged = merge_into(one, two, T0 + timedelta(days=1))
    assert "`source`" in merged.advice and "`fit_to_page`" in merged.advice and merged.support == 2
    three = experience(experience_id="x3", sources=["tr3"], advice=TRAY.replace("tray2", "tray3"),
                       tools=["print_job_submit", "printer_status"])
    assert merge_into(merged, three, T0 + timedelta(days=2)).advice == merged.advice  # nothing new: said once


def test_a_tool_given_up_for_a_look_keeps_what_the_agent_made_of_the_look():
    events = [
        call("ils_renew", {"patron": "29110004412", "item": "31110009001"}, ok=False, error="RENEWAL_DENIED: not allowed"),
        call("ils_item_get", {"item": "31110009001"}, result={"holds": 3, "copies": 2}),
        said("Three people are waiting for it: tell the patron, offer the hold queue or another copy.", kind="llm_reasoning"),
        call("ils_item_get", {"title": "The Overstory", "format": "ebook"}, result={"item": "E-4411"}),
        said("Later: the ebook copy was free so the patron took that one instead today.", kind="llm_reasoning"),
    ]
    (lesson,) = [d for d in review_by_rules(traj(), events).lessons if d.kind == "recovery"]
    assert lesson.advice.startswith("Use `ils_item_get` instead of `ils_renew`")
    assert "hold queue or another copy" in lesson.advice and "ebook" not in lesson.advice  # up to the next call only


def test_a_note_before_the_replacement_stays_the_one_kept():
    events = [
        call("pos_refund", {"check": "C-1", "item": "I-2"}, ok=False, error="NOT_PERMITTED: open check"),
        said("The check is still open and unpaid, so void the item instead of refunding it.", kind="llm_reasoning"),
        call("pos_item_void", {"check": "C-1", "item": "I-2"}, result={"voided": True}),
        said("Voided the item; now tell the guest the total went down accordingly.", kind="llm_reasoning"),
    ]
    (lesson,) = [d for d in review_by_rules(traj(), events).lessons if d.kind == "recovery"]
    assert "void the item instead of refunding" in lesson.advice and "tell the guest" not in lesson.advice
