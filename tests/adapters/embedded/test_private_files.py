"""The embedded backend's data folder is 0700 and every file in it 0600, under the usual umask,
for a new folder and for one an earlier version left readable to every local user."""
from __future__ import annotations

import os
import secrets
import stat
from datetime import datetime, timezone
from pathlib import Path

import pytest

from chalicelib import container
from chalicelib.adapters.embedded.private_files import private_dir
from chalicelib.domain.models import Tenant
from chalicelib.settings import Settings


@pytest.fixture(autouse=True)
def usual_umask():
    previous = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(previous)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def use_backend(data: Path) -> None:
    """Build the backend over ``data`` and write through it (so SQLite makes its WAL and shm)."""
    deps = container.build_embedded(Settings(data_dir=str(data), embedder="hash", worker=False))
    deps.tenants.create_tenant(Tenant(f"t_{len(deps.tenants.list_tenants())}", f"acme {len(deps.tenants.list_tenants())}",
                                      datetime.now(timezone.utc)), secrets.token_hex(16))


def assert_private(data: Path) -> None:
    assert mode(data) == 0o700
    names = sorted(p.name for p in data.iterdir())
    for name in ("admin_key", "hindsight.db", "hindsight.db-wal", "hindsight.db-shm", "vectors.db"):
        assert name in names
    assert {p.name: oct(mode(p)) for p in data.iterdir()} == {name: oct(0o600) for name in names}


def test_a_new_data_folder_and_every_file_in_it_are_the_owners_alone(tmp_path):
    data = tmp_path / "new" / "data"
    use_backend(data)
    assert_private(data)


def test_a_folder_and_files_left_readable_by_everyone_are_narrowed_on_start(tmp_path):
    data = tmp_path / "old"
    use_backend(data)
    os.chmod(data, 0o755)
    for p in data.iterdir():
        os.chmod(p, 0o644)
    use_backend(data)
    assert_private(data)


def test_a_shared_sticky_folder_is_left_as_it_is(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o1777)
    private_dir(shared)
    assert mode(shared) == 0o1777
