"""schemathesis against /v1/openapi.json on the real server process.

Every operation of the document gets generated requests, valid ones and invalid ones (wrong
types, broken bodies, missing or mangled keys). The server must never answer 5xx, and every
status, content type, header and body it answers must be the one the document promises.

Reproducible by default: hypothesis runs from a fixed seed, so CI sends the same cases each run
and a failure there is the same failure on a laptop. HINDSIGHT_FUZZ_SEED=<n> explores others
(the seed is printed; a failure found that way reproduces with the same value).
"""
from __future__ import annotations

import json
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
from chalicelib.api.structure import MAX_DEPTH

pytestmark = pytest.mark.e2e

ADMIN_KEY = "fuzz-admin-key"
SEED = int(os.environ.get("HINDSIGHT_FUZZ_SEED", "20261129"))
EXAMPLES = int(os.environ.get("HINDSIGHT_FUZZ_EXAMPLES", "15"))  # per operation and kind of input
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
    admin = {"Authorization": f"Bearer {ADMIN_KEY}"}
    spare = httpx.post(f"{url}/v1/tenants", json={"name": "spare"}, headers=admin)
    spare.raise_for_status()
    spare_id = spare.json()["tenant_id"]
    # an export of the spare tenant, done (its part 1 exists); and a tenant deleted, whose deletion
    # the deletion routes read (the spare one is never deleted: the other tenant routes use it)
    export_id = httpx.post(f"{url}/v1/tenants/{spare_id}/exports", headers=admin).json()["export_id"]
    gone = httpx.post(f"{url}/v1/tenants", json={"name": "gone"}, headers=admin).json()["tenant_id"]
    httpx.delete(f"{url}/v1/tenants/{gone}", headers=admin).raise_for_status()
    deadline = time.monotonic() + 60
    while httpx.get(f"{url}/v1/tenants/{spare_id}/exports/{export_id}", headers=admin).json()["state"] != "done":
        assert time.monotonic() < deadline, "the export never finished"
        time.sleep(0.1)
    return {"trajectory_id": "fuzz-trajectory", "experience_id": "fuzz-lesson", "tenant_id": spare_id,
            "export_id": export_id, "deleted_tenant_id": gone}


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
            if op.method.upper() == "DELETE" and "experience_id" in path_ids:
                path_ids["experience_id"] = "fuzz-lesson-to-forget"
            if op.path == "/v1/tenants/{tenant_id}" or op.path.endswith("/deletion"):
                path_ids["tenant_id"] = ids["deleted_tenant_id"]
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


# --- deep and wide structures in every free-form field --------------------------------------

DEEP_WIDE_EXAMPLES = int(os.environ.get("HINDSIGHT_FUZZ_DEEP_EXAMPLES", "10"))  # per operation with a body
_FORMS = ("anyOf", "oneOf", "allOf")


def _free_form(schema: dict) -> bool:
    """A schema any JSON value or any object fits: where a client may send structure of its own."""
    if "$ref" in schema:
        return False
    if any(k in schema for k in _FORMS):
        return any(_free_form(s) for k in _FORMS for s in schema.get(k, []))
    kind = schema.get("type")
    return (kind is None and not {"enum", "const"} & set(schema)) or (kind == "object" and "properties" not in schema)


def free_form_names(doc: dict) -> set[str]:
    """Every property of a request model that takes free-form structure (metadata, params, result...)."""
    found: set[str] = set()

    def walk(node) -> None:
        if isinstance(node, dict):
            found.update(p for p, s in (node.get("properties") or {}).items() if isinstance(s, dict) and _free_form(s))
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk({k: v for k, v in doc["components"]["schemas"].items() if not k.endswith("Out")})
    return found


def deep(depth: int, array: bool) -> object:
    value: object = 1
    for i in range(depth - 1):
        value = [value] if array else {f"d{i}": value}
    return value


def hostile_structures():
    """Nesting around the limit and far past it, objects and arrays thousands wide, and both."""
    from hypothesis import strategies as st

    depths = st.sampled_from([MAX_DEPTH - 2, MAX_DEPTH, MAX_DEPTH + 1, 200])
    widths = st.sampled_from([100, 3_000])
    return st.one_of(
        st.builds(deep, depths, st.booleans()),
        widths.map(lambda w: {f"k{i}": i for i in range(w)}),
        widths.map(lambda w: list(range(w))),
        widths.map(lambda w: {f"k{i}": deep(12, i % 2 == 0) for i in range(w // 20)}),
    )


def planted(body, value, names: set[str], top_level: set[str]):
    """``body`` with ``value`` in every free-form field it holds, and in the free-form fields of
    its own model it left out (each event's tool-call fields too)."""
    if isinstance(body, list):
        return [planted(v, value, names, set()) for v in body]
    if not isinstance(body, dict):
        return body
    out = {k: value if k in names else planted(v, value, names, set()) for k, v in body.items()}
    for name in top_level - set(out):
        out[name] = value
    for event in out.get("events") or []:
        if isinstance(event, dict) and isinstance(event.get("content"), dict) and event["content"] is not value:
            event["content"].update({k: value for k in ("params", "result", "error")})
    return out


def readable_after(op_label: str, case, body, response) -> list[str]:
    """What an accepted write must leave readable: the trajectory, its events, the lesson."""
    body = body if isinstance(body, dict) else {}
    if op_label == "POST /v1/trajectories":
        tid = body.get("trajectory_id")
        return [f"/v1/trajectories/{tid}", f"/v1/trajectories/{tid}/events"] if tid else []
    if op_label == "POST /v1/trajectories/{trajectory_id}/events":
        tid = case.path_parameters["trajectory_id"]
        return [f"/v1/trajectories/{tid}", f"/v1/trajectories/{tid}/events"]
    if op_label == "POST /v1/experiences":
        return [f"/v1/experiences/{response.json()['experience_id']}"]
    return []


def test_deep_and_wide_structures_in_free_form_fields_answer_4xx_or_stay_readable(server, capsys):
    from hypothesis import strategies as st

    url = server.url
    resp = httpx.post(f"{url}/v1/tenants", json={"name": "fuzz-deep"}, headers={"Authorization": f"Bearer {ADMIN_KEY}"})
    tenant_key = resp.json()["api_key"]
    ids = known_ids(url, tenant_key)
    doc = httpx.get(f"{url}/v1/openapi.json").json()
    names = free_form_names(doc)
    assert {"metadata", "params", "content", "result", "error", "value"} <= names, names
    schema = schemathesis.openapi.from_dict(doc, config=CONFIG)
    session = requests.Session()
    seen: dict[str, Counter] = defaultdict(Counter)
    failures: list[str] = []
    started = time.monotonic()
    with_body = [op for op in (r.ok() for r in schema.get_all_operations()) if op.body]
    for op in with_body:
        key = ADMIN_KEY if (op.method.upper(), op.path) in ADMIN_PATHS else tenant_key
        auth = {"Authorization": f"Bearer {key}"}
        media = op.body[0].definition.get("schema", {})
        ref = media.get("$ref", "").rsplit("/", 1)[-1]
        model = doc["components"]["schemas"].get(ref, media)
        top_level = {p for p, s in (model.get("properties") or {}).items() if p in names}
        path_ids = {p.name: ids[p.name] for p in op.path_parameters}
        strategy = st.tuples(op.as_strategy(GenerationMode.POSITIVE, path_parameters=path_ids or None), hostile_structures())

        def sender(op=op, auth=auth, top_level=top_level, strategy=strategy):  # this operation's, not the loop's last
            @seed(SEED)
            @settings(max_examples=DEEP_WIDE_EXAMPLES, phases=[Phase.generate], deadline=None, database=None,
                      suppress_health_check=list(HealthCheck))
            @given(drawn=strategy)
            def fuzz(drawn):
                case, value = drawn
                # sent as is: schemathesis's Case hashes a body it is given, recursively (RecursionError at depth)
                given_body = case.body if isinstance(case.body, (dict, list)) else {}  # NotSet: an optional body left out
                body = planted(given_body, value, names, top_level)
                headers = {**(case.headers or {}), **auth, "Content-Type": "application/json"}
                try:
                    response = session.request(case.method, f"{url}{case.formatted_path}", params=case.query,
                                               headers=headers, data=json.dumps(body), timeout=60)
                except requests.RequestException as exc:
                    failures.append(f"{op.label}: {type(exc).__name__}: {exc}")
                    return
                seen[op.label][response.status_code] += 1
                where = f"{op.label} -> {response.status_code}: {response.text[:300]}"
                if response.status_code >= 500:
                    failures.append(where)
                elif response.status_code >= 400:
                    try:
                        error = response.json()["error"]
                        assert isinstance(error["code"], str) and isinstance(error["message"], str)
                    except (ValueError, KeyError, TypeError, AssertionError):
                        failures.append(f"not the JSON error shape: {where}")
                else:
                    for path in readable_after(op.label, case, body, response):
                        back = session.get(f"{url}{path}", headers=auth, timeout=60)
                        if back.status_code != 200:
                            failures.append(f"accepted, then GET {path} -> {back.status_code}: {back.text[:300]} ({where})")

            return fuzz

        sender()()
    with capsys.disabled():
        print(f"\ndeep and wide: {sum(sum(c.values()) for c in seen.values())} cases over {len(with_body)} operations "
              f"in {time.monotonic() - started:.0f}s; statuses {dict(sum(seen.values(), Counter()))}")
    assert not failures, "\n".join(failures[:20])
    assert set(seen) == {op.label for op in with_body}
    assert any(200 <= code < 300 for c in seen.values() for code in c), "nothing was ever accepted"
