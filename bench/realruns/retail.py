"""Runs of the retail environment: how an agent does a task the gold way, and the mistakes real
agents make there, each followed by what an agent does next.

The gold way: find the user (by email when the task gives one, else by name and zip code), read
their profile, read each order the task is about and each product whose items change, then the
gold actions. A task list that already holds the lookups (the dev and test splits) is followed as
it is, with the user found first when it does not.

The mistakes (each where the task allows it; the tools answer with their own errors):
a skipped lookup that leads to a wrong value (a product id where an item id goes, an order whose
status was not checked), a wrong payment method (not the original one for a refund, a gift card
without the balance, one the user does not have, the current one again), an order id without its
``#``, a reason the policy does not allow, counts that do not match, an item that is not available,
amounts written with a currency sign for the calculator, a user looked up by a mistyped email, a
change split into two calls where the policy allows one; and, without any tool error, a user never
authenticated, another allowed reason than the user's, a return made where an exchange was asked.
After a tool error the agent fixes the call, thinks first (``think``), retries the same call first,
or hands off to a human (with or without a blind retry before).
"""
from __future__ import annotations

import random
from typing import Any, Mapping, Sequence

from .env import Environment, Task
from .runs import Call, Decision, Plan, Step

LOOKUPS = frozenset({
    "find_user_id_by_email", "find_user_id_by_name_zip", "get_user_details", "get_order_details",
    "get_product_details", "list_all_product_types", "calculate", "think",
})
FIND_USER = ("find_user_id_by_email", "find_user_id_by_name_zip")
ITEM_TOOLS = ("exchange_delivered_order_items", "modify_pending_order_items")
HANDOFF = "transfer_to_human_agents"
# endings after a tool error, with their weights
ENDINGS = (("fix", 4), ("think", 2), ("retry", 2), ("handoff", 2), ("retry_handoff", 1))
# what agents write as a cancellation reason when they paraphrase the user
FREE_REASONS = ("changed my mind", "found a better price", "customer request", "no longer wanted", "duplicate order")
THOUGHTS = (
    "The call failed. Let me look at what I sent before trying again.",
    "That did not work. I should reconsider the details before the next call.",
    "Something in the request was wrong; let me think about which part.",
)
HANDOFF_SUMMARIES = (
    "The user's request could not be completed with the available tools.",
    "Transferring: the system rejected the change the user asked for.",
)


class RetailCatalog:
    state_keys = ("orders", "users")
    # every task allows the first four: the rarer mistakes are picked more often when a task allows them
    weights = {"no_auth": 0.5, "order_hash": 0.6, "unknown_method": 0.6, "count_mismatch": 0.8,
               "refund_method": 2.0, "gift_card_balance": 2.0, "same_method": 2.0, "currency_sign": 1.5,
               "split_change": 1.5, "email_typo": 1.0}

    # --- the gold way -----------------------------------------------------------------------------

    def gold(self, env: Environment, task: Task, data: Mapping[str, Any], rng: random.Random) -> list[Step] | None:
        user = data["users"].get(task.user_id)
        if user is None:
            return None
        actions = [Step(a.tool, a.params) for a in task.actions]
        if any(a.tool in FIND_USER for a in actions):  # the split lists its own lookups
            return actions
        if any(a.tool in LOOKUPS for a in actions):
            return [self._find_user(task, user), *actions]
        steps = [self._find_user(task, user), Step("get_user_details", {"user_id": task.user_id})]
        looked: set[str] = set()
        for a in actions:
            order_id = a.params.get("order_id")
            if order_id and order_id not in looked and order_id in data["orders"]:
                looked.add(order_id)
                steps.append(Step("get_order_details", {"order_id": order_id}))
                if a.tool in ITEM_TOOLS:
                    for pid in _products(data, order_id, a.params.get("item_ids") or ()):
                        steps.append(Step("get_product_details", {"product_id": pid}))
        first = _first_change(actions)
        if first is not None and actions[first].tool == "return_delivered_order_items" and rng.random() < 0.5:
            steps.append(Step("calculate", {"expression": _sum_expression(data, actions[first].params)}))
        return steps + actions

    def _find_user(self, task: Task, user: Mapping[str, Any]) -> Step:
        if "email" in task.instruction.lower():
            return Step("find_user_id_by_email", {"email": user["email"]})
        name = user["name"]
        return Step("find_user_id_by_name_zip", {"first_name": name["first_name"], "last_name": name["last_name"],
                                                 "zip": user["address"]["zip"]})

    def policy_ok(self, env: Environment, task: Task, calls: Sequence[Call]) -> bool:
        """The user was found before any change, and nobody was handed off to a human."""
        found = False
        for c in calls:
            if c.tool in FIND_USER and not c.failed:
                found = True
            if c.tool not in LOOKUPS and c.tool != HANDOFF and not found:
                return False
            if c.tool == HANDOFF:
                return False
        return True

    # --- the mistakes -----------------------------------------------------------------------------

    def mistakes(self, env: Environment, task: Task, data: Mapping[str, Any], gold: Sequence[Step],
                 rng: random.Random) -> list[Plan]:
        k = _first_change(gold)
        if k is None:
            return []
        a = gold[k]
        before, after = list(gold[:k]), list(gold[k + 1:])
        user = data["users"][task.user_id]
        orders = data["orders"]
        plans: list[Plan] = []

        def with_error(kind: str, bad: Step, fix: Sequence[Step], pre: Sequence[Step] | None = None) -> None:
            ending = _pick(rng)
            head = list(before if pre is None else pre)
            thought = Step("think", {"thought": rng.choice(THOUGHTS)})
            handoff = Step(HANDOFF, {"summary": rng.choice(HANDOFF_SUMMARIES)})
            tail = {
                "fix": [bad, *fix, *after],
                "think": [bad, thought, *fix, *after],
                "retry": [bad, bad, *fix, *after],
                "handoff": [bad, handoff],
                "retry_handoff": [bad, bad, handoff],
            }[ending]
            plans.append(Plan(task, tuple(head + tail), kind, ending))

        def quiet(kind: str, steps: Sequence[Step], decision: Decision) -> None:
            plans.append(Plan(task, tuple(steps), kind, "none", decision))

        p = dict(a.params)
        order = orders.get(p.get("order_id", ""))
        # an order id without its '#'
        if order is not None:
            with_error("order_hash", Step(a.tool, {**p, "order_id": p["order_id"].lstrip("#")}), [a])
        # a product id where an item id goes, the order's details never read
        if a.tool in (*ITEM_TOOLS, "return_delivered_order_items") and order is not None and p.get("item_ids"):
            item = next(i for i in order["items"] if i["item_id"] == p["item_ids"][0])
            bad_ids = [item["product_id"], *p["item_ids"][1:]]
            pre = [s for s in before if not (s.tool == "get_order_details" and s.params.get("order_id") == p["order_id"])]
            with_error("product_for_item", Step(a.tool, {**p, "item_ids": bad_ids}),
                       [Step("get_order_details", {"order_id": p["order_id"]}), a], pre)
        # a refund to a method that is neither the original one nor a gift card
        if a.tool == "return_delivered_order_items" and order is not None:
            original = order["payment_history"][0]["payment_method_id"]
            other = [m for m in user["payment_methods"] if m != original and "gift_card" not in m]
            if other:
                with_error("refund_method", Step(a.tool, {**p, "payment_method_id": other[0]}), [a])
        # a payment method the user does not have
        if "payment_method_id" in p:
            source = p["payment_method_id"].rsplit("_", 1)[0]
            fake = f"{source}_{rng.randrange(10**6, 10**7)}"
            if fake not in user["payment_methods"]:
                with_error("unknown_method", Step(a.tool, {**p, "payment_method_id": fake}), [a])
        # a gift card without the balance for what it must pay
        if a.tool in (*ITEM_TOOLS, "modify_pending_order_payment") and order is not None:
            need = _to_pay(data, a)
            short = [m for m, v in user["payment_methods"].items()
                     if v["source"] == "gift_card" and m != p.get("payment_method_id") and v["balance"] < need
                     and (a.tool in ITEM_TOOLS or m != order["payment_history"][0]["payment_method_id"])]
            if short and need > 0:
                with_error("gift_card_balance", Step(a.tool, {**p, "payment_method_id": short[0]}), [a])
        # the current payment method again
        if a.tool == "modify_pending_order_payment" and order is not None:
            current = order["payment_history"][0]["payment_method_id"]
            with_error("same_method", Step(a.tool, {**p, "payment_method_id": current}), [a])
        # a reason the policy does not allow
        if a.tool == "cancel_pending_order":
            with_error("free_reason", Step(a.tool, {**p, "reason": rng.choice(FREE_REASONS)}), [a])
        # an order of the user in another status, its status never checked
        wanted = {"cancel_pending_order": "pending", "modify_pending_order_items": "pending",
                  "modify_pending_order_address": "pending", "modify_pending_order_payment": "pending",
                  "return_delivered_order_items": "delivered", "exchange_delivered_order_items": "delivered"}.get(a.tool)
        if wanted and order is not None:
            others = [o for o in user["orders"] if o in orders and orders[o]["status"] != wanted and o != p["order_id"]]
            if others:
                pre = [s for s in before if s.tool != "get_order_details"]
                with_error("order_status", Step(a.tool, {**p, "order_id": rng.choice(others)}),
                           [Step("get_order_details", {"order_id": p["order_id"]}), a], pre)
        # counts that do not match
        if a.tool in ITEM_TOOLS and p.get("new_item_ids"):
            with_error("count_mismatch", Step(a.tool, {**p, "new_item_ids": p["new_item_ids"][:-1]}), [a])
        # an item that is not available (or of another product)
        if a.tool in ITEM_TOOLS and order is not None and p.get("item_ids"):
            bad_new = _unavailable(data, order, p["item_ids"][0], rng)
            if bad_new:
                with_error("unavailable_item", Step(a.tool, {**p, "new_item_ids": [bad_new, *p["new_item_ids"][1:]]}), [a])
        # amounts for the calculator with a currency sign
        if a.tool == "return_delivered_order_items" and order is not None:
            expression = _sum_expression(data, p)
            pre = [s for s in before if s.tool != "calculate"]
            signed = " + ".join(f"${x}" for x in expression.split(" + "))
            with_error("currency_sign", Step("calculate", {"expression": signed}),
                       [Step("calculate", {"expression": expression}), a], pre)
        # a user looked up by a mistyped email, then found by name and zip code
        if before and before[0].tool == "find_user_id_by_email":
            email = before[0].params["email"]
            typo = email.replace("@", "@@", 1) if rng.random() < 0.5 else email.replace(".", "", 1)
            name = user["name"]
            by_zip = Step("find_user_id_by_name_zip", {"first_name": name["first_name"], "last_name": name["last_name"],
                                                       "zip": user["address"]["zip"]})
            ending = _pick(rng)
            bad = Step("find_user_id_by_email", {"email": typo})
            thought = Step("think", {"thought": rng.choice(THOUGHTS)})
            handoff = Step(HANDOFF, {"summary": rng.choice(HANDOFF_SUMMARIES)})
            rest = before[1:] + [a, *after]
            tail = {"fix": [bad, by_zip, *rest], "think": [bad, thought, by_zip, *rest], "retry": [bad, bad, by_zip, *rest],
                    "handoff": [bad, handoff], "retry_handoff": [bad, bad, handoff]}[ending]
            plans.append(Plan(task, tuple(tail), "email_typo", ending))
        # one change split into two calls: the second finds the order changed already
        if a.tool in ITEM_TOOLS and len(p.get("item_ids") or ()) >= 2:
            first = Step(a.tool, {**p, "item_ids": p["item_ids"][:1], "new_item_ids": p["new_item_ids"][:1]})
            second = Step(a.tool, {**p, "item_ids": p["item_ids"][1:], "new_item_ids": p["new_item_ids"][1:]})
            ending = rng.choice(("handoff", "stop"))
            tail = [first, second] + ([Step(HANDOFF, {"summary": rng.choice(HANDOFF_SUMMARIES)})] if ending == "handoff" else [])
            plans.append(Plan(task, tuple(before + tail), "split_change", ending, Decision("split", a.tool)))
        # without a tool error: never authenticated
        if before and before[0].tool in FIND_USER:
            quiet("no_auth", [s for s in before if s.tool not in FIND_USER] + [a, *after],
                  Decision("skipped", before[0].tool, before=a.tool))
        # without a tool error: another allowed reason than the user's
        if a.tool == "cancel_pending_order" and p.get("reason") in ("no longer needed", "ordered by mistake"):
            other = "ordered by mistake" if p["reason"] == "no longer needed" else "no longer needed"
            quiet("other_reason", before + [Step(a.tool, {**p, "reason": other}), *after],
                  Decision("argument", a.tool, param="reason"))
        # without a tool error: a return where an exchange was asked
        if a.tool == "exchange_delivered_order_items":
            ret = Step("return_delivered_order_items", {"order_id": p["order_id"], "item_ids": p["item_ids"],
                                                        "payment_method_id": p["payment_method_id"]})
            quiet("return_for_exchange", before + [ret, *after], Decision("tool", a.tool))
        return plans


def _pick(rng: random.Random) -> str:
    names, weights = zip(*ENDINGS)
    return rng.choices(names, weights)[0]


def _first_change(steps: Sequence[Step]) -> int | None:
    return next((i for i, s in enumerate(steps) if s.tool not in LOOKUPS and s.tool != HANDOFF), None)


def _products(data: Mapping[str, Any], order_id: str, item_ids: Sequence[str]) -> list[str]:
    items = {i["item_id"]: i["product_id"] for i in data["orders"][order_id]["items"]}
    return list(dict.fromkeys(items[i] for i in item_ids if i in items))


def _sum_expression(data: Mapping[str, Any], params: Mapping[str, Any]) -> str:
    prices = {i["item_id"]: i["price"] for i in data["orders"][params["order_id"]]["items"]}
    return " + ".join(str(prices[i]) for i in params.get("item_ids") or () if i in prices) or "0"


def _to_pay(data: Mapping[str, Any], a: Step) -> float:
    order = data["orders"][a.params["order_id"]]
    if a.tool == "modify_pending_order_payment":
        return float(order["payment_history"][0]["amount"])
    items = {i["item_id"]: i for i in order["items"]}
    diff = 0.0
    for old, new in zip(a.params.get("item_ids") or (), a.params.get("new_item_ids") or ()):
        if old not in items:
            return 0.0
        variants = data["products"][items[old]["product_id"]]["variants"]
        if new not in variants:
            return 0.0
        diff += variants[new]["price"] - items[old]["price"]
    return round(diff, 2)


def _unavailable(data: Mapping[str, Any], order: Mapping[str, Any], item_id: str, rng: random.Random) -> str | None:
    item = next((i for i in order["items"] if i["item_id"] == item_id), None)
    if item is None:
        return None
    variants = data["products"][item["product_id"]]["variants"]
    gone = sorted(v for v, d in variants.items() if not d["available"])
    if gone:
        return rng.choice(gone)
    other = sorted(p for p in data["products"] if p != item["product_id"])
    return rng.choice(sorted(data["products"][rng.choice(other)]["variants"]))



# what each error is about: the words a fix that speaks of it names (``metrics.Subjects``)
SUBJECTS = (
    (r"^order not found", ("order_id", "order id")),
    (r"^<v> not found$|^some item not found", ("item_ids", "item id")),
    (r"non-pending order", ("pending", "status")),
    (r"non-delivered order", ("delivered", "status")),
    (r"invalid reason", ("reason",)),
    (r"^payment method not found", ("payment_method_id", "payment method")),
    (r"original payment method or a gift card", ("original", "gift card", "gift_card")),
    (r"insufficient gift card balance", ("balance",)),
    (r"different from the current", ("current", "different")),
    (r"number of items", ("new_item_ids", "number", "count", "as many")),
    (r"new item <v> not found or available", ("new_item_ids", "available")),
    (r"invalid characters in expression", ("expression", "character", "$", "sign")),
    (r"^user not found", ("email", "zip", "name")),
)
