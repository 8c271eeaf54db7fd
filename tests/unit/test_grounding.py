"""The grounding checks: what a weak model writes that must never be stored, and what must pass."""
from __future__ import annotations

import pytest

from chalicelib.domain import grounding as g
from chalicelib.domain.review import review_by_rules

from tests.support.builders import call, said, traj


def weather():
    t = traj(goal="Will it rain tomorrow in my city?")
    events = [
        said("Will it rain tomorrow?"),
        call("get_weather", {"date": "tomorrow"}, ok=False, error="MissingParameter: city is required"),
        call("ask_user", {"question": "Which city?"}, result="Lyon"),
        call("get_weather", {"date": "tomorrow", "city": "Lyon"}, result="rain"),
    ]
    return t, events


def deploy():
    t = traj(goal="Deploy the billing service to staging", tools=["run_shell"], task_type="devops")
    events = [
        call("run_shell", {"cmd": "kubectl apply -f billing.yaml"}, ok=False, error="Forbidden: namespace default is read-only"),
        call("run_shell", {"cmd": "kubectl apply -f billing.yaml"}, ok=False, error="Forbidden: namespace default is read-only"),
        call("run_shell", {"cmd": "kubectl apply -f billing.yaml -n staging"}, result="configured"),
        said("no, never deploy on a Friday", kind="feedback", sentiment="negative"),
    ]
    return t, events


GOOD = dict(
    situation="A weather question where the user named no city.",
    lesson="`get_weather` fails with MissingParameter unless `city` is set.",
    advice="Call `ask_user` for the city before `get_weather` when the user has not named one.",
    error_class="MissingParameter",
)


def check(**changes):
    t, events = weather()
    fields = GOOD | changes
    return g.check_lesson(fields["situation"], fields["lesson"], fields["advice"], fields["error_class"], g.evidence(t, events),
                          fields.get("action", ""), fields.get("result", ""))


def test_a_lesson_naming_the_trajectorys_tools_error_and_fix_passes():
    assert check() is None
    assert check(error_class=None) is None  # no error claimed: nothing to support


@pytest.mark.parametrize("field", ["situation", "lesson", "advice"])
@pytest.mark.parametrize("junk", ["1,", "2,", "", "   ", "ok.", "The city is not specified", "The city is not specified.",
                                  "N/A", "Unknown.", "city: unknown"])
def test_vacuous_text_in_any_field_is_rejected(field, junk):
    assert check(**{field: junk}) == g.VACUOUS


@pytest.mark.parametrize("advice", [
    "Weather is an important thing for a city and its people.",
    "The `get_weather` tool returned rain for the city.",
    "It rained in the city that day, as the forecast said.",
])
def test_advice_without_anything_to_do_is_rejected(advice):
    assert check(advice=advice) == g.NO_ACTION


@pytest.mark.parametrize("text", [
    "book a flight with a 3-letter code, book a flight with a 3-letter code, book a flight with a 3-letter code",
    "Call get_weather_weather_weather_weather_weather_weather for the city",
    "city city city city city city city get_weather",
])
def test_looping_text_is_rejected(text):
    assert check(advice=text) == g.REPETITIVE


def test_the_same_words_in_two_fields_are_rejected():
    assert check(lesson=GOOD["advice"]) == g.REPETITIVE


@pytest.mark.parametrize("advice", [
    "Call `lookup_city` before `get_weather` when the user has not named one.",  # a tool the trajectory never had
    "Call get_forecast_v2 with the city before anything else.",  # the same, without backticks
    "Call `ask_user` before `get_weather`, then pass \"Paris\" as the city.",  # a value it never had
])
def test_tools_identifiers_and_values_outside_the_trajectory_are_rejected(advice):
    assert check(advice=advice) == g.OUTSIDE_TRAJECTORY


def test_the_examples_lesson_copied_onto_another_trajectory_is_rejected():
    t, events = deploy()
    ev = g.evidence(t, events)
    assert g.check_lesson(GOOD["situation"], GOOD["lesson"], GOOD["advice"], GOOD["error_class"], ev) == g.OUTSIDE_TRAJECTORY


def test_a_lesson_naming_nothing_of_the_trajectory_is_rejected():
    assert check(situation="Some request came in from someone.", lesson="Requests need care and a plan.",
                 advice="Always plan before you act on a request.") == g.UNGROUNDED


@pytest.mark.parametrize("error_class", ["Timeout", "RateLimited", "PermissionDenied"])
def test_an_error_the_trajectory_does_not_show_is_rejected(error_class):
    assert check(error_class=error_class) == g.UNSUPPORTED_ERROR


def test_an_error_claimed_on_a_trajectory_without_failures_is_rejected():
    t = traj()
    events = [call("get_weather", {"city": "Lyon", "date": "tomorrow"}, result="MissingParameter handled")]
    ev = g.evidence(t, events)
    assert g.check_lesson(GOOD["situation"], GOOD["lesson"], "Call `get_weather` with `city` set.", "MissingParameter", ev) \
        == g.UNSUPPORTED_ERROR


def test_placeholders_and_generalized_values_count_as_the_trajectorys():
    assert check(advice="Call `ask_user` for <city> before `get_weather(city=<city>, date=<date>)`.") is None
    assert check(advice="Call `get_weather` with \"<city>\" once `ask_user` has given it.") is None


@pytest.mark.parametrize("scenario", [weather, deploy])  # recovery; blind retry and user feedback
def test_every_lesson_of_the_rules_passes(scenario):
    t, events = scenario()
    review = review_by_rules(t, events)
    assert review.lessons
    ev = g.evidence(t, events)
    for d in review.lessons:
        assert g.check_lesson(d.situation, d.lesson, d.advice, d.error_class, ev, d.action, d.result) is None, d


def test_a_lesson_may_replace_the_rules_only_naming_every_tool_they_name():
    assert g.covers(("get_weather", "ask_user"), ("ask_user", "get_weather"))
    assert g.covers(("Get_Weather", "ask_user", "x"), ("get_weather",))
    assert not g.covers(("get_weather",), ("get_weather", "ask_user"))


def test_a_lesson_replacing_the_rules_names_every_tool_and_parameter_their_advice_names():
    rule = "Call `ask_user` before `get_weather` and pass what it returns as `city`."
    tools = ("get_weather", "ask_user")
    assert g.covers(tools, tools, "Ask the user with ask_user, then call get_weather with the city.", rule)
    assert g.covers(tools, tools, "Use `ask_user` first; give `get_weather` its `City`.", rule)
    # grounded, names both tools, but drops the parameter the rules' fix is about
    assert not g.covers(tools, tools, "Call ask_user before get_weather.", rule)
    assert not g.covers(tools, tools, "Ask for the cities first with ask_user, then get_weather.", rule)
