"""A tenant's export and deletion on the local AWS stack: moto as DynamoDB and S3, a real
OpenSearch node, the app's routes and its tenant jobs schedule (``devtools.aws_stack``).

Two tenants with lessons (reviewed from the stream), trajectories and events. Tenant A is exported
(its data in the parts, none of B's), then deleted: its key answers 401 at once; once the schedule
has run the job, a scan of every table of the stack and a search of the whole index find nothing
of A (the jobs' own records aside), nor does its exports' prefix in the bucket; B still recalls.
"""
from __future__ import annotations

import json

import boto3
import pytest

from devtools.moto_server import moto_endpoint
from tests.e2e.test_aws_stack import QUERY, local_stack, record, scheduled, status
from tests.support.http_api import ADMIN

pytestmark = [pytest.mark.e2e, pytest.mark.opensearch]


def run_jobs(api, until) -> dict:
    """The tenant jobs schedule, invoked until ``until()`` answers (each run has chalice's 3 s)."""
    for _ in range(30):
        scheduled(api, "tenant_jobs")
        state = until()
        if state["state"] == "done":
            return state
    raise AssertionError(state)


def items_naming(prefix: str, text: str) -> dict[str, int]:
    """Items of every table of the stack with ``text`` in any attribute (a full scan)."""
    ddb = boto3.client("dynamodb", endpoint_url=moto_endpoint(), region_name="us-east-1")
    found = {}
    # every page of the listing: the suite's moto server holds the tables of many stacks (100 a page)
    for name in (n for page in ddb.get_paginator("list_tables").paginate() for n in page["TableNames"]):
        if not name.startswith(prefix):
            continue
        pages = ddb.get_paginator("scan").paginate(TableName=name)
        n = sum(text in json.dumps(item) for page in pages for item in page["Items"])
        if n:
            found[name.removeprefix(prefix)] = n
    return found


def test_a_tenant_is_exported_then_deleted_and_nothing_of_it_remains(monkeypatch):
    with local_stack(monkeypatch) as (api, poller, stub, deps):
        key_a, key_b = api.tenant("alpha"), api.tenant("beta")
        for key, tids in ((key_a, ("a1", "a2")), (key_b, ("b1",))):
            for tid in tids:
                record(api, key, tid)
        while poller.poll_once():
            pass
        for key, tid in ((key_a, "a1"), (key_a, "a2"), (key_b, "b1")):
            assert status(api, key, tid)["status"] == "reviewed"
        tenants = {t["name"]: t["tenant_id"] for t in api.call("GET", "/v1/tenants", ADMIN).json_body["tenants"]}
        a, b = tenants["alpha"], tenants["beta"]
        assert api.call("POST", "/v1/recall", key_a, QUERY).json_body["hits"]
        assert api.call("POST", "/v1/recall", key_a, {"query": "warm up the rate-limit bucket"}).status_code == 200
        prefix = deps.tenants.tables.config.prefix
        assert {"tenants", "trajectories", "events", "experiences", "review-jobs", "recalls"} <= set(items_naming(prefix, a))

        started = api.call("POST", f"/v1/tenants/{a}/exports", ADMIN)
        assert started.status_code == 202
        export_id = started.json_body["export_id"]
        export = run_jobs(api, lambda: api.call("GET", f"/v1/tenants/{a}/exports/{export_id}", ADMIN).json_body)
        assert export["counts"]["trajectories"] == 2 and export["counts"]["events"] == 8 and export["counts"]["experiences"] >= 1
        assert all(p["location"].startswith(f"s3://{prefix}exports/exports/{a}/{export_id}/") for p in export["parts"])
        text = ""
        for part in export["parts"]:
            got = api.call("GET", f"/v1/tenants/{a}/exports/{export_id}/data?part={part['number']}", ADMIN)
            assert got.status_code == 200
            text += got.body.decode() if isinstance(got.body, bytes) else got.body
        lines = [json.loads(line) for line in text.splitlines()]
        assert sorted(line["data"]["trajectory_id"] for line in lines if line["type"] == "trajectory") == ["a1", "a2"]
        assert {line["trajectory_id"] for line in lines if line["type"] == "event"} == {"a1", "a2"}
        assert all(line["data"]["tenant_id"] == a for line in lines if line["type"] in ("experience", "trajectory"))
        assert b not in text and '"b1"' not in text

        deleted = api.call("DELETE", f"/v1/tenants/{a}", ADMIN)
        assert deleted.status_code == 202 and deleted.json_body["keys_revoked"] == 1
        assert api.call("POST", "/v1/recall", key_a, QUERY).status_code == 401  # at once
        done = run_jobs(api, lambda: api.call("GET", f"/v1/tenants/{a}/deletion", ADMIN).json_body)
        assert done["deleted"]["index_entries"] >= 1 and done["deleted"]["export_parts"] == len(export["parts"])
        assert api.call("GET", "/v1/stats", key_a).status_code == 401

        # nothing of A in any table (the maintenance table keeps the two jobs' records), the index, the bucket
        assert items_naming(prefix, a) == {"maintenance": 2}
        os_client = deps.index.client
        os_client.indices.refresh(index=deps.index.spec.name)
        hits = os_client.search(index=deps.index.spec.name, body={"query": {"match_all": {}}, "size": 1000})["hits"]["hits"]
        assert hits and not [h for h in hits if a in json.dumps(h)]
        s3 = boto3.client("s3", endpoint_url=moto_endpoint(), region_name="us-east-1")
        assert s3.list_objects_v2(Bucket=f"{prefix}exports", Prefix=f"exports/{a}/").get("KeyCount", 0) == 0

        # B is untouched and still recalls; A's name is free again
        assert items_naming(prefix, b).keys() >= {"tenants", "trajectories", "events", "experiences", "review-jobs"}
        assert api.call("POST", "/v1/recall", key_b, QUERY).json_body["hits"]
        assert status(api, key_b, "b1")["status"] == "reviewed"
        assert api.call("POST", "/v1/tenants", ADMIN, {"name": "alpha"}).status_code == 201
