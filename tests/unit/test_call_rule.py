"""A lesson's call rule is data: the rules reviewer states it, renders the advice's words from it,
and advise and credit read the rule, never the words."""
from __future__ import annotations

from dataclasses import replace

import pytest

from chalicelib.adapters.codec import experience_from_doc, rule_from_doc, rule_to_doc, to_doc
from chalicelib.domain.advise import Situation, evaluate, followed
from chalicelib.domain.call_rule import Argument, ArgumentKind, CallRule, RuleKind, rule_words
from chalicelib.domain.distill import draft_to_experience
from chalicelib.domain.review import review_by_rules
from chalicelib.domain.rule_reading import read_rule
from tests.support.builders import call, experience, said, traj

A, K = Argument, ArgumentKind

# a trajectory per form of rule the reviewer writes, and the rule it states
SCENARIOS = {
    "argument missing": (
        [call("get_weather", {"date": "2026-05-01"}, ok=False, error="MissingParameter: city is required"),
         call("get_weather", {"date": "2026-05-01", "city": "Lyon"}, result="rain")],
        CallRule(RuleKind.ARGUMENTS, "get_weather", (A(K.VALUE, "city", "a value like `Lyon`"),)),
    ),
    "value of another shape": (
        [call("charge", {"amount": 19.99}, ok=False, error="InvalidAmount: integer cents"),
         call("charge", {"amount": 1999})],
        CallRule(RuleKind.ARGUMENTS, "charge", (
            A(K.VALUE_SHAPE, "amount", "a whole number", "1999", "a decimal number", "19.99"),)),
    ),
    "argument to leave out and a structure to give": (
        [call("create_user", {"name": "Ana", "legacy": True}, ok=False, error="BadRequest: unknown field legacy"),
         call("create_user", {"name": "Ana", "profile": {"email": "a@x.io", "team": "ops"}})],
        CallRule(RuleKind.ARGUMENTS, "create_user", (
            A(K.FORBIDDEN, "legacy"), A(K.STRUCTURE, "profile", keys=("email", "team")))),
    ),
    "keys to include": (
        [call("http_post", {"url": "/pay", "headers": {"Auth": "x"}}, ok=False, error="409 duplicate request"),
         call("http_post", {"url": "/pay", "headers": {"Auth": "x", "Idempotency-Key": "k1"}})],
        CallRule(RuleKind.ARGUMENTS, "http_post", (A(K.KEYS, "headers", keys=("Idempotency-Key",)),)),
    ),
    "a tool to call first, feeding an argument": (
        [call("search_flights", {"from": "Paris"}, ok=False, error="InvalidAirport: IATA code expected"),
         call("lookup_airport", {"city": "Paris"}, result="CDG"),
         call("search_flights", {"from": "CDG"})],
        CallRule(RuleKind.CALL_FIRST, "search_flights", (A(K.FROM_RESULT, "from", other="lookup_airport"),), other_tool="lookup_airport"),
    ),
    "another tool instead": (
        [call("web_search", {"q": "EUR USD"}, ok=False, error="TimeoutError: upstream"),
         call("fx_rate", {"pair": "EURUSD"}, result=1.08)],
        CallRule(RuleKind.USE_INSTEAD, "web_search", other_tool="fx_rate"),
    ),
    "no blind retry": (
        [call("db_query", {"sql": "select 1"}, ok=False, error="PermissionError: denied") for _ in range(3)],
        CallRule(RuleKind.DO_NOT_RETRY, "db_query"),
    ),
    "an objection": (
        [call("book_table", {"time": "19:00"}),
         said("No, I said no restaurants near the station", kind="feedback", sentiment="negative")],
        CallRule(RuleKind.OBJECTED, "book_table"),
    ),
}


def lesson_of(events):
    tools = sorted({e.tool for e in events if e.tool})
    (draft,) = review_by_rules(traj(tools=tools, outcome="success"), events).lessons
    return draft


def as_words_say(rule: CallRule) -> CallRule:
    """What words can carry of a rule: shapes, not the examples of them; "pass what it returns as
    `x`" says that `x` is passed, not that its values are checked against what was returned."""
    def said(a: A) -> A:
        if rule.kind is RuleKind.CALL_FIRST and a.kind is K.FROM_RESULT:
            return A(K.MISSING, a.name)
        return replace(a, example=None, avoided_example=None)
    return replace(rule, arguments=tuple(said(a) for a in rule.arguments))


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_the_reviewer_states_each_lessons_rule_and_words_its_advice_from_it(name):
    events, rule = SCENARIOS[name]
    draft = lesson_of(events)
    assert replace(draft.rule, error=None) == rule
    if rule.kind is not RuleKind.OBJECTED:  # the error it is about, quoted
        assert draft.rule.error.startswith('"') and draft.rule.error[1:-1] in draft.advice
    assert draft.advice.startswith(rule_words(rule))


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_a_lesson_stored_before_rules_were_kept_reads_back_with_the_rule_the_reviewer_states(name):
    """The words of a stored lesson with no rule field are read once, by the codec; for the
    reviewer's words that gives the rule the reviewer now states (less the examples)."""
    events, rule = SCENARIOS[name]
    exp = draft_to_experience(lesson_of(events), traj(), traj().created_at)
    doc = to_doc(exp)
    assert replace(rule_from_doc(doc["rule"]), error=None) == rule
    del doc["rule"]
    assert experience_from_doc(doc).rule == as_words_say(rule)


def test_a_rule_read_back_from_the_codec_is_the_rule_written():
    rule = CallRule(RuleKind.CALL_FIRST, "submit", (A(K.MISSING, "doc_id"),), other_tool="upload",
                    first_arguments=(A(K.VALUE_SHAPE, "ocr", "`true`", None, "`false`"), A(K.NAMED, "q", words="in `q`, add `x`")))
    assert rule_from_doc(rule_to_doc(rule)) == rule
    assert rule_to_doc(CallRule(RuleKind.DO_NOT_RETRY, "t")) == {"kind": "do_not_retry", "tool": "t"}
    stored = to_doc(experience(rule=None))
    assert stored["rule"] is None and experience_from_doc(stored).rule is None


def test_advise_and_credit_read_the_rule_not_the_words():
    """A lesson whose words say another rule (edited, or merged with another wording) is held to
    its rule: advise warns as the rule says, credit judges the run by it."""
    events, rule = SCENARIOS["value of another shape"]
    exp = draft_to_experience(lesson_of(events), traj(), traj().created_at)
    reworded = replace(exp, advice="Do not retry `charge` with the same parameters.", lesson="Call `x` before `charge`.")
    decimal = Situation("charge", {"amount": 12.5})
    for lesson in (exp, reworded):
        finding = evaluate(lesson.rule, decimal, lesson.error_class)
        assert finding.violations == ("`amount` is a decimal number here, the shape that made `charge` fail"
                                      " (it wants a whole number)",)
        assert not evaluate(lesson.rule, Situation("charge", {"amount": 1250})).applies
        assert followed(lesson, [call("charge", {"amount": 1250})])
        assert not followed(lesson, [call("charge", {"amount": 12.5})])
    assert read_rule(reworded.advice, reworded.lesson, reworded.situation, reworded.tools).kind is RuleKind.DO_NOT_RETRY


def test_a_redone_first_call_is_a_call_first_rule_with_how_to_call_it():
    """The first tool had been called before the failure, but not this way: the rule says to call
    it first, and how; its words come from it (they read as no rule of the reviewer's forms)."""
    events = [
        call("upload", {"file": "scan.pdf"}, result="d1"),
        call("submit", {"doc": "d1"}, ok=False, error="Unreadable: no text layer"),
        call("upload", {"file": "scan.pdf", "ocr": True}, result="d2"),
        call("submit", {"doc": "d2"}),
    ]
    draft = lesson_of(events)
    assert draft.rule == CallRule(RuleKind.CALL_FIRST, "submit", (A(K.MISSING, "doc"),), other_tool="upload",
                                  first_arguments=(A(K.VALUE, "ocr", "`true`"),), error='"Unreadable: no text layer"')
    assert draft.advice.startswith("Before `submit`, call `upload` and set `ocr` to `true` and pass what it returns as `doc`")
    exp = draft_to_experience(draft, traj(), traj().created_at)
    assert not evaluate(exp.rule, Situation("submit", {"doc": "d3"}, recent=[call("upload", {"file": "a.pdf"}, result="d3")])).applies
    assert evaluate(exp.rule, Situation("submit", {"doc": "d3"}, recent=[call("lookup", {})])).violations == (
        "`upload` has not been called before `submit`",)


def test_a_change_by_a_factor_names_the_argument_without_a_shape_that_every_value_breaks():
    """"Set `amount` to the value that failed multiplied by 100" checks nothing of the value: read
    back from the words it was a shape no value has, and every call of the tool was warned."""
    events = [call("pay", {"amount": 500.0}, ok=False, error="InvalidAmount: cents"), call("pay", {"amount": 50000})]
    draft = lesson_of(events)
    (arg,) = draft.rule.arguments
    assert (arg.kind, arg.name) == (K.NAMED, "amount") and arg.words.startswith("set `amount` to the value that failed multiplied by 100")
    exp = draft_to_experience(draft, traj(), traj().created_at)
    assert evaluate(exp.rule, Situation("pay", {"amount": 70000}), exp.error_class).violations == ()
    assert evaluate(read_rule(exp.advice, exp.lesson, exp.situation, exp.tools), Situation("pay", {"amount": 70000})).violations


def test_a_text_change_names_the_argument_changed_not_the_value_added():
    events = [
        call("sql_query", {"query": "SELECT * FROM events WHERE user_id = 42"}, ok=False, error="QueryTimeout: 30s"),
        call("sql_query", {"query": "SELECT * FROM events WHERE user_id = 42 LIMIT 100"}),
    ]
    draft = lesson_of(events)
    assert draft.rule.arguments == (A(K.NAMED, "query", words="in `query`, add `LIMIT 100` at the end"),)
    exp = draft_to_experience(draft, traj(), traj().created_at)
    assert followed(exp, [call("sql_query", {"query": "SELECT 1 LIMIT 5"})])


def test_a_model_lessons_rule_is_read_from_its_words_as_written():
    draft = replace(lesson_of(SCENARIOS["argument missing"][0]), rule=None, rule_in_words=True,
                    advice="`get_weather` requires `city`: ask the user for it first.")
    exp = draft_to_experience(draft, traj(), traj().created_at)
    assert exp.rule == CallRule(RuleKind.ARGUMENTS, "get_weather", (A(K.MISSING, "city"),))
