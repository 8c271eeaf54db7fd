"""Contrast across runs on the cloud path: the successful runs of a scope are remembered in the
DynamoDB checkpoints table, and a failed run of that scope, and of no other, is compared with them."""
from __future__ import annotations

import pytest

pytest.importorskip("pynamodb")

from chalicelib.adapters.dynamo.checkpoints import DynamoCheckpoints  # noqa: E402
from tests.service.test_contrast_across_runs import _contrast_lessons, record  # noqa: E402
from tests.support.dynamo import dynamo_tables  # noqa: E402
from tests.support.fakes import FakeClock, fake_deps  # noqa: E402


@pytest.fixture
def tables():
    t = dynamo_tables()
    t.create()
    yield t
    t.delete()


def test_the_review_of_a_failed_run_reads_its_scopes_successes_from_dynamodb(tables):
    clock = FakeClock()
    deps = fake_deps(clock, checkpoints=DynamoCheckpoints(tables))
    record(deps, clock, "ok1", "success", tenant="t2")
    record(deps, clock, "ok2", "success", tenant="t2")
    assert _contrast_lessons(deps, "t1", record(deps, clock, "bad1", "failure", find=False)) == []
    record(deps, clock, "ok3", "success")
    record(deps, clock, "ok4", "success")
    failed = record(deps, clock, "bad2", "failure", find=False)
    assert failed.review["across_runs"]["supporting"] == ["ok3", "ok4"]
    [lesson] = _contrast_lessons(deps, "t1", failed)
    assert "Call `find_user_id_by_email` before `cancel_pending_order`" in lesson.advice
