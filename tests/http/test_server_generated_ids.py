"""A start whose id the server generates is made once even when the ingest process that ran it
dies before it answers and the server runs the request again (the embedded server's fallback)."""
from __future__ import annotations

import json

import httpx

import app as app_module
from local.gateway import local_gateway, thread_safe
from local.wsgi import _dispatch, make_wsgi_app


class DiesBeforeAnswering:
    """An ingest process that runs the request (its write committed) and dies before its answer:
    ``run`` returns None, so the server runs the request itself."""

    def __init__(self) -> None:
        self.gateway = local_gateway(thread_safe(app_module.app))
        self.bodies: list[dict] = []

    def run(self, method, path, headers, raw):
        self.bodies.append(json.loads(raw))
        _dispatch(self.gateway, method, path, headers, raw)
        return None


def test_a_start_run_again_after_its_child_died_starts_one_trajectory(api):
    key = api.tenant()
    ingest = DiesBeforeAnswering()
    with httpx.Client(transport=httpx.WSGITransport(app=make_wsgi_app(app_module.app, 1_048_576, ingest)),
                      base_url="http://hs", headers={"Authorization": f"Bearer {key}"}) as c:
        for _ in range(3):
            resp = c.post("/v1/trajectories", json={"agent_id": "a", "goal": "g"})
            assert resp.status_code == 200, resp.text  # the repeat of the start the child made
            assert resp.json()["trajectory_id"] == ingest.bodies[-1]["trajectory_id"]
        named = c.post("/v1/trajectories", json={"agent_id": "a", "goal": "g", "trajectory_id": "mine"})
        assert named.status_code == 200 and ingest.bodies[-1]["trajectory_id"] == "mine"
        stored = sum(c.get("/v1/stats").json()["trajectories"].values())
    assert len({b["trajectory_id"] for b in ingest.bodies}) == 4
    assert stored == 4  # each start made once: 3 named by the server, "mine"


def test_only_a_start_without_an_id_is_given_one():
    from local.ingest import with_trajectory_id

    given = json.loads(with_trajectory_id("/v1/trajectories", b'{"agent_id": "a", "goal": "\\u00e9t\\u00e9"}'))
    assert given["trajectory_id"].startswith("traj_") and len(given["trajectory_id"]) == 37 and given["goal"] == "été"
    assert json.loads(with_trajectory_id("/v1/trajectories", b'{"trajectory_id": null}'))["trajectory_id"].startswith("traj_")
    for raw in (b'{"trajectory_id": "t"}', b"[1]", b"not json", b"", None):
        assert with_trajectory_id("/v1/trajectories", raw) == raw
    assert with_trajectory_id("/v1/trajectories/t/events", b'{"events": []}') == b'{"events": []}'
