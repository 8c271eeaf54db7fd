"""A small shop: the project's own tool environment, for tests and for a quick run without fetching.

Six tools over a generated data set (customers, their payment methods, their orders) answer with
their own errors, as a real backend would: find a customer by email, read an order, cancel an open
order (for an allowed reason), refund delivered items (to the original payment method or store
credit), hand off to a person, or think. Tasks are generated from the data: cancel each open order,
refund each delivered one; gold actions are the change itself, and the catalog adds the lookups
and the mistakes an agent makes (a status not checked, a reason the shop does not take, a refund
to another card, an item that is not in the order, a customer never looked up).
"""
from __future__ import annotations

import json
import random
from typing import Any, Mapping, Sequence

from .env import Action, Environment, Task
from .runs import Call, Decision, Plan, Step

REASONS = ("no longer needed", "ordered by mistake")


def find_customer(data: dict[str, Any], email: str) -> str:
    for cid, c in data["customers"].items():
        if c["email"] == email.strip().lower():
            return cid
    return "Error: no customer with that email"


def get_order(data: dict[str, Any], order_id: str) -> str:
    order = data["orders"].get(order_id)
    return json.dumps(order) if order is not None else f"Error: order {order_id} does not exist"


def cancel_order(data: dict[str, Any], order_id: str, reason: str) -> str:
    order = data["orders"].get(order_id)
    if order is None:
        return f"Error: order {order_id} does not exist"
    if order["status"] != "open":
        return f"Error: only open orders can be cancelled (status is {order['status']})"
    if reason not in REASONS:
        return f"Error: reason must be one of: {', '.join(REASONS)}"
    order["status"] = "cancelled"
    order["cancel_reason"] = reason
    return json.dumps(order)


def refund_items(data: dict[str, Any], order_id: str, skus: list[str], method_id: str) -> str:
    order = data["orders"].get(order_id)
    if order is None:
        return f"Error: order {order_id} does not exist"
    if order["status"] != "delivered":
        return f"Error: only delivered orders can be refunded (status is {order['status']})"
    owned = [i["sku"] for i in order["items"]]
    for sku in skus:
        if sku not in owned:
            return f"Error: sku {sku} is not in order {order_id}"
    methods = data["customers"][order["customer"]]["methods"]
    if method_id not in methods:
        return f"Error: payment method {method_id} does not exist"
    if method_id != order["paid_with"] and methods[method_id]["kind"] != "store_credit":
        return "Error: refunds go to the original payment method or store credit"
    order["status"] = "refund requested"
    order["refund"] = {"skus": sorted(skus), "method_id": method_id}
    return json.dumps(order)


def escalate(data: dict[str, Any], summary: str) -> str:
    return "Escalated to a human agent"


def think(data: dict[str, Any], thought: str) -> str:
    return ""


TOOLS = {"find_customer": find_customer, "get_order": get_order, "cancel_order": cancel_order,
         "refund_items": refund_items, "escalate": escalate, "think": think}
FIRST_NAMES = ("ada", "ben", "cleo", "dev", "eli", "fay", "gus", "hana", "ivo", "jun")


def generate(seed: int = 3, customers: int = 10) -> dict[str, Any]:
    rng = random.Random(seed)
    data: dict[str, Any] = {"customers": {}, "orders": {}}
    n = 0
    for i in range(customers):
        cid = f"{FIRST_NAMES[i % len(FIRST_NAMES)]}_{1000 + i}"
        methods = {f"card_{2000 + i}": {"kind": "card"}, f"card_{3000 + i}": {"kind": "card"},
                   f"credit_{4000 + i}": {"kind": "store_credit"}}
        data["customers"][cid] = {"email": f"{cid}@example.com", "methods": methods, "orders": []}
        for status in ("open", "delivered", "delivered", "shipped"):
            n += 1
            oid = f"#S{5000 + n}"
            items = [{"sku": f"SKU-{rng.randrange(100, 999)}", "price": round(rng.uniform(5, 80), 2)} for _ in range(rng.randint(1, 3))]
            data["orders"][oid] = {"order_id": oid, "customer": cid, "status": status, "items": items,
                                   "paid_with": f"card_{2000 + i}"}
            data["customers"][cid]["orders"].append(oid)
    return data


def tasks(data: Mapping[str, Any]) -> dict[str, list[Task]]:
    """Cancel each open order, refund the first item of each delivered one; every fourth task is held out."""
    out: dict[str, list[Task]] = {"train": [], "test": []}
    for oid, order in data["orders"].items():
        cid = order["customer"]
        email = data["customers"][cid]["email"]
        if order["status"] == "open":
            reason = REASONS[len(out["train"]) % 2]
            text = f"My email is {email}. Please cancel order {oid}, it was {reason}."
            actions = (Action("cancel_order", {"order_id": oid, "reason": reason}),)
        elif order["status"] == "delivered":
            sku = order["items"][0]["sku"]
            text = f"My email is {email}. Refund {sku} from order {oid} to the card I paid with."
            actions = (Action("refund_items", {"order_id": oid, "skus": [sku], "method_id": order["paid_with"]}),)
        else:
            continue
        split = "test" if (len(out["train"]) + len(out["test"])) % 4 == 3 else "train"
        out[split].append(Task(split, len(out[split]), cid, text, actions))
    return out


def load(seed: int = 3, customers: int = 10) -> Environment:
    data = generate(seed, customers)
    return Environment("smallshop", dict(TOOLS), lambda: json.loads(json.dumps(data)), tasks(data),
                       escape_tools=("escalate",), scratch_tools=("think",))


ENDINGS = (("fix", 4), ("think", 2), ("retry", 2), ("handoff", 2))
SUBJECTS = (
    (r"does not exist$", ("order_id", "order id")),
    (r"only open orders", ("open", "status")),
    (r"only delivered orders", ("delivered", "status")),
    (r"reason must be one of", ("reason",)),
    (r"is not in order", ("skus", "sku")),
    (r"original payment method or store credit", ("method_id", "original", "store credit")),
    (r"no customer with that email", ("email",)),
)


class ShopCatalog:
    state_keys = ("orders",)
    weights: Mapping[str, float] = {}

    def gold(self, env: Environment, task: Task, data: Mapping[str, Any], rng: random.Random) -> list[Step] | None:
        a = task.actions[0]
        return [Step("find_customer", {"email": data["customers"][task.user_id]["email"]}),
                Step("get_order", {"order_id": a.params["order_id"]}), Step(a.tool, a.params)]

    def policy_ok(self, env: Environment, task: Task, calls: Sequence[Call]) -> bool:
        found = False
        for c in calls:
            found = found or (c.tool == "find_customer" and not c.failed)
            if c.tool == "escalate" or (c.tool in ("cancel_order", "refund_items") and not found):
                return False
        return True

    def mistakes(self, env: Environment, task: Task, data: Mapping[str, Any], gold: Sequence[Step],
                 rng: random.Random) -> list[Plan]:
        find, look, a = gold
        p = dict(a.params)
        customer = data["customers"][task.user_id]
        plans: list[Plan] = []

        def with_error(kind: str, bad: Step, fix: Sequence[Step], head: Sequence[Step]) -> None:
            names, weights = zip(*ENDINGS)
            ending = rng.choices(names, weights)[0]
            tail = {"fix": [bad, *fix], "think": [bad, Step("think", {"thought": "That failed; let me check what I sent."}), *fix],
                    "retry": [bad, bad, *fix], "handoff": [bad, Step("escalate", {"summary": "Could not complete the request."})]}[ending]
            plans.append(Plan(task, tuple([*head, *tail]), kind, ending))

        wanted = "open" if a.tool == "cancel_order" else "delivered"
        other = next((o for o in customer["orders"] if data["orders"][o]["status"] != wanted), None)
        if other:
            with_error("order_status", Step(a.tool, {**p, "order_id": other}), [look, a], [find])
        if a.tool == "cancel_order":
            with_error("free_reason", Step(a.tool, {**p, "reason": rng.choice(("changed my mind", "too slow"))}), [a], [find, look])
        else:
            card = next(m for m, v in customer["methods"].items() if v["kind"] == "card" and m != p["method_id"])
            with_error("refund_method", Step(a.tool, {**p, "method_id": card}), [a], [find, look])
            with_error("sku_not_in_order", Step(a.tool, {**p, "skus": ["SKU-000"]}), [look, a], [find])
        plans.append(Plan(task, (look, a), "no_auth", "none", Decision("skipped", "find_customer", before=a.tool)))
        return plans
