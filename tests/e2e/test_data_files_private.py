"""The real server keeps its data to its user: the data folder 0700 and every file in it 0600, for
a folder it creates and for one it finds readable by every local user (as an earlier version left
it), with its ingest and review children writing too."""
from __future__ import annotations

import os
import stat

import httpx
import pytest

pytestmark = pytest.mark.e2e
ADMIN = "hsadmin_files_test"


def modes(data) -> dict[str, str]:
    return {p.name: oct(stat.S_IMODE(p.stat().st_mode)) for p in [data, *data.iterdir()]}


def test_the_data_folder_is_0700_and_its_files_0600(start_server, tmp_path):
    previous = os.umask(0o022)  # the usual umask, which the server's children inherit too
    try:
        data = tmp_path / "data"
        for run in range(2):
            server = start_server(env={"HINDSIGHT_EMBEDDER": "hash"}, data_dir=data)
            try:
                admin = {"Authorization": f"Bearer {server.admin_key}"}
                key = httpx.post(f"{server.url}/v1/tenants", json={"name": f"acme {run}"}, headers=admin).json()["api_key"]
                h = {"Authorization": f"Bearer {key}"}
                assert httpx.post(f"{server.url}/v1/trajectories", json={"trajectory_id": "t1", "agent_id": "a", "goal": "g"}, headers=h).status_code == 201
                assert httpx.post(f"{server.url}/v1/experiences", json={"situation": "s", "advice": "Use the v2 endpoint."}, headers=h).status_code == 201
                found = modes(data)
            finally:
                server.stop()
            assert {"hindsight.db", "hindsight.db-wal", "hindsight.db-shm", "vectors.db", "admin_key"} <= set(found)
            assert found == {name: oct(0o700 if name == data.name else 0o600) for name in found}, f"run {run}"
            # as an earlier version left them: readable by every local user
            os.chmod(data, 0o755)
            for p in data.iterdir():
                os.chmod(p, 0o644)
    finally:
        os.umask(previous)
