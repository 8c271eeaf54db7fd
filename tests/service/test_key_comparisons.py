"""Secrets are compared in constant time: the admin key with ``hmac.compare_digest``, a tenant key
never at all (only its SHA-256 reaches a store, so a lookup's timing says nothing about the key)."""
from __future__ import annotations

import ast
import hashlib
import hmac
from pathlib import Path

import pytest

from chalicelib.domain.errors import Unauthorized
from chalicelib.services import tenants
from tests.support.fakes import InMemoryTenantStore, fake_deps

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture()
def digests(monkeypatch) -> list[tuple[bytes, bytes]]:
    """Every call of hmac.compare_digest made by the tenants service, with its arguments."""
    calls: list[tuple[bytes, bytes]] = []
    real = hmac.compare_digest

    def recording(a, b):
        calls.append((a, b))
        return real(a, b)

    monkeypatch.setattr(tenants.hmac, "compare_digest", recording)
    return calls


def test_the_admin_key_is_checked_with_compare_digest(digests):
    deps = fake_deps(admin_key="the-admin-key")
    tenants.require_admin(deps, "Bearer the-admin-key")
    with pytest.raises(Unauthorized):
        tenants.require_admin(deps, "Bearer the-admin-kez")
    assert digests == [(b"the-admin-key", b"the-admin-key"), (b"the-admin-kez", b"the-admin-key")]


def test_a_key_that_is_no_tenants_is_checked_against_the_admin_key_with_compare_digest(digests):
    """A tenant's key never reaches the admin key (in the cloud, reading it is a Secrets Manager
    request: a tenant's cold request does not pay it); any other is compared in constant time."""
    reads: list[int] = []
    deps = fake_deps(admin_key=lambda: reads.append(1) or "the-admin-key")  # read when first asked, as in the cloud
    tenant, key = tenants.create_tenant(deps, "acme")
    assert tenants.authenticate(deps, f"Bearer {key}") == tenant.tenant_id
    assert digests == [] and reads == []
    for presented in ("the-admin-key", "hs_unknown"):
        with pytest.raises(Unauthorized):
            tenants.authenticate(deps, f"Bearer {presented}")
    assert digests == [(b"the-admin-key", b"the-admin-key"), (b"hs_unknown", b"the-admin-key")]
    assert len(reads) == 2


@pytest.mark.parametrize("presented", ["x", "the-admin-key-but-longer", "clé-ünïcode-ключ", "the-admin-key\x00"])
def test_keys_of_any_length_or_alphabet_are_refused_cleanly(presented):
    deps = fake_deps(admin_key="the-admin-key")
    with pytest.raises(Unauthorized):
        tenants.require_admin(deps, f"Bearer {presented}")
    with pytest.raises(Unauthorized):
        tenants.authenticate(deps, f"Bearer {presented}")


class SpyTenantStore(InMemoryTenantStore):
    def __init__(self) -> None:
        super().__init__()
        self.looked_up: list[str] = []

    def tenant_for_key(self, key_hash: str) -> str | None:
        self.looked_up.append(key_hash)
        return super().tenant_for_key(key_hash)


def test_a_tenant_key_reaches_the_store_only_as_its_sha256():
    store = SpyTenantStore()
    deps = fake_deps(tenants=store)
    tenant, key = tenants.create_tenant(deps, "acme")
    assert tenants.authenticate(deps, f"Bearer {key}") == tenant.tenant_id
    with pytest.raises(Unauthorized):
        tenants.authenticate(deps, "Bearer hs_unknown")
    assert store.looked_up == [hashlib.sha256(key.encode()).hexdigest(), hashlib.sha256(b"hs_unknown").hexdigest()]


SECRET_NAMES = ("admin_key", "api_key", "token", "secret", "password")


def test_no_code_compares_a_secret_with_equals():
    """A pin for code to come: ``==`` / ``!=`` on anything named like a secret is a timing leak."""
    offenders = []
    for path in [ROOT / "app.py", *(ROOT / "chalicelib").rglob("*.py")]:
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Compare) and any(isinstance(op, (ast.Eq, ast.NotEq)) for op in node.ops):
                names = [ast.unparse(side) for side in (node.left, *node.comparators)]
                if any(part in name.lower() for name in names for part in SECRET_NAMES):
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}: {ast.unparse(node)}")
    assert offenders == []
