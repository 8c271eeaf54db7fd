"""Contract of ``ports.TenantStore``: API key hashes resolve to tenants until revoked."""
from __future__ import annotations

from datetime import timedelta

import pytest

from chalicelib.domain.errors import Conflict, InvalidInput, NotFound, TenantNameTaken
from chalicelib.domain.models import Tenant

from .conftest import T0


def tenant(tenant_id: str = "t1") -> Tenant:
    return Tenant(tenant_id=tenant_id, name=f"name of {tenant_id}", created_at=T0)


def test_the_first_key_of_a_new_tenant_resolves_to_it(tenant_store):
    tenant_store.create_tenant(tenant("t1"), "hash-1")
    assert tenant_store.tenant_for_key("hash-1") == "t1"


def test_an_unknown_key_resolves_to_nothing(tenant_store):
    tenant_store.create_tenant(tenant("t1"), "hash-1")
    assert tenant_store.tenant_for_key("hash-nobody-has") is None


def test_each_key_resolves_to_its_own_tenant(tenant_store):
    tenant_store.create_tenant(tenant("t1"), "hash-1")
    tenant_store.create_tenant(tenant("t2"), "hash-2")
    assert tenant_store.tenant_for_key("hash-1") == "t1"
    assert tenant_store.tenant_for_key("hash-2") == "t2"


def test_an_added_key_works_alongside_the_first(tenant_store):
    tenant_store.create_tenant(tenant("t1"), "hash-1")
    tenant_store.add_key("t1", "hash-1b", T0 + timedelta(days=1))
    assert tenant_store.tenant_for_key("hash-1") == "t1"
    assert tenant_store.tenant_for_key("hash-1b") == "t1"


def test_adding_a_key_to_an_unknown_tenant_raises_not_found(tenant_store):
    tenant_store.create_tenant(tenant("t1"), "hash-1")
    with pytest.raises(NotFound):
        tenant_store.add_key("t-nobody", "hash-x", T0)
    assert tenant_store.tenant_for_key("hash-x") is None


def test_revoking_with_keep_revokes_every_other_key_and_counts_them(tenant_store):
    tenant_store.create_tenant(tenant("t1"), "hash-a")
    tenant_store.add_key("t1", "hash-b", T0)
    tenant_store.add_key("t1", "hash-c", T0)
    assert tenant_store.revoke_keys("t1", keep="hash-c") == 2
    assert tenant_store.tenant_for_key("hash-a") is None
    assert tenant_store.tenant_for_key("hash-b") is None
    assert tenant_store.tenant_for_key("hash-c") == "t1"


def test_revoking_without_keep_revokes_every_key(tenant_store):
    tenant_store.create_tenant(tenant("t1"), "hash-a")
    tenant_store.add_key("t1", "hash-b", T0)
    assert tenant_store.revoke_keys("t1") == 2
    assert tenant_store.tenant_for_key("hash-a") is None
    assert tenant_store.tenant_for_key("hash-b") is None


def test_keys_already_revoked_are_not_counted_again(tenant_store):
    tenant_store.create_tenant(tenant("t1"), "hash-a")
    tenant_store.add_key("t1", "hash-b", T0)
    assert tenant_store.revoke_keys("t1", keep="hash-b") == 1
    assert tenant_store.revoke_keys("t1", keep="hash-b") == 0


def test_a_revoked_key_stays_revoked_even_when_named_as_keep_later(tenant_store):
    tenant_store.create_tenant(tenant("t1"), "hash-a")
    tenant_store.add_key("t1", "hash-b", T0)
    tenant_store.revoke_keys("t1", keep="hash-b")
    tenant_store.revoke_keys("t1", keep="hash-a")
    assert tenant_store.tenant_for_key("hash-a") is None


def test_revoking_touches_no_other_tenant(tenant_store):
    tenant_store.create_tenant(tenant("t1"), "hash-1")
    tenant_store.create_tenant(tenant("t2"), "hash-2")
    assert tenant_store.revoke_keys("t1") == 1
    assert tenant_store.tenant_for_key("hash-2") == "t2"


def test_revoking_keys_of_an_unknown_tenant_revokes_nothing(tenant_store):
    assert tenant_store.revoke_keys("t-nobody") == 0


def test_a_key_added_after_a_revocation_works(tenant_store):
    tenant_store.create_tenant(tenant("t1"), "hash-a")
    tenant_store.revoke_keys("t1")
    tenant_store.add_key("t1", "hash-new", T0)
    assert tenant_store.tenant_for_key("hash-new") == "t1"


def test_creating_a_tenant_whose_id_exists_raises_conflict(tenant_store):
    tenant_store.create_tenant(tenant("t1"), "hash-1")
    with pytest.raises(Conflict):
        tenant_store.create_tenant(tenant("t1"), "hash-2")
    assert tenant_store.tenant_for_key("hash-1") == "t1"
    assert tenant_store.tenant_for_key("hash-2") is None


def test_a_key_hash_already_in_use_cannot_be_given_to_another_tenant(tenant_store):
    tenant_store.create_tenant(tenant("t1"), "hash-1")
    with pytest.raises(Conflict):
        tenant_store.create_tenant(tenant("t2"), "hash-1")
    tenant_store.create_tenant(tenant("t3"), "hash-3")
    with pytest.raises(Conflict):
        tenant_store.add_key("t3", "hash-1", T0)
    assert tenant_store.tenant_for_key("hash-1") == "t1"
    # the failed create left no half-made tenant behind
    with pytest.raises(NotFound):
        tenant_store.add_key("t2", "hash-2", T0)


def test_a_name_already_taken_is_refused_naming_the_tenant_that_has_it(tenant_store):
    tenant_store.create_tenant(Tenant("t1", "acme", T0), "hash-1")
    with pytest.raises(TenantNameTaken) as refused:
        tenant_store.create_tenant(Tenant("t2", "acme", T0 + timedelta(minutes=1)), "hash-2")
    assert refused.value.tenant_id == "t1"
    assert "t1" in refused.value.message
    # nothing of the refused tenant was stored: its key resolves to nothing, its id can be used
    assert tenant_store.tenant_for_key("hash-2") is None
    assert [t.tenant_id for t in tenant_store.list_tenants()] == ["t1"]
    tenant_store.create_tenant(Tenant("t2", "acme-2", T0), "hash-2")
    assert tenant_store.tenant_for_key("hash-2") == "t2"



# Names that read as "acme corp": case, full width, zero-width and invisible characters, NFC/NFD
LOOK_ALIKES = ["ACME Corp", "\uff41\uff43\uff4d\uff45 corp", "ac\u200bme corp", "acme\u200d corp", "\u200facme corp",
               "acme\u00a0corp", "ac\u00adme corp", "acme corp\ufe0f"]


@pytest.mark.parametrize("name", LOOK_ALIKES)
def test_a_look_alike_of_a_taken_name_is_refused_naming_the_tenant_that_has_it(tenant_store, name):
    tenant_store.create_tenant(Tenant("t1", "acme corp", T0), "hash-1")
    with pytest.raises(TenantNameTaken) as refused:
        tenant_store.create_tenant(Tenant("t2", name, T0 + timedelta(minutes=1)), "hash-2")
    assert refused.value.tenant_id == "t1" and refused.value.existing_name == "acme corp"
    assert "t1" in refused.value.message and "'acme corp'" in refused.value.message
    assert tenant_store.tenant_for_key("hash-2") is None
    assert [(t.tenant_id, t.name) for t in tenant_store.list_tenants()] == [("t1", "acme corp")]


def test_composed_and_decomposed_names_are_one_name_and_the_name_is_kept_as_given(tenant_store):
    tenant_store.create_tenant(Tenant("t1", "Cafe\u0301", T0), "hash-1")
    with pytest.raises(TenantNameTaken) as refused:
        tenant_store.create_tenant(Tenant("t2", "caf\u00e9", T0), "hash-2")
    assert refused.value.tenant_id == "t1" and refused.value.existing_name == "Cafe\u0301"
    tenant_store.create_tenant(Tenant("t3", "cafe", T0), "hash-3")  # no accent: another name
    assert [t.name for t in tenant_store.list_tenants()] == ["Cafe\u0301", "cafe"]

def test_a_name_is_taken_for_another_instance_too(durable_backend):
    durable_backend.tenants().create_tenant(Tenant("t1", "acme", T0), "hash-1")
    with pytest.raises(TenantNameTaken) as refused:
        durable_backend.reopen().tenants().create_tenant(Tenant("t2", "acme", T0), "hash-2")
    assert refused.value.tenant_id == "t1"


def test_tenants_are_listed_oldest_first(tenant_store):
    tenant_store.create_tenant(Tenant("t2", "second", T0 + timedelta(minutes=1)), "hash-2")
    tenant_store.create_tenant(tenant("t1"), "hash-1")
    listed = tenant_store.list_tenants()
    assert [(t.tenant_id, t.name, t.created_at) for t in listed] == [
        ("t1", "name of t1", T0), ("t2", "second", T0 + timedelta(minutes=1))
    ]


def test_a_rotation_is_seen_at_once_by_another_instance(durable_backend):
    """Rotation as the service does it (add the new key, revoke the others), read by a second
    instance over the same storage (another Lambda, a restarted server): no stale answer."""
    first = durable_backend.tenants()
    first.create_tenant(tenant("t1"), "hash-old")
    other = durable_backend.reopen().tenants()
    assert other.tenant_for_key("hash-old") == "t1"
    first.add_key("t1", "hash-new", T0)
    first.revoke_keys("t1", keep="hash-new")
    assert other.tenant_for_key("hash-old") is None
    assert other.tenant_for_key("hash-new") == "t1"


def test_tenants_are_listed_a_page_at_a_time_oldest_first_each_once(tenant_store):
    # created out of order, two at the same instant (the id breaks the tie)
    for i, minutes in enumerate([3, 0, 1, 1, 2, 4, 0]):
        tenant_store.create_tenant(Tenant(f"t{i}", f"name {i}", T0 + timedelta(minutes=minutes)), f"hash-{i}")
    every = [t.tenant_id for t in tenant_store.list_tenants()]
    pages, cursor = [], None
    while True:
        page = tenant_store.list_tenants_page(3, cursor)
        assert len(page.items) <= 3
        pages.append([t.tenant_id for t in page.items])
        cursor = page.cursor
        if cursor is None:
            break
    assert [len(p) for p in pages] == [3, 3, 1]
    assert sum(pages, []) == every == ["t1", "t6", "t2", "t3", "t4", "t0", "t5"]
    assert tenant_store.list_tenants_page(3, cursor=None).items[0].name == "name 1"


def test_a_last_page_that_is_full_has_no_cursor(tenant_store):
    for i in range(4):
        tenant_store.create_tenant(Tenant(f"t{i}", f"name {i}", T0 + timedelta(minutes=i)), f"hash-{i}")
    first = tenant_store.list_tenants_page(2)
    second = tenant_store.list_tenants_page(2, first.cursor)
    assert [t.tenant_id for t in second.items] == ["t2", "t3"] and second.cursor is None
    assert tenant_store.list_tenants_page(10).cursor is None


def test_an_empty_deployment_lists_an_empty_page(tenant_store):
    page = tenant_store.list_tenants_page(5)
    assert page.items == [] and page.cursor is None


@pytest.mark.parametrize("forged", ["junk", "W10", "WyJ4IiwxXQ", "eyJhIjoxfQ", "WzEsMiwzXQ"])
def test_a_tenant_cursor_the_store_did_not_make_is_invalid_input(tenant_store, forged):
    tenant_store.create_tenant(tenant("t1"), "hash-1")
    with pytest.raises(InvalidInput):
        tenant_store.list_tenants_page(2, forged)


def test_a_tenants_event_retention_is_set_read_listed_and_cleared(tenant_store):
    tenant_store.create_tenant(tenant("t1"), "hash-1")
    tenant_store.create_tenant(Tenant("t2", "other", T0 + timedelta(minutes=1)), "hash-2")
    assert tenant_store.get_tenant("t1").event_retention_days is None  # the deployment's default
    assert tenant_store.set_event_retention("t1", 7).event_retention_days == 7
    assert tenant_store.get_tenant("t1").event_retention_days == 7
    assert tenant_store.get_tenant("t2").event_retention_days is None
    assert [t.event_retention_days for t in tenant_store.list_tenants_page(10).items] == [7, None]
    assert tenant_store.set_event_retention("t1", 0).event_retention_days == 0  # kept for good
    assert tenant_store.set_event_retention("t1", None).event_retention_days is None
    assert tenant_store.get_tenant("t1") == tenant("t1")


def test_an_unknown_tenant_has_no_retention_to_read_or_set(tenant_store):
    tenant_store.create_tenant(tenant("t1"), "hash-1")
    with pytest.raises(NotFound):
        tenant_store.get_tenant("t-nobody")
    with pytest.raises(NotFound):
        tenant_store.set_event_retention("t-nobody", 3)
    assert [t.tenant_id for t in tenant_store.list_tenants()] == ["t1"]
