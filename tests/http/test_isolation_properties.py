"""Tenant isolation and recall scope, as a property: random sequences of HTTP calls by three tenants,
several agents and users, checked on every response against a reference model.

The state machine drives the real routes (``chalice.test.Client`` on ``app``) and runs once per
backend: ``embedded`` (SQLite + numpy index) and ``aws`` (DynamoDB on the session's moto server +
the OpenSearch node). What it holds on every response:

* no response names an experience of another tenant, or carries another tenant's marker words
  (each tenant writes its own random marker into every text, tool name and trajectory id);
* another tenant's ids answer 404, never 403 or 200, and a write through them changes nothing;
* recall for (agent A, user U) returns only active experiences whose agent is A or none and whose
  user is U or none -- a recall that names no agent (no user) sees only the experiences with no agent
  (no user): the contract's "a recall for agent A sees experiences of agent A and those with no
  agent", with ``None`` as the reader; the tools and task type filters hold; a recall wide enough
  to see everything (top_k 50, few lessons) returns every visible manual lesson;
* forgotten experiences never come back (not in recall, not as ``active`` after a later review),
  also when a decay, feedback, restore or credit of the same lesson races the forget (a barrier
  releases both at once);
* one recall id credits once, the first run of its scope that attaches it, never another agent's run;
* get, list (every filter, every page) and trajectory reads equal the model exactly.

What a review learns is the reviewer's business, not the model's: the model takes the lessons a
reviewed trajectory names, checks their scope (the trajectory's), and from then on checks every read
of them; a review may only archive an active lesson, superseded by one of the same scope.

Budget: a fixed number of examples, derandomized, so CI explores the same sequences on every run
and a failure is reproducible by running the test again (hypothesis prints the falsifying steps).
``HINDSIGHT_PROPERTY_EXAMPLES=N`` runs N random (not derandomized) examples for a longer local soak
(250 of them found a forgotten lesson brought back to active by its trajectory's full review).
"""
from __future__ import annotations

import json
import os
import threading
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any, Callable

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, rule, run_state_machine_as_test

import app as app_module
from chalicelib import container
from chalicelib.domain.errors import Conflict
from chalicelib.domain.models import Event, Trajectory
from chalicelib.services import credit as credit_service
from chalicelib.services import experiences as experiences_service
from chalicelib.services import maintenance
from chalicelib.services.recall_ids import remember
from chalicelib.settings import Settings
from devtools.gateway_client import GatewayClient
from tests.support.http_api import ADMIN, Api

pytestmark = pytest.mark.slow  # a state machine of 10-50 examples: seconds to minutes

AGENTS = ("planner", "coder")
USERS = ("alice", "bob")
TASK_TYPES = ("query", "operation")
SHARED_TOOL = "http_get"  # a tool every tenant has: the index sees the same name in every partition
TRAJ_POOL = ("tr-1", "tr-2")  # client-chosen ids every tenant uses: the same id, three trajectories
EXP_POOL = ("exp-1", "exp-2")
SIGNALS = ("adopted", "ignored", "succeeded", "failed")
CHUNKS = ("ask", "think", "fail", "fail", "fix", "complain")  # failures twice as often: they start reviews
WIDE = 50  # top_k of an exhaustive recall: the service then takes 200 candidates, more than a tenant has

SOAK = int(os.environ.get("HINDSIGHT_PROPERTY_EXAMPLES", "0"))
# Examples per backend in the default run: ~15 s on embedded, ~30 s on aws (moto answers a DynamoDB
# call in ~35 ms), so the whole property stays under a minute in CI; HINDSIGHT_PROPERTY_EXAMPLES
# runs more (a soak).
EXAMPLES = {"embedded": 50, "aws": 4}


def run_settings(backend: str) -> settings:
    return settings(
        max_examples=SOAK or EXAMPLES[backend],
        stateful_step_count=50,
        deadline=None,  # one step is a few HTTP calls on a shared, loaded machine
        derandomize=not SOAK,
        print_blob=True,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


# --- the reference model ------------------------------------------------------------------------


@dataclass
class Exp:
    experience_id: str
    agent_id: str | None
    user_id: str | None
    status: str = "active"
    tools: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    task_type: str | None = None
    text: dict[str, str] | None = None  # situation/lesson/advice of a manual write; None: learned


@dataclass
class Traj:
    trajectory_id: str
    agent_id: str
    user_id: str | None
    task_type: str | None
    status: str = "open"
    outcome: str | None = None
    events: int = 0
    experience_ids: list[str] = field(default_factory=list)


@dataclass
class Tenant:
    index: int
    key: str
    tenant_id: str
    marker: str
    experiences: dict[str, Exp] = field(default_factory=dict)
    trajectories: dict[str, Traj] = field(default_factory=dict)
    counter: int = 0

    def word(self) -> str:
        self.counter += 1
        return f"{self.marker}w{self.counter}"

    @property
    def tools(self) -> tuple[str, ...]:
        return (SHARED_TOOL, f"{self.marker}_search", f"{self.marker}_lookup")


def visible(exp: Exp, agent_id: str | None, user_id: str | None) -> bool:
    """The contract's scope rule, with ``None`` (no agent / no user named) as a reader of its own."""
    return exp.agent_id in (None, agent_id) and exp.user_id in (None, user_id)


def passes_filters(exp: Exp, tools: list[str], task_type: str | None) -> bool:
    """IndexFilter's rules: a lesson that names tools must share one with the query's; a lesson of
    another task type is left out (one with no task type is not)."""
    if tools and exp.tools and not set(tools) & set(exp.tools):
        return False
    return task_type is None or exp.task_type in (None, task_type)


def experience_ids_in(body: Any) -> set[str]:
    """Every experience id a response body names, wherever it sits."""
    found: set[str] = set()
    if isinstance(body, dict):
        for key, value in body.items():
            if key in ("experience_id", "supersedes", "superseded_by") and isinstance(value, str):
                found.add(value)
            elif key in ("experience_ids", "superseded") and isinstance(value, list):
                found.update(v for v in value if isinstance(v, str))
            else:
                found |= experience_ids_in(value)
    elif isinstance(body, list):
        for value in body:
            found |= experience_ids_in(value)
    return found


class World:
    """What outlives one example: the backend, and every tenant any example created on it (the
    tenants of earlier examples are still in the stores, so they are foreign data too)."""

    def __init__(self, api: Api, name: str) -> None:
        self.api = api
        self.name = name
        self.tenants: list[Tenant] = []
        self.calls = 0


# --- the state machine --------------------------------------------------------------------------


class IsolationMachine(RuleBasedStateMachine):
    world: World  # bound per backend by the test

    def __init__(self) -> None:
        super().__init__()
        self.tenants: list[Tenant] = []

    @initialize(data=st.data())
    def three_tenants(self, data) -> None:
        for i in range(3):
            resp = self.world.api.call("POST", "/v1/tenants", ADMIN, {"name": f"prop-{i}-{uuid.uuid4().hex[:8]}"})  # one store serves every example
            assert resp.status_code == 201, resp.body
            marker = "mk" + uuid.uuid4().hex[:10]
            tenant = Tenant(i, resp.json_body["api_key"], resp.json_body["tenant_id"], marker)
            self.tenants.append(tenant)
            self.world.tenants.append(tenant)
        # every tenant has a task under way from the start, all three under the same client-chosen id:
        # hypothesis enables a random subset of the rules per example, and the trajectory rules
        # (events, finalize, reviews) should not depend on start_trajectory being among them
        for tenant in self.tenants:
            self.start(tenant, data, TRAJ_POOL[0])

    # --- the HTTP call and the checks every response gets -------------------------------------

    def call(self, tenant: Tenant, method: str, path: str, body: Any = None):
        resp = self.world.api.call(method, path, tenant.key, body)
        self.world.calls += 1
        assert resp.status_code not in (403, 500), (method, path, resp.status_code, resp.body)
        text = resp.body.decode() if isinstance(resp.body, bytes) else str(resp.body)
        # an error may echo the id the caller sent (another tenant's, on purpose): that tells it nothing
        echoed = text
        for segment in path.split("?")[0].split("/"):
            if len(segment) > 3:
                echoed = echoed.replace(segment, "")
        for other in self.world.tenants:
            if other is tenant:
                continue
            assert other.marker not in echoed, f"{method} {path} by tenant {tenant.index} shows tenant {other.index}'s data: {text[:2000]}"
            assert other.tenant_id not in echoed, f"{method} {path} names tenant {other.index}: {text[:2000]}"
        try:
            body_json = json.loads(text) if text else None
        except ValueError:
            body_json = None
        named = experience_ids_in(body_json)
        unknown = named - set(tenant.experiences)
        # a review may name lessons the model has not registered yet; they must not be another tenant's
        for other in self.world.tenants:
            if other is not tenant:
                leaked = unknown & (set(other.experiences) - set(EXP_POOL))
                assert not leaked, f"{method} {path} by tenant {tenant.index} names tenant {other.index}'s {leaked}"
        return resp, body_json

    def expect_404(self, tenant: Tenant, method: str, path: str, body: Any = None) -> None:
        resp, body_json = self.call(tenant, method, path, body)
        assert resp.status_code == 404, (method, path, resp.status_code, resp.body)
        assert body_json["error"]["code"] == "not_found", body_json

    def check_experience(self, tenant: Tenant, out: dict) -> None:
        exp = tenant.experiences[out["experience_id"]]
        got = {k: out[k] for k in ("agent_id", "user_id", "status", "task_type")}
        assert got == {"agent_id": exp.agent_id, "user_id": exp.user_id, "status": exp.status, "task_type": exp.task_type}, (got, exp)
        if exp.text is not None:
            assert {k: out[k] for k in exp.text} == exp.text
            assert sorted(out["tools"]) == sorted(exp.tools) and sorted(out["tags"]) == sorted(exp.tags)

    # --- draws ----------------------------------------------------------------------------------

    @staticmethod
    def scope(data) -> tuple[str | None, str | None]:
        return data.draw(st.sampled_from((None, *AGENTS)), "agent_id"), data.draw(st.sampled_from((None, *USERS)), "user_id")

    def tenant(self, data) -> Tenant:
        return data.draw(st.sampled_from(self.tenants), "tenant")

    def some_experience_id(self, data, tenant: Tenant) -> str:
        """Mostly its own ids; else another tenant's, a pool id, or one nobody has."""
        own = sorted(tenant.experiences)
        foreign = sorted({i for t in self.tenants if t is not tenant for i in t.experiences} - set(own))
        mine = st.sampled_from(own) if own else st.nothing()
        theirs = st.sampled_from(foreign) if foreign else st.nothing()
        return data.draw(st.one_of(mine, mine, theirs, st.sampled_from((*EXP_POOL, "exp_" + "0" * 24))), "experience_id")

    def some_trajectory_id(self, data, tenant: Tenant) -> str:
        own = sorted(tenant.trajectories)
        foreign = sorted({i for t in self.tenants if t is not tenant for i in t.trajectories} - set(own))
        mine = st.sampled_from(own) if own else st.nothing()
        theirs = st.sampled_from(foreign) if foreign else st.nothing()
        return data.draw(st.one_of(mine, mine, mine, theirs, st.just("tr-nobody")), "trajectory_id")

    # --- experiences ----------------------------------------------------------------------------

    @rule(data=st.data())
    def write_experience(self, data) -> None:
        t = self.tenant(data)
        agent_id, user_id = self.scope(data)
        word = t.word()
        tools = data.draw(st.lists(st.sampled_from(t.tools), unique=True, max_size=2), "tools")
        tags = data.draw(st.lists(st.sampled_from(("billing", "infra", t.marker)), unique=True, max_size=2), "tags")
        task_type = data.draw(st.sampled_from((None, *TASK_TYPES)), "task_type")
        client_id = data.draw(st.sampled_from((None, None, *EXP_POOL)), "client_id")
        text = {
            "situation": f"When the {word} job of {t.marker} stalls",
            "lesson": f"The {word} job needs a warm cache",
            "advice": f"Warm the cache before you run {word}.",
        }
        body = {**text, "agent_id": agent_id, "user_id": user_id, "tools": tools, "tags": tags, "task_type": task_type}
        if client_id:
            body["experience_id"] = client_id
        resp, out = self.call(t, "POST", "/v1/experiences", body)
        if client_id in t.experiences:  # idempotent: the stored one, unchanged
            assert resp.status_code == 200, resp.body
            self.check_experience(t, out)
            return
        assert resp.status_code == 201, resp.body
        assert client_id is None or out["experience_id"] == client_id
        t.experiences[out["experience_id"]] = Exp(
            out["experience_id"], agent_id, user_id, "active", tools, tags, task_type, text
        )
        self.check_experience(t, out)

    @rule(data=st.data())
    def get_experience(self, data) -> None:
        t = self.tenant(data)
        exp_id = self.some_experience_id(data, t)
        if exp_id not in t.experiences:
            self.expect_404(t, "GET", f"/v1/experiences/{exp_id}")
            return
        resp, out = self.call(t, "GET", f"/v1/experiences/{exp_id}")
        assert resp.status_code == 200, resp.body
        self.check_experience(t, out)

    @rule(data=st.data())
    def list_experiences(self, data) -> None:
        t = self.tenant(data)
        agent_id = data.draw(st.sampled_from((None, *AGENTS)), "agent filter")
        status = data.draw(st.sampled_from((None, "active", "archived", "forgotten")), "status filter")
        limit = data.draw(st.integers(1, 4), "limit")
        query = "&".join(f"{k}={v}" for k, v in (("agent_id", agent_id), ("status", status), ("limit", limit)) if v)
        items, cursor, pages = [], None, 0
        while True:
            resp, out = self.call(t, "GET", f"/v1/experiences?{query}" + (f"&cursor={cursor}" if cursor else ""))
            assert resp.status_code == 200, resp.body
            assert len(out["items"]) <= limit
            items += out["items"]
            cursor, pages = out["cursor"], pages + 1
            if not cursor:
                break
            assert pages <= 100, "the cursor never ends"
        ids = [i["experience_id"] for i in items]
        assert len(ids) == len(set(ids)), f"a page repeats an item: {ids}"
        expected = {
            e.experience_id for e in t.experiences.values()
            if (agent_id is None or e.agent_id == agent_id) and (status is None or e.status == status)
        }
        assert set(ids) == expected, (agent_id, status, sorted(ids), sorted(expected))
        stamps = [i["created_at"] for i in items]
        assert stamps == sorted(stamps, reverse=True), "newest first"
        for item in items:
            self.check_experience(t, item)

    @rule(data=st.data())
    def forget(self, data) -> None:
        t = self.tenant(data)
        exp_id = self.some_experience_id(data, t)
        if exp_id not in t.experiences:
            self.expect_404(t, "DELETE", f"/v1/experiences/{exp_id}", {"reason": "property test"})
            return
        resp, out = self.call(t, "DELETE", f"/v1/experiences/{exp_id}", {"reason": "property test"})
        assert resp.status_code == 200, resp.body
        t.experiences[exp_id].status = "forgotten"
        self.check_experience(t, out)

    @rule(data=st.data())
    def feedback(self, data) -> None:
        t = self.tenant(data)
        exp_id = self.some_experience_id(data, t)
        signal = data.draw(st.sampled_from(SIGNALS), "signal")
        path = f"/v1/experiences/{exp_id}/feedback"
        if exp_id not in t.experiences:
            self.expect_404(t, "POST", path, {"signal": signal})
            return
        exp = t.experiences[exp_id]
        resp, out = self.call(t, "POST", path, {"signal": signal})
        if exp.status == "forgotten":
            assert resp.status_code == 409, resp.body
            return
        assert resp.status_code == 200, resp.body
        # feedback may archive an active lesson (its keep score fell); nothing brings one back
        allowed = {"active", "archived"} if exp.status == "active" else {exp.status}
        assert out["status"] in allowed, (exp.status, out["status"])
        exp.status = out["status"]
        self.check_experience(t, out)

    # --- races with a forget, and credit bound to its recall (the use cases, in threads) ----------

    @rule(data=st.data())
    def race_a_forget(self, data) -> None:
        """A forget and another write of the same lesson, released together by a barrier: the
        forget is answered, so it stays done (a blind write of the copy read before it undid it)."""
        t = self.tenant(data)
        own = sorted(i for i, e in t.experiences.items() if e.status != "forgotten")
        if not own:
            return
        exp_id = data.draw(st.sampled_from(own), "raced experience")
        racer = data.draw(st.sampled_from(("decay", "feedback", "restore", "credit")), "racer")
        deps, exp = self.world.api.deps, t.experiences[exp_id]
        read = deps.experiences.get(t.tenant_id, exp_id)
        rid = remember(deps, t.tenant_id, [exp_id], agent_id=exp.agent_id, user_id=exp.user_id)
        run = Trajectory(tenant_id=t.tenant_id, trajectory_id=f"race-{t.word()}", agent_id=exp.agent_id or AGENTS[0],
                         user_id=exp.user_id, goal="race", created_at=read.created_at, updated_at=read.created_at,
                         outcome="success")
        others = {
            "decay": lambda: maintenance.decay_lesson(deps, read, deps.clock.now() + timedelta(days=90)),
            "feedback": lambda: experiences_service.feedback(deps, t.tenant_id, exp_id, "failed"),
            "restore": lambda: experiences_service.restore(deps, t.tenant_id, exp_id),
            "credit": lambda: credit_service.credit_trajectory(deps, run, [recall_event(rid)]),
        }
        forgotten: list[str] = []
        together(lambda: forgotten.append(experiences_service.forget(deps, t.tenant_id, exp_id, "raced").status.value),
                 others[racer])
        assert forgotten == ["forgotten"]
        exp.status = "forgotten"
        resp, out = self.call(t, "GET", f"/v1/experiences/{exp_id}")
        assert resp.status_code == 200 and out["status"] == "forgotten", f"{racer} undid a forget: {out}"

    @rule(data=st.data())
    def replay_a_recall_id(self, data) -> None:
        """One recall id attached by several runs of its scope and by another agent's: it credits
        the first of its scope once, nothing else."""
        t = self.tenant(data)
        own = sorted(i for i, e in t.experiences.items() if e.status == "active" and e.agent_id is not None)
        if not own:
            return
        exp_id = data.draw(st.sampled_from(own), "credited experience")
        deps, exp = self.world.api.deps, t.experiences[exp_id]
        before = deps.experiences.get(t.tenant_id, exp_id)
        rid = remember(deps, t.tenant_id, [exp_id], agent_id=exp.agent_id, user_id=exp.user_id)
        stranger = next(a for a in AGENTS if a != exp.agent_id)
        runs = [(exp.agent_id, "success")] * data.draw(st.integers(1, 3), "replays") + [(stranger, "failure")]
        for agent_id, outcome in data.draw(st.permutations(runs), "order"):
            run = Trajectory(tenant_id=t.tenant_id, trajectory_id=f"replay-{t.word()}", agent_id=agent_id,
                             user_id=exp.user_id, goal="replay", created_at=before.created_at,
                             updated_at=before.created_at, outcome=outcome)
            credit_service.credit_trajectory(deps, run, [recall_event(rid)])
        after = deps.experiences.get(t.tenant_id, exp_id)
        assert after.served == before.served + 1, (before.served, after.served)
        assert after.credited[-1:] != [] and after.status.value == "active"  # the stranger's failure counted for nothing

    # --- recall -----------------------------------------------------------------------------------

    @rule(data=st.data())
    def recall(self, data) -> None:
        t = self.tenant(data)
        agent_id, user_id = self.scope(data)
        tools = data.draw(st.lists(st.sampled_from(t.tools), unique=True, max_size=2), "tools")
        task_type = data.draw(st.sampled_from((None, *TASK_TYPES)), "task_type")
        tags = data.draw(st.lists(st.sampled_from(("billing", "infra")), unique=True, max_size=1), "tags")
        others = [o for o in self.tenants if o is not t]
        words = [t.marker, f"{t.marker}w1", *(o.marker for o in others), *(f"{o.marker}w1" for o in others)]
        query = data.draw(st.sampled_from(words + ["warm the cache", "search failed with InvalidCode"]), "query")
        top_k = data.draw(st.sampled_from((WIDE, 1, 3)), "top_k")
        body = {"query": f"How do I run {query}?", "tools": tools, "tags": tags, "top_k": top_k}
        body |= {k: v for k, v in (("agent_id", agent_id), ("user_id", user_id), ("task_type", task_type)) if v}
        resp, out = self.call(t, "POST", "/v1/recall", body)
        assert resp.status_code == 200, resp.body
        hits = [h["experience"] for h in out["hits"]]
        assert len(hits) <= top_k
        for hit in hits:
            exp = t.experiences.get(hit["experience_id"])
            assert exp is not None, f"recall returned an experience the tenant never had: {hit['experience_id']}"
            assert exp.status == "active", f"recall returned a {exp.status} experience {exp.experience_id}"
            assert visible(exp, agent_id, user_id), f"recall for ({agent_id}, {user_id}) returned scope ({exp.agent_id}, {exp.user_id})"
            assert passes_filters(exp, tools, task_type), (tools, task_type, exp)
            self.check_experience(t, hit)
        if top_k == WIDE:
            seen = {h["experience_id"] for h in hits}
            missing = [
                e.experience_id for e in t.experiences.values()
                if e.text is not None and e.status == "active" and visible(e, agent_id, user_id)
                and passes_filters(e, tools, task_type) and e.experience_id not in seen
            ]
            assert not missing, f"a wide recall for ({agent_id}, {user_id}, {tools}, {task_type}) misses visible {missing}"

    # --- trajectories ---------------------------------------------------------------------------

    @rule(data=st.data())
    def start_trajectory(self, data) -> None:
        t = self.tenant(data)
        traj_id = data.draw(st.sampled_from((*TRAJ_POOL, "fresh")), "trajectory_id")
        self.start(t, data, f"tr-{t.word()}" if traj_id == "fresh" else traj_id)

    def start(self, t: Tenant, data, traj_id: str) -> None:
        agent_id = data.draw(st.sampled_from(AGENTS), "agent_id")
        user_id = data.draw(st.sampled_from((None, *USERS)), "user_id")
        task_type = data.draw(st.sampled_from((None, *TASK_TYPES)), "task_type")
        body = {"trajectory_id": traj_id, "agent_id": agent_id, "user_id": user_id, "task_type": task_type,
                "goal": f"Serve the {t.marker} request", "tools": list(t.tools)}
        resp, out = self.call(t, "POST", "/v1/trajectories", body)
        if traj_id in t.trajectories:  # idempotent: the stored one, whatever this call said
            assert resp.status_code == 200, resp.body
        else:
            assert resp.status_code == 201, resp.body
            t.trajectories[traj_id] = Traj(traj_id, agent_id, user_id, task_type)
        self.check_trajectory(t, out)

    def events(self, t: Tenant, traj: Traj, chunks: list[str]) -> list[dict]:
        m, out = t.marker, []
        for chunk in chunks:
            if chunk == "ask":
                out.append({"type": "user_input", "content": {"text": f"Please serve the {m} request"}})
            elif chunk == "think":
                out.append({"type": "llm_reasoning", "content": {"text": f"I should search {m} first"}})
            elif chunk == "fail":
                out.append({"type": "tool_call", "content": {
                    "tool": f"{m}_search", "params": {"code": "x"}, "status": "error",
                    "error": f"InvalidCode: {m}_search needs a code from {m}_lookup"}})
            elif chunk == "fix":
                out.append({"type": "tool_call", "content": {"tool": f"{m}_lookup", "params": {"name": m}, "result": "C1"}})
                out.append({"type": "tool_call", "content": {"tool": f"{m}_search", "params": {"code": "C1"}, "result": "ok"}})
            else:
                out.append({"type": "feedback", "content": {"text": f"That is not what {m} wanted", "sentiment": "negative"}})
        for event in out:
            traj.events += 1
            event["event_id"] = f"ev{traj.events}"
        return out

    @rule(data=st.data())
    def append_events(self, data) -> None:
        t = self.tenant(data)
        traj_id = self.some_trajectory_id(data, t)
        chunks = data.draw(st.lists(st.sampled_from(CHUNKS), min_size=1, max_size=4), "chunks")
        path = f"/v1/trajectories/{traj_id}/events"
        traj = t.trajectories.get(traj_id)
        if traj is None:
            self.expect_404(t, "POST", path, {"events": [{"event_id": "e1", "type": "user_input", "content": {"text": "hello"}}]})
            return
        before = traj.events
        events = self.events(t, traj, chunks)
        resp, out = self.call(t, "POST", path, {"events": events})
        if traj.status != "open":
            traj.events = before
            assert resp.status_code == 409, resp.body
            return
        assert resp.status_code == 202, resp.body
        assert out == {"accepted": len(events), "duplicates": 0}
        if data.draw(st.booleans(), "the worker runs now"):  # a review of an anomaly while the task runs
            self.run_reviews()

    @rule(data=st.data())
    def finalize(self, data) -> None:
        t = self.tenant(data)
        traj_id = self.some_trajectory_id(data, t)
        outcome = data.draw(st.sampled_from(("success", "failure", "partial")), "outcome")
        path = f"/v1/trajectories/{traj_id}/finalize"
        traj = t.trajectories.get(traj_id)
        if traj is None:
            self.expect_404(t, "POST", path, {"outcome": outcome})
            return
        resp, out = self.call(t, "POST", path, {"outcome": outcome})
        if traj.status == "open":
            assert resp.status_code == 202, resp.body
            traj.status, traj.outcome = "finalized", outcome
        elif traj.outcome == outcome:
            assert resp.status_code == 202, resp.body  # a repeat is a no-op
        else:
            assert resp.status_code == 409, resp.body
            return
        self.check_trajectory(t, out)
        if data.draw(st.booleans(), "the worker runs now"):
            self.run_reviews()

    @rule(data=st.data())
    def get_trajectory(self, data) -> None:
        t = self.tenant(data)
        traj_id = self.some_trajectory_id(data, t)
        if traj_id not in t.trajectories:
            self.expect_404(t, "GET", f"/v1/trajectories/{traj_id}")
            return
        resp, out = self.call(t, "GET", f"/v1/trajectories/{traj_id}")
        assert resp.status_code == 200, resp.body
        self.check_trajectory(t, out)

    def check_trajectory(self, t: Tenant, out: dict) -> None:
        traj = t.trajectories[out["trajectory_id"]]
        got = {k: out[k] for k in ("agent_id", "user_id", "task_type", "status", "outcome", "event_count")}
        want = {"agent_id": traj.agent_id, "user_id": traj.user_id, "task_type": traj.task_type,
                "status": traj.status, "outcome": traj.outcome, "event_count": traj.events}
        assert got == want, (got, want)
        assert set(traj.experience_ids) <= set(out["experience_ids"]), "a trajectory forgot a lesson it named"

    # --- the review worker ------------------------------------------------------------------------

    @rule()
    def run_reviews(self) -> None:
        if not self.world.api.run_reviews():
            return
        for t in self.tenants:
            self.learn_reviews(t)

    def learn_reviews(self, t: Tenant) -> None:
        """Register the lessons reviews named (their scope: the trajectory's), then reconcile every
        status change a review may make: only active -> archived, superseded by a lesson of the same
        scope. A forgotten or archived lesson never turns active again."""
        for traj in t.trajectories.values():
            resp, out = self.call(t, "GET", f"/v1/trajectories/{traj.trajectory_id}")
            assert resp.status_code == 200, resp.body
            if traj.status == "finalized":
                assert out["status"] == "reviewed", out
                traj.status = "reviewed"
            for exp_id in out["experience_ids"]:
                if exp_id not in t.experiences:
                    got, exp = self.call(t, "GET", f"/v1/experiences/{exp_id}")
                    assert got.status_code == 200, got.body
                    t.experiences[exp_id] = Exp(exp_id, exp["agent_id"], exp["user_id"], exp["status"],
                                                exp["tools"], exp["tags"], exp["task_type"])
                exp = t.experiences[exp_id]
                assert (exp.agent_id, exp.user_id) == (traj.agent_id, traj.user_id), "a lesson left its trajectory's scope"
            traj.experience_ids = list(out["experience_ids"])
            self.check_trajectory(t, out)
        resp, out = self.call(t, "GET", "/v1/experiences?limit=200")
        assert resp.status_code == 200 and out["cursor"] is None, resp.body
        listed = {i["experience_id"]: i for i in out["items"]}
        assert set(listed) == set(t.experiences), (sorted(listed), sorted(t.experiences))
        for exp_id, item in listed.items():
            exp = t.experiences[exp_id]
            if item["status"] != exp.status:
                assert exp.status == "active" and item["status"] == "archived", (
                    f"a review turned {exp.status} {exp_id} into {item['status']}"
                )
                winner = t.experiences.get((item["status_reason"] or "").removeprefix("superseded by "))
                assert winner is not None and (winner.agent_id, winner.user_id) == (exp.agent_id, exp.user_id), item
                exp.status = "archived"
            self.check_experience(t, item)


def recall_event(recall_id: str) -> Event:
    return Event(event_id="rc1", type="recall", timestamp=datetime.now(timezone.utc), content={"recall_id": recall_id}, seq=1)


def together(*work: Callable[[], Any]) -> None:
    """Each callable in a thread of its own, released at once by a barrier; a Conflict (a feedback
    or restore refused because the forget came first) is an answer, any other error fails."""
    barrier, errors = threading.Barrier(len(work)), []

    def run(fn: Callable[[], Any]) -> None:
        barrier.wait()
        try:
            fn()
        except Conflict:
            pass
        except BaseException as exc:  # noqa: BLE001 - surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(fn,)) for fn in work]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    if errors:
        raise errors[0]


# --- one suite, two backends ------------------------------------------------------------------


@pytest.fixture(params=["embedded", pytest.param("aws", marks=pytest.mark.opensearch)])
def world(request, tmp_path, monkeypatch, use_deps):
    if request.param == "embedded":
        cfg = Settings(data_dir=str(tmp_path), embedder="hash", admin_key=ADMIN, worker=False)
        deps = container.build_embedded(cfg)
        cleanup = lambda: None  # noqa: E731 -- tmp_path goes with the test
    else:
        from chalicelib.adapters.opensearch.index import OpenSearchVectorIndex
        from tests.support.opensearch import node_url
        from tests.support.dynamo import CREDENTIALS, moto_endpoint

        monkeypatch.setenv("AWS_ACCESS_KEY_ID", CREDENTIALS["aws_access_key_id"])
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", CREDENTIALS["aws_secret_access_key"])
        monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
        prefix = f"prop{uuid.uuid4().hex[:8]}-"
        cfg = Settings(
            backend="aws", table_prefix=prefix, dynamodb_endpoint=moto_endpoint(), create_tables=True,
            opensearch_endpoint=node_url(), opensearch_service="none", opensearch_index=f"{prefix}experiences",
            embedder="hash", admin_key=ADMIN, worker=False,
        )
        deps = container.build_aws(cfg)
        # read-after-write without waiting up to a refresh interval per write (as the contract suite does)
        deps.index = OpenSearchVectorIndex(deps.index.client, deps.index.spec, refresh=True)

        def cleanup() -> None:
            deps.index.client.indices.delete(index=cfg.opensearch_index, ignore_unavailable=True)
            deps.experiences.tables.delete()

    use_deps(deps, cfg)
    try:
        with GatewayClient(app_module.app) as client:
            yield World(Api(client, deps), request.param)
    finally:
        cleanup()


def test_no_response_crosses_a_tenant_and_scope_rules_hold_exactly(world):
    machine = type(f"IsolationOn{world.name.title()}", (IsolationMachine,), {"world": world})
    run = run_settings(world.name)
    run_state_machine_as_test(machine, settings=run)
    learned = [e for t in world.tenants for e in t.experiences.values() if e.text is None]
    print(f"{world.name}: {len(world.tenants) // 3} examples, {world.calls} HTTP calls, {len(learned)} lessons learned"
          f" by reviews ({sum(e.status == 'forgotten' for e in learned)} then forgotten)")
    assert len(world.tenants) // 3 >= run.max_examples // 2, "the machine ran too few examples to mean much"
