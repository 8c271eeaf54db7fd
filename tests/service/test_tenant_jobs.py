"""Tenant export and deletion on the in-memory fakes: what an export holds, what a deletion
leaves, and that both go on from their checkpoints across runs."""
from __future__ import annotations

import json
from datetime import timedelta

import pytest

from chalicelib.domain.errors import Conflict, NotFound
from chalicelib.ports import ServedRecall
from chalicelib.services import ingest, tenant_jobs, tenants
from chalicelib.services.experiences import write_experience
from tests.support.fakes import FakeClock, fake_deps


def forever() -> float:
    return 1e9


def seeded(deps, name: str, trajectories: int = 3, events: int = 5):
    tenant, key = tenants.create_tenant(deps, name)
    tid = tenant.tenant_id
    for i in range(trajectories):
        ingest.start_trajectory(deps, tid, trajectory_id=f"{name}-t{i}", agent_id="bot", goal=f"{name} goal {i}")
        ingest.append_events(deps, tid, f"{name}-t{i}", [
            {"event_id": f"e{j}", "type": "user_input", "content": {"text": f"{name} says {j}"}} for j in range(events)])
    for i in range(2):
        write_experience(deps, tid, experience_id=f"{name}-x{i}", situation=f"{name} situation {i}",
                         advice=f"Call `lookup_{name}` first.")
    deps.queue.enqueue(tid, f"{name}-t0", "full", deps.clock.now())
    deps.recalls.record(ServedRecall(tid, f"r-{name}", (f"{name}-x0",), deps.clock.now(),
                                     deps.clock.now() + timedelta(days=1)))
    return tid, key


def lines_of(deps, state) -> list[dict]:
    out = []
    for part in state["parts"]:
        data = tenant_jobs.export_part(deps, state["tenant_id"], state["job_id"], part["number"])
        out += [json.loads(line) for line in data.decode().splitlines()]
    return out


def test_an_export_holds_everything_of_the_tenant_and_nothing_of_another():
    deps = fake_deps(clock=FakeClock())
    a, _ = seeded(deps, "alpha")
    b, _ = seeded(deps, "beta")
    state = tenant_jobs.start_export(deps, a)
    assert state["state"] == "running" and state["parts"] == []
    tenant_jobs.run_pending(deps, forever)
    state = tenant_jobs.export_status(deps, a, state["job_id"])
    assert state["state"] == "done"
    lines = lines_of(deps, state)
    by_type: dict[str, list[dict]] = {}
    for line in lines:
        by_type.setdefault(line["type"], []).append(line)
    assert [t["data"]["tenant_id"] for t in by_type["tenant"]] == [a] and "key_hash" not in json.dumps(by_type["tenant"])
    assert sorted(e["data"]["experience_id"] for e in by_type["experience"]) == ["alpha-x0", "alpha-x1"]
    assert sorted(t["data"]["trajectory_id"] for t in by_type["trajectory"]) == ["alpha-t0", "alpha-t1", "alpha-t2"]
    assert len(by_type["event"]) == 15 and {e["trajectory_id"] for e in by_type["event"]} == {"alpha-t0", "alpha-t1", "alpha-t2"}
    assert "beta" not in json.dumps(lines) and b not in json.dumps(lines)
    assert state["counts"] == {"tenant": 1, "experiences": 2, "trajectories": 3, "events": 15, "failed_reviews": 0}


def test_an_export_goes_on_from_its_checkpoint_a_part_per_run():
    deps = fake_deps(clock=FakeClock())
    a, _ = seeded(deps, "alpha", trajectories=4, events=7)
    state = tenant_jobs.start_export(deps, a)
    name = tenant_jobs.export_name(state["job_id"])
    runs = 0
    while state["state"] != "done":
        budget = iter([10.0, 10.0] + [0.0] * 10)  # each run: room for one step (the run's check and the part's), then none
        state = tenant_jobs.run_job(deps, name, lambda: next(budget), reserve_seconds=1.0, page=3)
        runs += 1
        assert runs < 100
    assert runs > 5 and len(state["parts"]) >= runs - 2  # a part per run (a run whose step read nothing writes none)
    lines = lines_of(deps, state)
    events = [(e["trajectory_id"], e["data"]["seq"]) for e in lines if e["type"] == "event"]
    assert len(events) == 28 and len(set(events)) == 28  # every event once, across parts


def test_a_deletion_revokes_at_once_and_purges_everything_of_the_tenant_only():
    deps = fake_deps(clock=FakeClock())
    a, key_a = seeded(deps, "alpha")
    b, key_b = seeded(deps, "beta")
    assert deps.index.count(a) == 2 and deps.index.count(b) == 2  # the lessons written by hand are indexed
    export = tenant_jobs.start_export(deps, a)
    tenant_jobs.run_pending(deps, forever)

    state = tenant_jobs.start_deletion(deps, a)
    assert state["keys_revoked"] == 1
    with pytest.raises(Exception):
        tenants.authenticate(deps, f"Bearer {key_a}")  # refused before anything is purged
    assert tenant_jobs.start_deletion(deps, a)["job_id"] == a  # asked twice: the same job
    with pytest.raises(Conflict):
        tenant_jobs.start_export(deps, a)
    tenant_jobs.run_pending(deps, forever)
    state = tenant_jobs.deletion_status(deps, a)
    assert state["state"] == "done" and state["deleted"]["index_entries"] == 2 and state["deleted"]["export_parts"] >= 1

    assert deps.tenant_data.tenant(a) is None and deps.tenant_data.trajectory_ids(a, None, 10) == []
    assert deps.index.count(a) == 0 and deps.experiences.count_by_status(a) == {}
    assert not [k for k in deps.queue._jobs if k[0] == a] and not [k for k in deps.recalls._served if k[0] == a]
    with pytest.raises(NotFound):
        tenant_jobs.export_part(deps, a, export["job_id"], 1)
    # the other tenant is untouched
    assert tenants.authenticate(deps, f"Bearer {key_b}") == b
    assert deps.index.count(b) == 2 and deps.experiences.count_by_status(b) == {"active": 2}
    assert deps.tenant_data.trajectory_ids(b, None, 10) == ["beta-t0", "beta-t1", "beta-t2"]
    # the name is free again, the deletion is still readable
    tenants.create_tenant(deps, "alpha")
    assert tenant_jobs.start_deletion(deps, a)["state"] == "done"


def test_the_purge_waits_for_the_authorizers_cache():
    clock = FakeClock()
    deps = fake_deps(clock=clock)
    a, _ = seeded(deps, "alpha")
    tenant_jobs.start_deletion(deps, a, grace_seconds=300)
    tenant_jobs.run_pending(deps, forever)
    assert tenant_jobs.deletion_status(deps, a)["state"] == "running" and deps.tenant_data.tenant(a) is not None
    clock.advance(seconds=301)
    tenant_jobs.run_pending(deps, forever)
    assert tenant_jobs.deletion_status(deps, a)["state"] == "done" and deps.tenant_data.tenant(a) is None


def test_unknown_tenants_are_not_found():
    deps = fake_deps()
    with pytest.raises(NotFound):
        tenant_jobs.start_deletion(deps, "t_nobody")
    with pytest.raises(NotFound):
        tenant_jobs.start_export(deps, "t_nobody")
    with pytest.raises(NotFound):
        tenant_jobs.deletion_status(deps, "t_nobody")


def test_no_key_is_issued_to_a_tenant_being_deleted():
    deps = fake_deps(clock=FakeClock())
    a, _ = seeded(deps, "alpha")
    tenant_jobs.start_deletion(deps, a, grace_seconds=300)  # revoked, not yet purged
    with pytest.raises(NotFound):
        tenants.rotate_key(deps, a)


def test_a_job_whose_listing_was_lost_is_listed_again_when_its_status_is_read():
    """Two admin calls that start jobs at once write the list of jobs under way whole: one name may
    be lost, and that job would never run. Reading its status lists it again."""
    deps = fake_deps(clock=FakeClock())
    a, _ = seeded(deps, "alpha")
    state = tenant_jobs.start_export(deps, a)
    deps.checkpoints.save(tenant_jobs.REGISTRY, {"pending": []})  # the racing write won
    assert tenant_jobs.run_pending(deps, forever)["worked"] == 0
    tenant_jobs.export_status(deps, a, state["job_id"])
    tenant_jobs.run_pending(deps, forever)
    assert tenant_jobs.export_status(deps, a, state["job_id"])["state"] == "done"


def test_a_deletion_forgets_what_the_reviews_and_maintenance_kept_of_the_tenant():
    """Beside the stores: the successful runs a failed run is compared with (their goals are the
    tenant's words), and the tenant's decay and stats progress."""
    from chalicelib.services import contrast, maintenance

    deps = fake_deps(clock=FakeClock())
    a, _ = seeded(deps, "alpha", trajectories=0)
    b, _ = seeded(deps, "beta", trajectories=0)
    registers: dict[str, list[str]] = {a: [], b: []}
    for tid, agent in ((a, "bot"), (a, "helper"), (b, "bot")):
        ingest.start_trajectory(deps, tid, trajectory_id=f"ok-{agent}", agent_id=agent, goal=f"cancel the order of {tid}")
        ingest.append_events(deps, tid, f"ok-{agent}", [{"event_id": "1", "type": "tool_call", "content": {
            "tool": "get_order_details", "params": {"order_id": "#W1"}, "status": "ok", "result": "pending"}}])
        ingest.finalize(deps, tid, f"ok-{agent}", "success", None)
        traj = ingest.get_trajectory(deps, tid, f"ok-{agent}")
        assert contrast.remember_success(deps, traj, deps.trajectories.events(tid, f"ok-{agent}"))
        registers[tid].append(contrast.register_name(traj))
    for tid in (a, b):
        deps.checkpoints.save(maintenance.TENANT_CHECKPOINT.format(tenant_id=tid), {"pass": "p", "done": True})
        deps.checkpoints.save(maintenance.STATS_CHECKPOINT.format(tenant_id=tid), {"as_of": "x"})
    kept = {name: deps.checkpoints.load(name) for name in registers[a]}
    assert len(kept) == 2 and all(kept.values())  # a register per agent

    tenant_jobs.start_deletion(deps, a)
    tenant_jobs.run_pending(deps, forever)

    assert tenant_jobs.deletion_status(deps, a)["state"] == "done"
    for name in [*kept, maintenance.TENANT_CHECKPOINT.format(tenant_id=a), maintenance.STATS_CHECKPOINT.format(tenant_id=a)]:
        assert deps.checkpoints.load(name) is None, name
    assert all(deps.checkpoints.load(n) for n in registers[b])
    assert deps.checkpoints.load(maintenance.STATS_CHECKPOINT.format(tenant_id=b)) == {"as_of": "x"}
