"""Tenants stored before names had keys (no ``name_key`` column): a look-alike of one is refused."""
from __future__ import annotations

import sqlite3
from datetime import datetime, timezone

import pytest

from chalicelib.adapters.embedded.db import SqliteDatabase
from chalicelib.adapters.embedded.stores import SqliteTenantStore
from chalicelib.domain.errors import TenantNameTaken
from chalicelib.domain.models import Tenant

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)


def test_a_look_alike_of_a_tenant_stored_before_name_keys_is_refused(tmp_path):
    path = str(tmp_path / "hindsight.db")
    old = sqlite3.connect(path)  # the table as an earlier version made it
    old.executescript(
        "CREATE TABLE tenants (tenant_id TEXT PRIMARY KEY, name TEXT NOT NULL, created_us INTEGER NOT NULL);"
        "INSERT INTO tenants VALUES ('t1', 'Acme Corp', 1);"
    )
    old.close()
    store = SqliteTenantStore(SqliteDatabase(path))
    for name in ("acme corp", "\uff21\uff43\uff4d\uff45 corp"):
        with pytest.raises(TenantNameTaken) as refused:
            store.create_tenant(Tenant("t2", name, T0), "hash-2")
        assert refused.value.tenant_id == "t1" and refused.value.existing_name == "Acme Corp"
    store.create_tenant(Tenant("t3", "Acme Corp 2", T0), "hash-3")
    assert [t.name for t in store.list_tenants()] == ["Acme Corp", "Acme Corp 2"]
