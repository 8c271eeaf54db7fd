"""Lost updates and farmed credit, counted on the real embedded server over HTTP.

Each race sends an acknowledged forget and another write of the same lesson at once and counts
the forgets that did not stay done (the lesson not ``forgotten`` afterwards, though the forget
answered ``200 forgotten``):

- ``decay``: 150 lessons forgotten by 4 client threads while decays (each as of a later time,
  so each rewrites every active lesson) run back to back;
- ``feedback``: 100 tries, a feedback and a forget of a fresh lesson released by a barrier;
- ``restore``: 60 tries, a restore and a forget of a fresh archived lesson (archived by a
  lesson written to supersede it).

And the credit of a recall id:

- ``replay``: one recall id of agent ``bot-r`` attached by 20 successful runs of ``bot-r``:
  the lesson's utility (0.5 before; one success's credit takes it to about 0.6);
- ``cross-scope``: a recall id of agent ``bot-x`` attached by 4 failed runs of ``bot-y``: the
  status and utility of ``bot-x``'s lesson (it should not move).

``--before REF`` runs the same on a second server serving the code of git ref ``REF`` (exported
with ``git archive``) and prints both.

    .venv/bin/python -m bench.lost_updates [--before main] [--lessons 150] [--tries 100] [--restores 60]
"""
from __future__ import annotations

import argparse
import json
import tempfile
import threading
import time
import urllib.error
import urllib.request
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Callable

from bench._harness import Server, export_ref

TOOLS = ["get_weather", "ask_user"]


class Client:
    def __init__(self, url: str, key: str) -> None:
        self.url, self.key = url, key

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url + path, data=data, method=method,
                                     headers={"Authorization": f"Bearer {self.key}", "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=120) as resp:
                return resp.status, json.loads(resp.read() or b"null")
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read() or b"null")


def tenant(srv: Server, name: str) -> Client:
    admin = Client(srv.url, srv.admin_key)
    status, out = admin.call("POST", "/v1/tenants", {"name": f"{name}-{uuid.uuid4().hex[:6]}"})
    assert status == 201, out
    return Client(srv.url, out["api_key"])


def lesson(c: Client, agent_id: str | None = None, **kw: Any) -> str:
    n = uuid.uuid4().hex[:8]
    body = {"situation": f"Weather queries without a city ({n})", "lesson": "Ask for the city first.",
            "advice": "Call `ask_user` for the city before `get_weather`.", "tools": TOOLS, "agent_id": agent_id, **kw}
    status, out = c.call("POST", "/v1/experiences", body)
    assert status == 201, out
    return str(out["experience_id"])


def together(*work: Callable[[], Any]) -> None:
    barrier = threading.Barrier(len(work))
    threads = [threading.Thread(target=lambda fn=fn: (barrier.wait(), fn())) for fn in work]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)


def forget(c: Client, exp_id: str) -> None:
    status, out = c.call("DELETE", f"/v1/experiences/{exp_id}", {"reason": "wrong"})
    assert status == 200 and out["status"] == "forgotten", (status, out)


def undone(c: Client, ids: list[str]) -> int:
    return sum(c.call("GET", f"/v1/experiences/{i}")[1]["status"] != "forgotten" for i in ids)


def decay_race(srv: Server, lessons: int) -> int:
    c, admin = tenant(srv, "decay"), Client(srv.url, srv.admin_key)
    ids = [lesson(c) for _ in range(lessons)]
    done = threading.Event()

    def decays() -> None:
        step = 0
        while not done.is_set():
            step += 1
            as_of = (datetime.now(timezone.utc) + timedelta(hours=step)).isoformat()
            admin.call("POST", "/v1/maintenance/decay", {"as_of": as_of})

    def forgets(part: list[str]) -> Callable[[], None]:
        return lambda: [forget(c, i) for i in part]

    decayer = threading.Thread(target=decays)
    decayer.start()
    time.sleep(0.2)
    together(*(forgets(ids[k::4]) for k in range(4)))
    done.set()
    decayer.join(timeout=300)
    return undone(c, ids)


def pair_race(srv: Server, tries: int, name: str, prepare: Callable[[Client], str],
              other: Callable[[Client, str], Any]) -> int:
    c = tenant(srv, name)
    ids = []
    for _ in range(tries):
        exp_id = prepare(c)
        together(lambda: forget(c, exp_id), lambda: other(c, exp_id))
        ids.append(exp_id)
    return undone(c, ids)


def archived_lesson(c: Client) -> str:
    old = lesson(c)
    lesson(c, supersedes=[old])
    return old


def run(c: Client, agent_id: str, recall_id: str, outcome: str) -> str:
    tid = "tr-" + uuid.uuid4().hex[:10]
    status, out = c.call("POST", "/v1/trajectories", {"trajectory_id": tid, "agent_id": agent_id,
                                                      "goal": "Will it rain tomorrow?", "tools": TOOLS})
    assert status in (200, 201), out
    events = [{"event_id": "1", "type": "recall", "content": {"recall_id": recall_id}},
              {"event_id": "2", "type": "tool_call", "content": {"tool": "ask_user", "params": {"question": "Which city?"}, "result": "Lyon"}},
              {"event_id": "3", "type": "tool_call", "content": {"tool": "get_weather", "params": {"city": "Lyon"}, "result": "rain"}}]
    assert c.call("POST", f"/v1/trajectories/{tid}/events", {"events": events})[0] == 202
    assert c.call("POST", f"/v1/trajectories/{tid}/finalize", {"outcome": outcome})[0] == 202
    return tid


def reviewed(c: Client, tids: list[str], wait: float = 120.0) -> None:
    deadline = time.monotonic() + wait
    for tid in tids:
        while c.call("GET", f"/v1/trajectories/{tid}")[1]["status"] != "reviewed":
            if time.monotonic() > deadline:
                raise TimeoutError(f"trajectory {tid} not reviewed within {wait} s")
            time.sleep(0.05)


def recall_id(c: Client, agent_id: str, exp_id: str) -> str:
    status, out = c.call("POST", "/v1/recall", {"query": "Will it rain tomorrow? Which city?", "agent_id": agent_id,
                                                "tools": TOOLS, "top_k": 50})
    assert status == 200 and exp_id in [h["experience"]["experience_id"] for h in out["hits"]], out
    return str(out["recall_id"])


def replay(srv: Server, runs: int = 20) -> dict[str, Any]:
    c = tenant(srv, "replay")
    exp_id = lesson(c, agent_id="bot-r")
    rid = recall_id(c, "bot-r", exp_id)
    reviewed(c, [run(c, "bot-r", rid, "success") for _ in range(runs)])
    out = c.call("GET", f"/v1/experiences/{exp_id}")[1]
    return {"utility": out["utility"], "served": out.get("served")}


def cross_scope(srv: Server, runs: int = 4) -> dict[str, Any]:
    c = tenant(srv, "scope")
    exp_id = lesson(c, agent_id="bot-x")
    rid = recall_id(c, "bot-x", exp_id)
    reviewed(c, [run(c, "bot-y", rid, "failure") for _ in range(runs)])
    out = c.call("GET", f"/v1/experiences/{exp_id}")[1]
    return {"status": out["status"], "utility": out["utility"]}


def measure(root: Path | None, args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        env = {"HINDSIGHT_WORKER": "true", "HINDSIGHT_EMBEDDER": "hash"}
        with Server(str(Path(tmp) / "data"), env, root=root) as srv:
            return {
                f"decay racing {args.lessons} forgets: left not forgotten": decay_race(srv, args.lessons),
                f"feedback vs forget, {args.tries} tries: undone": pair_race(
                    srv, args.tries, "feedback", lesson, lambda c, i: c.call("POST", f"/v1/experiences/{i}/feedback", {"signal": "succeeded"})),
                f"restore vs forget, {args.restores} tries: undone": pair_race(
                    srv, args.restores, "restore", archived_lesson, lambda c, i: c.call("POST", f"/v1/experiences/{i}/restore")),
                "one recall id, 20 runs of its agent: lesson": replay(srv),
                "bot-x's recall id, 4 failed runs of bot-y: bot-x's lesson": cross_scope(srv),
            }


def main() -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.lost_updates")
    ap.add_argument("--before", help="a git ref whose server is measured too (e.g. main)")
    ap.add_argument("--lessons", type=int, default=150)
    ap.add_argument("--tries", type=int, default=100)
    ap.add_argument("--restores", type=int, default=60)
    args = ap.parse_args()
    sides: list[tuple[str, Path | None]] = [("this tree", None)]
    with tempfile.TemporaryDirectory() as tmp:
        if args.before:
            label = export_ref(args.before, Path(tmp) / "before")
            sides.insert(0, (f"before ({label})", Path(tmp) / "before"))
        results = {name: measure(root, args) for name, root in sides}
    keys = list(next(iter(results.values())))
    width = max(map(len, keys))
    print(f"{'':{width}}  " + "  ".join(f"{name:>28}" for name in results))
    for key in keys:
        print(f"{key:{width}}  " + "  ".join(f"{json.dumps(r[key]):>28}" for r in results.values()))


if __name__ == "__main__":
    main()
