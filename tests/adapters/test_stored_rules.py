"""A lesson stored before lessons kept their call rule as data reads back with the rule its words
state, in each store that keeps lessons as documents; the next write stores the rule itself."""
from __future__ import annotations

import json
from dataclasses import replace

import pytest

from chalicelib.adapters.embedded.db import SqliteDatabase
from chalicelib.adapters.embedded.stores import SqliteExperienceStore
from chalicelib.domain.call_rule import Argument, ArgumentKind, CallRule, RuleKind
from chalicelib.domain.distill import draft_to_experience
from chalicelib.domain.review import review_by_rules
from tests.support.builders import call, traj

RULE = CallRule(RuleKind.ARGUMENTS, "charge", (
    Argument(ArgumentKind.VALUE_SHAPE, "amount", "a whole number", "1999", "a decimal number", "19.99"),),
    error='"InvalidAmount: integer cents"')  # the error the run failed with, quoted in warnings


def learned():
    events = [call("charge", {"amount": 19.99}, ok=False, error="InvalidAmount: integer cents"), call("charge", {"amount": 1999})]
    (draft,) = review_by_rules(traj(tools=["charge"]), events).lessons
    exp = draft_to_experience(draft, traj(), traj().created_at)
    assert exp.rule == RULE
    return exp


def without_rule(doc: str) -> str:
    old = json.loads(doc)
    del old["rule"]
    return json.dumps(old)


def check(store, write_old_doc) -> None:
    exp = learned()
    store.put(exp)
    write_old_doc(exp)
    old = store.get(exp.tenant_id, exp.experience_id)
    # read from the words: the shapes they say, not the examples they give
    assert old.rule == CallRule(RuleKind.ARGUMENTS, "charge", (
        Argument(ArgumentKind.VALUE_SHAPE, "amount", "a whole number", None, "a decimal number", None),))
    assert replace(old, rule=exp.rule) == exp
    store.put(replace(old, rule=None))  # a write stores the rule it holds, even none
    assert store.get(exp.tenant_id, exp.experience_id).rule is None


def test_sqlite_reads_an_old_lesson_with_the_rule_its_words_state(tmp_path):
    db = SqliteDatabase(str(tmp_path / "hindsight.db"))

    def write_old_doc(exp):
        with db.write() as conn:
            (doc,) = conn.execute("SELECT doc FROM experiences WHERE experience_id=?", (exp.experience_id,)).fetchone()
            conn.execute("UPDATE experiences SET doc=? WHERE experience_id=?", (without_rule(doc), exp.experience_id))

    check(SqliteExperienceStore(db), write_old_doc)


def test_dynamodb_reads_an_old_lesson_with_the_rule_its_words_state():
    pytest.importorskip("pynamodb")
    pytest.importorskip("moto")
    from chalicelib.adapters.dynamo.stores import DynamoExperienceStore
    from tests.support.dynamo import dynamo_tables

    tables = dynamo_tables()
    tables.create("experiences")
    try:
        store = DynamoExperienceStore(tables)

        def write_old_doc(exp):
            item = store.Item.get(exp.tenant_id, exp.experience_id, consistent_read=True)
            item.doc = without_rule(item.doc)
            item.save()

        check(store, write_old_doc)
    finally:
        tables.delete()
