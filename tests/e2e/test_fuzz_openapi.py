"""schemathesis against /v1/openapi.json on the real server process.

Every operation of the document gets generated requests, valid ones and invalid ones (wrong
types, broken bodies, missing or mangled keys). The server must never answer 5xx, and every
status, content type, header and body it answers must be the one the document promises.

Reproducible by default: hypothesis runs from a fixed seed, so CI sends the same cases each run
and a failure there is the same failure on a laptop. HINDSIGHT_FUZZ_SEED=<n> explores others
(the seed is printed; a failure found that way reproduces with the same value).
"""
from __future__ import annotations

import os
import time
from collections import Counter, defaultdict

import httpx
import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.core.failures import Failure, FailureGroup
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from app import api

pytestmark = pytest.mark.e2e

ADMIN_KEY = "fuzz-admin-key"
SEED = int(os.environ.get("HINDSIGHT_FUZZ_SEED", "20261129"))
EXAMPLES = int(os.environ.get("HINDSIGHT_FUZZ_EXAMPLES", "30"))  # per operation and kind of input
MIN_CASES = 1000
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    negative_data_rejection,
]
ADMIN_PATHS = {(r.method.upper(), r.path) for r in api.routes if r.auth == "admin"}
# Invalid input may also be refused as too large (an event over 64 KiB is invalid and too large).
CONFIG = schemathesis.Config.from_dict(
    {"checks": {"negative_data_rejection": {"expected-statuses": [400, 401, 404, 405, 409, 413, 415, 422, 429]}}}
)


@pytest.fixture()
def server(start_server):
    return start_server({"HINDSIGHT_EMBEDDER": "hash", "HINDSIGHT_ADMIN_KEY": ADMIN_KEY})


def known_ids(url: str, tenant_key: str) -> dict[str, str]:
    """Ids that exist, so that valid requests also reach the code behind the 404. The tenant is a
    spare one: rotating its key (and revoking the old) must not lock the fuzzer out; the lesson
    that DELETE forgets is not the one feedback is given on (that would be 409 only)."""
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {tenant_key}"}, timeout=30) as c:
        c.post("/v1/trajectories", json={"trajectory_id": "fuzz-trajectory", "agent_id": "fuzzer", "goal": "be fuzzed"}).raise_for_status()
        for exp_id in ("fuzz-lesson", "fuzz-lesson-to-forget"):
            c.post("/v1/experiences", json={"experience_id": exp_id, "situation": "a fuzzer calls", "advice": "Answer as documented."}).raise_for_status()
    spare = httpx.post(f"{url}/v1/tenants", json={"name": "spare"}, headers={"Authorization": f"Bearer {ADMIN_KEY}"})
    spare.raise_for_status()
    return {"trajectory_id": "fuzz-trajectory", "experience_id": "fuzz-lesson", "tenant_id": spare.json()["tenant_id"]}


class Fuzzer:
    """Sends the generated cases and keeps what they found: counts, statuses, failures."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.session = requests.Session()
        self.cases = 0
        self.statuses: dict[str, Counter] = defaultdict(Counter)
        self.failures: dict[tuple[str, str, str], list[str]] = defaultdict(list)

    def run(self, op, kind: str, strategy, auth: dict[str, str]) -> None:
        # No shrinking: failures are collected, not raised, so every distinct one is reported.
        @seed(SEED)
        @settings(max_examples=EXAMPLES, phases=[Phase.generate], deadline=None, database=None,
                  suppress_health_check=list(HealthCheck))
        @given(case=strategy)
        def fuzz(case):
            self.cases += 1
            headers = auth
            if kind == "valid" and self.cases % 10 in (3, 7):  # a valid request without its key, or with a wrong one
                case.headers = {k: v for k, v in (case.headers or {}).items() if k.lower() != "authorization"}
                headers = {} if self.cases % 10 == 3 else {"Authorization": "Bearer hs_not_a_key"}
            try:
                response = case.call_and_validate(base_url=self.url, session=self.session, headers=headers, checks=CHECKS, timeout=30)
                self.statuses[op.label][response.status_code] += 1
            except FailureGroup as group:
                for failure in group.exceptions:
                    self.failed(op, kind, failure.title, failure.message, case)
            except Failure as failure:
                self.failed(op, kind, failure.title, failure.message, case)
            except requests.RequestException as exc:
                self.failed(op, kind, type(exc).__name__, str(exc), case)

        fuzz()

    def failed(self, op, kind: str, title: str, message: str, case) -> None:
        self.failures[(op.label, kind, title)].append(f"{message}\n{case.as_curl_command()}")

    def report(self) -> str:
        return "\n\n".join(
            f"{label} [{kind}] {title}: {len(found)}x, e.g.\n{found[0][:2000]}"
            for (label, kind, title), found in self.failures.items()
        )


def test_every_operation_answers_as_its_document_says(server, capsys):
    url = server.url
    resp = httpx.post(f"{url}/v1/tenants", json={"name": "fuzz"}, headers={"Authorization": f"Bearer {ADMIN_KEY}"})
    assert resp.status_code == 201, resp.text
    tenant_key = resp.json()["api_key"]
    ids = known_ids(url, tenant_key)
    # The document as the server serves it; from_dict rather than from_url, which would leave out
    # the document's own operation.
    schema = schemathesis.openapi.from_dict(httpx.get(f"{url}/v1/openapi.json").json(), config=CONFIG)
    fuzzer = Fuzzer(url)
    no_negative_cases: list[str] = []
    started = time.monotonic()

    operations = [result.ok() for result in schema.get_all_operations()]
    assert {op.label for op in operations} == {f"{r.method.upper()} {r.path}" for r in api.routes}
    for op in operations:
        key = ADMIN_KEY if (op.method.upper(), op.path) in ADMIN_PATHS else tenant_key
        auth = {"Authorization": f"Bearer {key}"}
        fuzzer.run(op, "valid", op.as_strategy(GenerationMode.POSITIVE), auth)
        try:
            fuzzer.run(op, "invalid", op.as_strategy(GenerationMode.NEGATIVE), auth)
        except Unsatisfiable:
            # an operation with nothing to get wrong (no parameter, no body, no key) has no invalid input
            no_negative_cases.append(op.label)
        if op.path_parameters:
            path_ids = {p.name: ids[p.name] for p in op.path_parameters}
            if op.method.upper() == "DELETE":
                path_ids["experience_id"] = "fuzz-lesson-to-forget"
            fuzzer.run(op, "valid, existing ids", op.as_strategy(GenerationMode.POSITIVE, path_parameters=path_ids), auth)

    elapsed = time.monotonic() - started
    with capsys.disabled():
        print(f"\nschemathesis: {fuzzer.cases} cases over {len(operations)} operations in {elapsed:.0f}s (seed {SEED})")

    assert not fuzzer.failures, f"{len(fuzzer.failures)} distinct failures (seed {SEED}):\n\n{fuzzer.report()}"
    assert fuzzer.cases >= MIN_CASES, f"only {fuzzer.cases} cases were generated"
    # The run must have exercised the server, not only its front door.
    assert {op.label for op in operations} == set(fuzzer.statuses), "an operation was never answered"
    open_to_all = ["GET /v1/health", "GET /v1/openapi.json", "GET /v1/docs"]
    assert no_negative_cases == open_to_all
    for op in operations:
        seen = fuzzer.statuses[op.label]
        assert any(200 <= code < 300 for code in seen), f"{op.label} never succeeded: {dict(seen)}"
        if op.label not in open_to_all:
            assert seen[401] > 0, f"{op.label} was never refused for a missing or wrong key: {dict(seen)}"
