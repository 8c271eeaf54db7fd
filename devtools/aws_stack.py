"""The serverless stack on local real components, for the e2e tests and the benchmarks: moto server
as DynamoDB, a real OpenSearch node, the OpenAI-compatible stub (embeddings and the LLM reviewer),
the Chalice app with its Lambda handlers, and a stream poller that feeds the review-jobs stream to
the review handler as Lambda's event source mapping would.

``AwsTenant`` speaks to the app's routes in process (``chalice.test.Client``) with httpx's request
and response types, so code written against the real server over HTTP (``devtools.flood``) runs
on this stack unchanged.
"""
from __future__ import annotations

import json
import threading
import uuid
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterator

import httpx

from devtools.env import changed_env
from devtools.gateway_client import GatewayClient

AWS_ENV = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1",
           "AWS_ACCOUNT_ID_ENDPOINT_MODE": "disabled"}  # fmt: skip


@dataclass
class LocalAwsStack:
    client: Any  # chalice.test.Client of app.py
    deps: Any  # the stack's Deps, installed in the container
    poller: Any  # devtools.stream_poller.StreamPoller on the review-jobs stream
    stub: Any  # devtools.openai_stub.OpenAIStub
    settings: Any


_ENV_LOCK = threading.RLock()


def _one_call_at_a_time() -> None:
    """chalice's test clients swap ``os.environ`` for a patched copy (the stage's variables of
    .chalice/config.json) during each call and put back what they found. Two threads calling at
    once (the stream delivery beside the tenants' requests) leave a patched copy behind for good:
    ``HINDSIGHT_WORKER=false`` then reached every server a later test started. One call at a time."""
    from chalice import test as chalice_test

    base = chalice_test.BaseClient
    if getattr(base, "_one_call_at_a_time", False):
        return
    patch = base._patched_env_vars

    @contextmanager
    def serialized(self: Any, environment_variables: Any) -> Iterator[None]:
        with _ENV_LOCK, patch(self, environment_variables):
            yield

    base._patched_env_vars = serialized
    base._one_call_at_a_time = True


@contextmanager
def local_aws_stack(admin_key: str, opensearch_url: str, **settings_overrides: Any) -> Iterator[LocalAwsStack]:
    """A fresh stack (tables and index under a unique prefix, dropped or deleted on the way out)
    serving every route and handler of ``app.py`` inside the block."""
    import boto3

    import app as app_module
    from chalicelib import container, lambda_handlers
    from chalicelib.settings import Settings
    from devtools.moto_server import moto_endpoint
    from devtools.openai_stub import OpenAIStub
    from devtools.stream_poller import StreamPoller

    _one_call_at_a_time()
    prefix = f"e2e{uuid.uuid4().hex[:8]}-"
    with changed_env(**AWS_ENV), OpenAIStub() as stub:
        settings = Settings(
            backend="aws", table_prefix=prefix, dynamodb_endpoint=moto_endpoint(), create_tables=True,
            opensearch_endpoint=opensearch_url, opensearch_service="none", opensearch_index=f"{prefix}experiences",
            embedder="openai", embedding_dim=64, openai_base_url=stub.base_url, llm_max_retries=0,
            admin_key=admin_key, review_max_attempts=3,
            # chalice's local Lambda context gives a handler 3 s (no lambda_timeout in .chalice/config.json):
            # a decay run keeps 1 s of it, where Lambda's 300 s keep 20
            decay_reserve_seconds=1.0, tenant_jobs_reserve_seconds=1.0,
            # tenant exports in a bucket of the moto server
            export_bucket=f"{prefix}exports", s3_endpoint=moto_endpoint(),
        ).model_copy(update=settings_overrides)
        boto3.client("s3", endpoint_url=moto_endpoint(), region_name="us-east-1").create_bucket(Bucket=f"{prefix}exports")
        ddb = boto3.client("dynamodb", endpoint_url=settings.dynamodb_endpoint, region_name="us-east-1")
        ddb.create_table(
            TableName=f"{prefix}idempotency", BillingMode="PAY_PER_REQUEST",
            AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
            KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        )
        deps = container.build(settings)
        lambda_handlers._idempotent_runner.cache_clear()
        # the container offers set_deps() but no getter that would not build: read what it holds
        saved = container._deps, container._settings
        container.set_deps(deps, settings)
        try:
            with GatewayClient(app_module.app) as client:
                streams = boto3.client("dynamodbstreams", endpoint_url=settings.dynamodb_endpoint, region_name="us-east-1")
                arn = ddb.describe_table(TableName=f"{prefix}review-jobs")["Table"]["LatestStreamArn"]
                poller = StreamPoller(streams, arn, lambda event: client.lambda_.invoke("review_worker", event).payload)
                yield LocalAwsStack(client, deps, poller, stub, settings)
        finally:
            container._deps, container._settings = saved
            lambda_handlers._idempotent_runner.cache_clear()
            deps.index.client.indices.delete(index=settings.opensearch_index, ignore_unavailable=True)


class AwsTenant:
    """The httpx.Client calls ``devtools.flood`` makes (``post``, ``get``, ``close``), answered by
    the app's routes in process."""

    def __init__(self, client: Any, key: str) -> None:
        self.client = client
        self.key = key

    def _call(self, method: str, path: str, body: Any = None) -> httpx.Response:
        headers = {"Content-Type": "application/json", "Authorization": f"Bearer {self.key}"}
        payload = json.dumps(body) if body is not None else None
        resp = getattr(self.client.http, method.lower())(path, headers=headers, body=payload)
        return httpx.Response(resp.status_code, headers=resp.headers, content=resp.body,
                              request=httpx.Request(method, f"http://stack{path}"))

    def post(self, path: str, json: Any = None) -> httpx.Response:  # noqa: A002 - httpx's keyword
        return self._call("POST", path, json)

    def get(self, path: str) -> httpx.Response:
        return self._call("GET", path)

    def close(self) -> None:
        pass


def aws_tenant(stack: LocalAwsStack, name: str) -> AwsTenant:
    admin = AwsTenant(stack.client, stack.settings.admin_key)
    resp = admin.post("/v1/tenants", json={"name": name})
    resp.raise_for_status()
    return AwsTenant(stack.client, resp.json()["api_key"])


@contextmanager
def stream_delivery(stack: LocalAwsStack, interval: float = 0.05) -> Iterator[None]:
    """The event source mapping at work: the stream polled in a thread of its own (one batch at a
    time, as Lambda does per shard) until the block ends."""
    import threading

    stop = threading.Event()
    errors: list[BaseException] = []

    def run() -> None:
        while not stop.is_set():
            try:
                stack.poller.poll_once()
            except BaseException as exc:  # noqa: BLE001 - handed to the caller below
                errors.append(exc)
                return
            stop.wait(interval)

    thread = threading.Thread(target=run, name="stream-poller", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
    if errors:
        raise errors[0]
