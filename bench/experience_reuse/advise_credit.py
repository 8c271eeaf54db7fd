"""Advice at each tool call versus one recall at the start; credit from outcomes versus none.

Usage: .venv/bin/python -m bench.experience_reuse.advise_credit [--tasks 40] [--episodes 16] [--embedder hash]

A simulated agent drives the real server (``python -m chalicelib.server``) through the SDK.

Part 1, advise vs recall once. Twelve tools each have a trap (a required argument, an amount in
integer cents, an ISO date, a code to look up first). Training: one task per tool where the agent
falls in the trap and then fixes it; the server reviews each run into a lesson. Test: tasks that
use three of the tools, worded as a user would ("Plan the Friday trip for the team"), never naming
them. The agent calls its tools in order and avoids a trap only when what it was told names that
tool's fix:

  no memory       it falls in every trap (a failed call, then the fixed one)
  recall once     one recall at the start with the goal and the tools the agent has (all twelve:
                  which three the task needs shows only as it goes), the top 3 lessons in its
                  prompt; it follows the lessons it was given
  advise          before each call, POST /v1/advise with the tool and the arguments it is about
                  to pass; it follows a warning

Part 2, credit vs no feedback. One tool has two lessons: the right one and a planted wrong one
(the opposite value shape). In each episode the agent recalls, follows the first lesson it is
given about the tool, and succeeds or fails by it. With credit the episode attaches its recall id
(a ``recall`` event) and the review credits what was served; without, nothing is attached (no
feedback at all). Reported: episodes misled by the wrong lesson, and where each lesson ends.

Prints numbers only; the baselines (no memory, no feedback) are measured in the same run.
"""
from __future__ import annotations

import argparse
import random
import tempfile
import time
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

from bench._harness import Server

# tool -> (the naive arguments, the fixed ones, the error of the naive call, the words of a task)
TRAPS: dict[str, tuple[dict[str, Any], dict[str, Any], str, str]] = {
    "get_weather": ({"date": "2026-12-04"}, {"date": "2026-12-04", "city": "Lyon"}, "MissingParameter: city is required", "check the weather"),
    "charge_card": ({"amount": 19.99}, {"amount": 1999}, "InvalidAmount: amount must be integer cents", "take the payment"),
    "book_room": ({"day": "friday", "room": "Blue"}, {"day": "2026-12-04", "room": "Blue"}, "InvalidDate: day must be YYYY-MM-DD", "reserve a meeting room"),
    "send_invite": ({"subject": "Sync"}, {"subject": "Sync", "attendees": ["team"]}, "MissingParameter: attendees is required", "invite the team"),
    "create_ticket": ({"title": "Bug"}, {"title": "Bug", "project": "OPS"}, "MissingParameter: project is required", "open a ticket"),
    "transfer_funds": ({"amount": 250.5, "to": "acct-1"}, {"amount": 25050, "to": "acct-1"}, "InvalidAmount: amount must be integer cents", "pay the supplier"),
    "schedule_job": ({"when": "tonight"}, {"when": "2026-12-04"}, "InvalidDate: when must be YYYY-MM-DD", "run the nightly export"),
    "post_message": ({"text": "Hello"}, {"text": "Hello", "channel": "#general"}, "MissingParameter: channel is required", "announce it in chat"),
    "order_supplies": ({"item": "paper", "quantity": 2.5}, {"item": "paper", "quantity": 3}, "InvalidQuantity: quantity must be a whole number", "order office supplies"),
    "rent_car": ({"pickup": "next monday"}, {"pickup": "2026-12-07"}, "InvalidDate: pickup must be YYYY-MM-DD", "rent a car for the visit"),
    "file_expense": ({"amount": 42.1}, {"amount": 4210}, "InvalidAmount: amount must be integer cents", "file the expense report"),
    "add_contact": ({"name": "Ana"}, {"name": "Ana", "email": "ana@example.com"}, "MissingParameter: email is required", "save the new contact"),
}
GOALS = ["Plan the Friday offsite for the team", "Get everything ready for the client visit",
         "Sort out the end-of-month admin", "Organise the quarterly review", "Handle the new hire's first week"]


@dataclass
class Outcome:
    steps: int = 0
    failed: int = 0


def learn(hs: Any, agent_id: str) -> None:
    """One training task per tool: the naive call fails, the fixed one works; then reviewed."""
    from hindsight_xp import TrajectoryRecorder

    ids = []
    for tool, (naive, fixed, error, words) in TRAPS.items():
        with TrajectoryRecorder(hs, agent_id=agent_id, goal=f"Please {words}", tools=[tool]) as rec:
            rec.user_input(f"Please {words}")
            rec.tool_call(tool, naive, error=error)
            rec.tool_call(tool, fixed, result="ok")
        ids.append(rec.trajectory_id)
    for tid in ids:
        hs.wait_for_review(tid, timeout=60)


def names_fix(text: str, tool: str) -> bool:
    """Whether what the agent was told is about this tool's trap (names the tool)."""
    return f"`{tool}`" in text


def run_task(hs: Any, agent_id: str, goal: str, tools: list[str], mode: str) -> Outcome:
    out = Outcome()
    told = ""
    if mode == "recall":
        # the agent has every tool at hand; which three the task needs shows only as it goes
        told = hs.recall(goal, agent_id=agent_id, tools=list(TRAPS), top_k=3).advice
    for tool in tools:
        naive, fixed, _, _ = TRAPS[tool]
        warned = False
        if mode == "advise":
            warned = bool(hs.advise(tool, naive, goal=goal, agent_id=agent_id).warnings)
        if warned or (mode == "recall" and names_fix(told, tool)):
            out.steps += 1
        else:
            out.steps, out.failed = out.steps + 2, out.failed + 1
    return out


def part_one(hs: Any, agent_id: str, n_tasks: int, rng: random.Random) -> dict[str, dict[str, float]]:
    learn(hs, agent_id)
    tasks = [(rng.choice(GOALS), rng.sample(list(TRAPS), 3)) for _ in range(n_tasks)]
    results: dict[str, dict[str, float]] = {}
    for mode in ("none", "recall", "advise"):
        outs = [run_task(hs, agent_id, goal, tools, mode) for goal, tools in tasks]
        results[mode] = {"steps": sum(o.steps for o in outs) / len(outs), "failed": sum(o.failed for o in outs) / len(outs)}
    return results


RIGHT = ("When you call `pay_invoice`, set `amount` to a whole number (e.g. 1999), not a decimal number (e.g. 19.99): "
         "otherwise it fails with InvalidAmount.")  # fmt: skip
WRONG = ("When you call `pay_invoice`, set `amount` to a decimal number (e.g. 19.99), not a whole number (e.g. 1999): "
         "otherwise it fails with InvalidAmount.")  # fmt: skip


def part_two(hs: Any, agent_id: str, episodes: int, credit: bool) -> dict[str, Any]:
    from hindsight_xp import TrajectoryRecorder

    right = hs.write_experience("Paying a supplier invoice", advice=RIGHT, tools=["pay_invoice"], agent_id=agent_id).experience_id
    wrong = hs.write_experience("Paying a supplier invoice", advice=WRONG, tools=["pay_invoice"], agent_id=agent_id,
                                confidence=0.9).experience_id  # the planted one starts more trusted  # fmt: skip
    misled = 0
    for n in range(episodes):
        with TrajectoryRecorder(hs, agent_id=agent_id, goal="Pay the supplier invoice", tools=["pay_invoice"]) as rec:
            told = hs.recall("Pay the supplier invoice", agent_id=agent_id, tools=["pay_invoice"], top_k=2)
            if credit and told.hits:
                rec.attach_recall(told.recall_id)
            first = told.hits[0].experience.experience_id if told.hits else None
            if first == wrong:
                misled += 1
                rec.tool_call("pay_invoice", {"amount": 120.5}, error="InvalidAmount: amount must be integer cents")
                rec.outcome = "failure"
            else:
                rec.tool_call("pay_invoice", {"amount": 12050}, result="paid")
        hs.wait_for_review(rec.trajectory_id, timeout=60)
    end = {i: hs.get_experience(i) for i in (right, wrong)}
    return {"misled": misled, "episodes": episodes, "ids": (right, wrong),
            "wrong": (end[wrong].status, round(end[wrong].utility, 3), end[wrong].served, end[wrong].adopted),
            "right": (end[right].status, round(end[right].utility, 3), end[right].served, end[right].adopted)}  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.experience_reuse.advise_credit", description=__doc__.split("\n")[0])
    ap.add_argument("--tasks", type=int, default=40)
    ap.add_argument("--episodes", type=int, default=16)
    ap.add_argument("--embedder", default="hash", choices=["hash", "minilm"])
    ap.add_argument("--seed", type=int, default=3)
    args = ap.parse_args()

    from hindsight_xp import Hindsight

    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory(prefix="hindsight-advise-credit-") as data_dir, \
            Server(data_dir, {"HINDSIGHT_EMBEDDER": args.embedder, "HINDSIGHT_WORKER": "true",
                              "HINDSIGHT_WORKER_POLL_SECONDS": "0.05"}) as server:  # fmt: skip
        with Hindsight(server.url, admin_key=server.admin_key) as admin:
            key = admin.create_tenant("bench").api_key
        with Hindsight(server.url, key, timeout=60) as hs:
            t0 = time.perf_counter()
            one = part_one(hs, f"planner-{uuid.uuid4().hex[:6]}", args.tasks, rng)
            print(f"Part 1: {args.tasks} tasks of 3 tool calls over {len(TRAPS)} trapped tools ({args.embedder} embedder, "
                  f"{time.perf_counter() - t0:.0f} s)")  # fmt: skip
            print(f"{'condition':<14}{'steps/task':>12}{'failed calls/task':>20}")
            for mode, label in (("none", "no memory"), ("recall", "recall once"), ("advise", "advise")):
                print(f"{label:<14}{one[mode]['steps']:>12.2f}{one[mode]['failed']:>20.2f}")
            two = {c: part_two(hs, f"payer-{c}-{uuid.uuid4().hex[:6]}", args.episodes, c) for c in (False, True)}
            print(f"\nPart 2: {args.episodes} episodes, a planted wrong lesson beside the right one")
            print(f"{'condition':<14}{'misled':>8}  wrong lesson (status, utility, served, adopted)   right lesson")
            for c, label in ((False, "no feedback"), (True, "credit")):
                r = two[c]
                print(f"{label:<14}{r['misled']:>8}  {str(r['wrong']):<48}{r['right']}")
            # a week and a day later, the decay the server runs hourly
            with Hindsight(server.url, admin_key=server.admin_key) as admin:
                admin.decay(datetime.now(timezone.utc) + timedelta(days=8))
            print("after a decay as of 8 days later (status of the wrong / the right lesson):")
            for c, label in ((False, "no feedback"), (True, "credit")):
                right_id, wrong_id = two[c]["ids"]
                print(f"  {label:<12} wrong {hs.get_experience(wrong_id).status:<9} right {hs.get_experience(right_id).status}")


if __name__ == "__main__":
    main()
