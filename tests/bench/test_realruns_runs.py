"""Runs replayed against the small shop's real tools: gold runs succeed, each mistake answers with
the tool's own error, and the outcome follows the data the run left and the shop's policy."""
from __future__ import annotations

import random

import pytest

from bench.realruns import smallshop
from bench.realruns.env import Table, request_of, state_digest
from bench.realruns.runs import Plan, Step, build, events, execute, gold_digest, task_runs


@pytest.fixture(scope="module")
def shop():
    return smallshop.load()


def test_a_gold_run_succeeds_and_changes_only_its_order(shop):
    cat = smallshop.ShopCatalog()
    task = shop.tasks["train"][0]
    runs = task_runs(shop, cat, task, mistakes=0, rng=random.Random(1))
    assert [r.outcome for r in runs] == ["success"]
    assert [c.tool for c in runs[0].calls] == ["find_customer", "get_order", task.actions[0].tool]
    assert not any(c.failed for c in runs[0].calls)


def test_each_mistake_answers_with_the_tools_own_error(shop):
    cat = smallshop.ShopCatalog()
    cancel = next(t for t in shop.tasks["train"] if t.actions[0].tool == "cancel_order")
    data = shop.fresh_data()
    gold = cat.gold(shop, cancel, data, random.Random(1))
    digest, clean = gold_digest(shop, gold, cat)
    assert clean
    by_kind = {p.mistake: execute(shop, p, cat, digest) for p in cat.mistakes(shop, cancel, data, gold, random.Random(2))}
    first = {k: r.calls[r.first_error()].answer for k, r in by_kind.items() if r.first_error() is not None}
    assert first["free_reason"] == "Error: reason must be one of: no longer needed, ordered by mistake"
    assert first["order_status"].startswith("Error: only open orders can be cancelled (status is ")
    # never looked up: no tool error, and still a failure (the policy), beside a decision that says where
    assert by_kind["no_auth"].first_error() is None and by_kind["no_auth"].outcome == "failure"
    assert by_kind["no_auth"].plan.decision.tool == "find_customer"


def test_the_outcome_is_the_data_left_and_the_policy(shop):
    cat = smallshop.ShopCatalog()
    task = next(t for t in shop.tasks["train"] if t.actions[0].tool == "cancel_order")
    gold = cat.gold(shop, task, shop.fresh_data(), random.Random(1))
    digest, _ = gold_digest(shop, gold, cat)
    bad = Step("cancel_order", {**task.actions[0].params, "reason": "too slow"})
    fixed = execute(shop, Plan(task, (gold[0], gold[1], bad, gold[2]), "free_reason", "fix"), cat, digest)
    handed = execute(shop, Plan(task, (gold[0], gold[1], bad, Step("escalate", {"summary": "x"})), "free_reason", "handoff"),
                     cat, digest)
    assert (fixed.outcome, handed.outcome) == ("success", "failure")
    assert fixed.calls[2].failed and not fixed.calls[3].failed


def test_runs_become_events_in_the_public_shape(shop):
    runs = build(shop, smallshop.ShopCatalog(), shop.tasks["train"][:3], mistakes=1, seed=5, prefix="rr.t.train")
    failed = next(r for r in runs if r.first_error() is not None)
    evs = events(failed)
    assert evs[0] == {"event_id": "e0", "type": "user_input", "content": {"text": failed.goal}}
    err = evs[1 + failed.first_error()]["content"]
    assert err["status"] == "error" and err["error"].startswith("Error: ") and "result" not in err
    ok = next(e for e in evs[1:] if e["content"]["status"] == "ok")["content"]
    assert "error" not in ok and set(ok) == {"tool", "params", "status", "result"}
    assert len({r.id for r in runs}) == len(runs) and all(r.id.startswith("rr.t.train.") for r in runs)


def test_a_run_copies_what_it_reads_and_never_changes_the_shared_data(shop):
    base = {"a": {"status": "open"}, "b": {"status": "open"}}
    one, two = Table(base), Table(base)
    one["a"]["status"] = "cancelled"
    assert base["a"]["status"] == "open" and two["a"]["status"] == "open"
    assert one.changed() == {"a": {"status": "cancelled"}} and two.changed() == {}
    assert set(one) == {"a", "b"} and "b" in one and len(one) == 2
    two["a"]["status"] = "cancelled"
    assert state_digest({"t": one}, ("t",)) == state_digest({"t": two}, ("t",))


def test_the_request_is_the_instruction_without_the_persona():
    text = ("Your name is Omar Anderson and your zip code is 19031. You are logical, independent, relaxing, polite. "
            "Return #W6067464 via credit_card_4190576: Electric Kettle; Wall Clock; ")
    assert request_of(text) == "Return #W6067464 via credit_card_4190576: Electric Kettle; Wall Clock;"
    assert request_of("You are Yusuf Rossi in 19122. You received your order #W2378156.") == "You received your order #W2378156."
