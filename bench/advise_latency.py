"""Advise latency with 10,000 lessons in one tenant: the embedded server against the in-process call.

Usage: .venv/bin/python -m bench.advise_latency [--lessons 10000] [--tools 500] [--calls 300]

The data directory is seeded through the adapters (SQLite experience store + numpy index) with
lessons of every kind advise reads (a missing argument, a value shape, a tool to call first, a
tool to use instead, a call not to retry, lessons written by a person), spread over ``--tools``
tools and three agents. Then the real server process is started on it and the same advise calls
are timed, interleaved call by call so that noise on this shared machine hits both alike:

  http      POST /v1/advise on the server process (client: httpx keep-alive, 127.0.0.1)
  service   chalicelib.services.advise.advise in this process, on the same data
  http-health  GET /v1/health on the same server: the floor of a request through the server

Advise embeds nothing, so the server runs with the hash embedder (it only shapes the stored
vectors, which advise never reads). Every call also writes its recall id (the served lessons) to
SQLite, as in production. Half the calls break a lesson's check (a warning is expected), half
follow every lesson (nothing applies); the bench checks the answers say so.

Prints numbers only; it is not a pass/fail test. The target is p50 <= 15 ms over HTTP.
"""
from __future__ import annotations

import argparse
import random
import shutil
import tempfile
import time
from datetime import datetime, timezone

from bench._harness import Server, dumps, pct, settle
from bench.recall_latency import bulk_put

AGENTS = [None, "billing-bot", "ops-bot"]
PARAMS = ["city", "amount", "currency", "date", "channel", "branch", "region", "user_id", "limit", "query",
          "path", "email", "order_id", "sku", "quantity", "timezone", "locale", "bucket", "key", "ticket"]


def lesson_text(kind: str, tool: str, other: str, param: str, rng: random.Random) -> tuple[str, str]:
    """(advice, situation) of one lesson, in the reviewer's words or a person's."""
    if kind == "missing":
        return (f"When you call `{tool}`, set `{param}` to a value like `x{rng.randint(1, 99)}`: otherwise it fails "
                f"with MissingParameter: {param} is required.", f"Calling `{tool}` failed with MissingParameter.")
    if kind == "shape":
        return (f"When you call `{tool}`, set `{param}` to a whole number (e.g. 1999), not a decimal number "
                f"(e.g. 19.99): otherwise it fails with InvalidValue.", f"Calling `{tool}` failed with InvalidValue.")
    if kind == "order":
        return (f"Call `{other}` before `{tool}` and pass what it returns as `{param}`: calling `{tool}` first fails "
                f"with NotFound.", f"Calling `{tool}` failed with NotFound.")
    if kind == "swap":
        return (f"Use `{other}` instead of `{tool}` for this: `{tool}` fails with Gone.", f"Calling `{tool}` failed with Gone.")
    if kind == "retry":
        return (f"Do not retry `{tool}` with the same parameters after it fails with Timeout: change the parameters, "
                f"call a prerequisite tool, or ask the user.", f"`{tool}` kept failing with Timeout.")
    return (f"`{tool}` requires `{param}`; ask for it first.", f"Using {tool} for a customer request.")


def seed(deps, tenant_id: str, n: int, n_tools: int, rng: random.Random) -> list[dict]:
    """Store and index ``n`` lessons; returns, per tool, what its lessons check (for the calls)."""
    import numpy as np

    from chalicelib.domain.models import Experience
    from chalicelib.ports import IndexEntry

    now = datetime.now(timezone.utc)
    tools = [f"svc{i // 10}.op_{i}" for i in range(n_tools)]
    kinds = ["missing", "shape", "order", "swap", "retry", "person"]
    catalogue: list[dict] = []
    exps, entries = [], []
    for i in range(n):
        tool = tools[i % n_tools]
        kind = kinds[(i // n_tools) % len(kinds)]
        if kind == "swap" and (i % n_tools) % 5:  # a tool to use instead is known for one tool in five
            kind = "person"
        param = PARAMS[(i * 7 + i // n_tools) % len(PARAMS)]
        other = tools[(i * 13 + 1) % n_tools]
        advice, situation = lesson_text(kind, tool, other, param, rng)
        exp = Experience(
            tenant_id=tenant_id, experience_id=f"exp_{i:06d}", situation=situation, action="", result="", lesson=advice,
            advice=advice, created_at=now, updated_at=now, renewed_at=now, tools=[tool] if kind != "order" else [tool, other],
            agent_id=AGENTS[i % len(AGENTS)], error_class="InvalidValue" if kind == "shape" else None,
            utility=round(rng.uniform(0.3, 0.8), 3), confidence=0.6,
        )
        exps.append(exp)
        vec = np.zeros(deps.embedder.dim, dtype=np.float32)
        vec[i % deps.embedder.dim] = 1.0
        entries.append(IndexEntry(exp.experience_id, vec, exp.agent_id, None, tuple(exp.tools), None, (), exp.search_text()))
        catalogue.append({"tool": tool, "kind": kind, "param": param, "agent_id": exp.agent_id})
    bulk_put(deps.experiences, exps)
    deps.index.upsert(tenant_id, entries)
    return catalogue


def make_calls(catalogue: list[dict], count: int, rng: random.Random) -> list[dict]:
    """Half break a missing-argument or shape lesson of the tool, half follow every lesson it has."""
    by_tool: dict[str, list[dict]] = {}
    for c in catalogue:
        by_tool.setdefault(c["tool"], []).append(c)
    checkable = [c for c in catalogue if c["kind"] in ("missing", "shape") and c["agent_id"] is None]
    calls = []
    for i in range(count):
        target = rng.choice(checkable)
        lessons = [c for c in by_tool[target["tool"]] if c["agent_id"] is None]
        # a call that gives every argument its tool's lessons name, each as a whole number
        params: dict = {c["param"]: 1200 for c in lessons if c["kind"] in ("missing", "shape", "order", "person")}
        breaks = i % 2 == 0
        if breaks:
            if target["kind"] == "missing":
                params.pop(target["param"], None)
            else:
                params[target["param"]] = 12.5
        # "use X instead" warns before every call of its tool, whatever the arguments
        swapped = any(c["kind"] == "swap" for c in lessons)
        calls.append({"body": {"tool": target["tool"], "params": params, "goal": "Handle the customer's request",
                               "top_k": 5}, "warns": breaks or swapped})  # fmt: skip
    return calls


def main() -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.advise_latency", description=__doc__.split("\n")[0])
    ap.add_argument("--lessons", type=int, default=10_000)
    ap.add_argument("--tools", type=int, default=500)
    ap.add_argument("--calls", type=int, default=300)
    ap.add_argument("--warmup", type=int, default=30)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()

    import httpx

    from chalicelib import container
    from chalicelib.services import advise as advise_svc
    from chalicelib.services import tenants
    from chalicelib.settings import Settings

    rng = random.Random(args.seed)
    data_dir = tempfile.mkdtemp(prefix="hindsight-advise-bench-")
    try:
        settings = Settings(data_dir=data_dir, embedder="hash", admin_key="hsadmin_bench", worker=False,
                            rate_limit_per_second=0)  # fmt: skip
        deps = container.build_embedded(settings)
        tenant, key = tenants.create_tenant(deps, "bench")
        t0 = time.perf_counter()
        catalogue = seed(deps, tenant.tenant_id, args.lessons, args.tools, rng)
        print(f"seeded {args.lessons} lessons over {args.tools} tools in {time.perf_counter() - t0:.1f} s", flush=True)
        calls = make_calls(catalogue, args.calls, rng)
        times: dict[str, list[float]] = {"http": [], "service": [], "http-health": []}
        wrong = 0
        with Server(data_dir, {"HINDSIGHT_EMBEDDER": "hash"}) as server, \
                httpx.Client(base_url=server.url, trust_env=False, timeout=30.0,
                             headers={"content-type": "application/json", "authorization": f"Bearer {key}"}) as client:
            for c in calls[: args.warmup]:
                client.post("/v1/advise", content=dumps(c["body"]))
                advise_svc.advise(deps, tenant.tenant_id, c["body"]["tool"], c["body"]["params"], goal=c["body"]["goal"])
            pids = [server.proc.pid]
            pc = time.perf_counter
            for c in calls:
                body = dumps(c["body"])
                settle(pids)
                t = pc()
                r = client.post("/v1/advise", content=body)
                times["http"].append((pc() - t) * 1000)
                if r.status_code != 200:
                    raise RuntimeError(f"advise answered {r.status_code}: {r.text[:300]}")
                if bool(r.json()["warnings"]) != c["warns"]:
                    wrong += 1
                settle(pids)
                t = pc()
                client.get("/v1/health")
                times["http-health"].append((pc() - t) * 1000)
                settle(pids)
                t = pc()
                answer = advise_svc.advise(deps, tenant.tenant_id, c["body"]["tool"], c["body"]["params"],
                                           goal=c["body"]["goal"], top_k=5)  # fmt: skip
                times["service"].append((pc() - t) * 1000)
                if bool(answer.warnings) != c["warns"]:
                    wrong += 1
        print(f"\nadvise with {args.lessons} lessons in the tenant ({args.tools} tools), {len(calls)} calls each:")
        print(f"{'method':<10}{'p50 ms':>10}{'p90 ms':>10}{'p99 ms':>10}")
        for m, xs in times.items():
            print(f"{m:<10}{pct(xs, 50):>10.2f}{pct(xs, 90):>10.2f}{pct(xs, 99):>10.2f}")
        print(f"http / service (p50): {pct(times['http'], 50) / pct(times['service'], 50):.2f}x; "
              f"http - http-health (p50): {pct(times['http'], 50) - pct(times['http-health'], 50):.2f} ms; "
              f"target http p50 <= 15 ms: {'met' if pct(times['http'], 50) <= 15 else 'NOT met'}")
        print(f"answers whose warnings did not match the planted situation: {wrong} of {2 * len(calls)} "
              f"({sum(c['warns'] for c in calls)} of {len(calls)} calls should warn)")
    finally:
        container.set_deps(None)
        shutil.rmtree(data_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
