"""Many clients of many tenants at once against the real threaded server: nothing crosses over."""
from __future__ import annotations

import threading

import httpx


CLIENTS, ROUNDS = 12, 15


def test_concurrent_tenants_never_see_or_write_each_others_data(server):
    admin = (server.data_dir / "admin_key").read_text().strip()
    keys = [
        httpx.post(f"{server.url}/v1/tenants", json={"name": f"c{i}"}, headers={"Authorization": f"Bearer {admin}"}).json()["api_key"]
        for i in range(CLIENTS)
    ]
    failures: list[str] = []
    barrier = threading.Barrier(CLIENTS)

    def client(i: int) -> None:
        marker = f"tenant-marker-{i}"
        with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {keys[i]}"}, timeout=60) as c:
            barrier.wait()
            for r in range(ROUNDS):
                tid = f"{marker}-traj-{r}"
                resp = c.post("/v1/trajectories", json={"trajectory_id": tid, "agent_id": "a", "goal": f"goal of {marker}"})
                if resp.status_code != 201:
                    failures.append(f"{marker}: create {resp.status_code} {resp.text[:120]}")
                resp = c.post(f"/v1/trajectories/{tid}/events", json={"events": [
                    {"event_id": f"{marker}-{r}-{n}", "type": "user_input", "content": {"text": marker}} for n in range(5)
                ]})
                if resp.status_code != 202 or resp.json() != {"accepted": 5, "duplicates": 0}:
                    failures.append(f"{marker}: events {resp.status_code} {resp.text[:120]}")
                resp = c.post("/v1/experiences", json={"situation": f"situation {marker}", "advice": f"Use `tool_{i}` for {marker} tasks."})
                if resp.status_code != 201 or marker not in resp.json()["situation"]:
                    failures.append(f"{marker}: write {resp.status_code} {resp.text[:120]}")
                hits = c.post("/v1/recall", json={"query": f"situation {marker}", "top_k": 50}).json()["hits"]
                foreign = [h["experience"]["situation"] for h in hits if marker not in h["experience"]["situation"]]
                if foreign:
                    failures.append(f"{marker}: recall saw {foreign[:2]}")
                got = c.get(f"/v1/trajectories/{tid}").json()
                if got.get("goal") != f"goal of {marker}" or got.get("event_count") != 5:
                    failures.append(f"{marker}: read back {got}")

    threads = [threading.Thread(target=client, args=(i,)) for i in range(CLIENTS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert failures == []
