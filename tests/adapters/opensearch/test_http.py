"""The index's HTTP client (``opensearch_http``) against a local HTTP server that answers as told:
what it sends again (could not connect, 502-504) and what it does not (a read timeout, 4xx), the
error of each status, NDJSON bodies, HEAD as a bool, and a SigV4 signature that botocore computes
the same for what the server received. The real node runs the adapter over it (tests/contract,
the other tests/adapters/opensearch/*)."""
from __future__ import annotations

import hashlib
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from chalicelib.adapters.opensearch import http as h
from chalicelib.adapters.opensearch.index import build_client
from devtools.net import free_port
from devtools.opensearch_node import RequestCounter


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address) -> None:  # a client that gave up (read timeout)
        pass


class Node:
    """Answers each request with the next of ``answers`` (status, JSON or bytes, delay in s), else
    200 ``{}``; keeps what it received."""

    def __init__(self) -> None:
        self.answers: list[tuple[int, object, float]] = []
        self.seen: list[dict] = []
        node = self

        class Handler(BaseHTTPRequestHandler):
            def answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                node.seen.append({"method": self.command, "path": self.path, "headers": dict(self.headers),
                                  "body": self.rfile.read(length) if length else b""})
                status, payload, delay = node.answers.pop(0) if node.answers else (200, {}, 0.0)
                time.sleep(delay)
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", "0" if self.command == "HEAD" else str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = answer

            def log_message(self, *args) -> None:
                pass

        self.server = _Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def node():
    n = Node()
    yield n
    n.close()


def test_a_node_answering_502_to_504_is_asked_again_and_its_answer_kept(node):
    node.answers = [(503, {"error": "busy"}, 0), (502, b"<html>bad gateway</html>", 0), (504, b"", 0),
                    (200, {"hits": {"hits": []}}, 0)]
    client = build_client(node.url, service="none", timeout=5)
    assert client.search(index="ix", body={"query": {"match_all": {}}}) == {"hits": {"hits": []}}
    assert [(s["method"], s["path"]) for s in node.seen] == [("POST", "/ix/_search")] * 4


def test_a_node_still_unavailable_after_the_retries_raises_with_its_status_and_error_type(node):
    busy = {"error": {"type": "cluster_block_exception", "reason": "blocked by: [SERVICE_UNAVAILABLE]"}, "status": 503}
    node.answers = [(503, busy, 0)] * 5
    with pytest.raises(h.TransportError) as caught:
        build_client(node.url, service="none").count(index="ix", body={"query": {"match_all": {}}})
    assert (caught.value.status_code, caught.value.error, caught.value.info) == (503, "cluster_block_exception", busy)
    assert "blocked by" in str(caught.value)
    assert len(node.seen) == 4  # the request and 3 more


@pytest.mark.parametrize("status, cls", [(400, h.RequestError), (401, h.AuthenticationError), (403, h.AuthorizationError),
                                         (404, h.NotFoundError), (409, h.ConflictError), (429, h.TransportError),
                                         (500, h.TransportError)])
def test_other_answers_outside_2xx_are_not_sent_again_and_raise_the_error_of_their_status(node, status, cls):
    node.answers = [(status, {"error": {"type": "some_exception", "reason": "why"}, "status": status}, 0)]
    with pytest.raises(cls) as caught:
        build_client(node.url, service="none").indices.create(index="ix", body={"settings": {}})
    assert type(caught.value) is cls and caught.value.error == "some_exception" and len(node.seen) == 1


def test_a_read_timeout_is_not_sent_again(node):
    node.answers = [(200, {}, 1.0)]
    client = build_client(node.url, service="none", timeout=0.2)
    with pytest.raises(h.ConnectionTimeout):
        client.bulk(body=[{"index": {"_index": "ix", "_id": "1"}}, {"a": 1}], refresh="true")
    time.sleep(0.3)
    assert len(node.seen) == 1  # the node may have applied it


def test_a_node_that_cannot_be_reached_is_tried_again_then_fails_with_a_connection_error():
    client = build_client(f"http://127.0.0.1:{free_port()}", service="none", timeout=1)
    counter = RequestCounter(client)
    with pytest.raises(h.ConnectionFailed) as caught:
        client.indices.get(index="ix")
    assert not isinstance(caught.value, h.ConnectionTimeout)
    assert counter.count == 4


def test_bulk_and_msearch_send_one_json_document_a_line_and_parameters_in_the_query(node):
    client = build_client(node.url, service="none")
    lines = [{"index": {"_index": "ix", "_id": "2:t1:é"}}, {"text": "café", "embedding": [0.6, 0.8]}]
    client.bulk(body=lines, refresh="wait_for")
    client.msearch(index="ix", body=[{}, {"size": 1}])
    client.indices.delete(index="ix", ignore_unavailable=True)
    bulk, msearch, delete = node.seen
    assert (bulk["path"], bulk["headers"]["Content-Type"]) == ("/_bulk?refresh=wait_for", "application/x-ndjson")
    assert bulk["body"].decode().endswith("\n") and [json.loads(x) for x in bulk["body"].decode().splitlines()] == lines
    assert msearch["path"] == "/ix/_msearch" and msearch["body"] == b'{}\n{"size":1}\n'
    assert (delete["method"], delete["path"]) == ("DELETE", "/ix?ignore_unavailable=true")


def test_head_answers_whether_the_index_exists(node):
    node.answers = [(200, {}, 0), (404, {}, 0)]
    client = build_client(node.url, service="none")
    assert client.indices.exists(index="ix") is True
    assert client.indices.exists(index="ix") is False


def test_bodies_that_are_not_json_are_serialization_errors(node):
    client = build_client(node.url, service="none")
    with pytest.raises(h.SerializationError):
        client.search(index="ix", body={"query": object()})
    assert node.seen == []  # nothing sent
    node.answers = [(200, b"<html>a proxy</html>", 0)]
    with pytest.raises(h.SerializationError):
        client.search(index="ix", body={})


@pytest.mark.parametrize("service", ["es", "aoss"])
def test_a_signed_request_carries_the_sigv4_signature_of_what_the_node_received(node, service):
    credentials = Credentials("AKIDEXAMPLE", "secret", "session-token")
    client = build_client(node.url, region="eu-west-1", service=service, credentials=credentials)
    client.search(index="ix", body={"query": {"term": {"tenant_id": "t 1"}}}, routing="t 1,t2")
    got = node.seen[0]
    headers = {k.lower(): v for k, v in got["headers"].items()}
    auth = headers["authorization"]
    assert auth.startswith(f"AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/{headers['x-amz-date'][:8]}/eu-west-1/{service}/aws4_request")
    assert headers["x-amz-security-token"] == "session-token"
    if service == "aoss":  # Serverless refuses a request without its payload's hash
        assert headers["x-amz-content-sha256"] == hashlib.sha256(got["body"]).hexdigest()
    signed = auth.split("SignedHeaders=")[1].split(",")[0].split(";")
    assert {"host", "x-amz-date", "content-type"} <= set(signed)
    # botocore, given what the node received, computes the same signature
    request = AWSRequest(method=got["method"], url=node.url + got["path"], data=got["body"],
                         headers={k: headers[k] for k in signed if k != "host"})
    request.context["timestamp"] = headers["x-amz-date"]
    signer = SigV4Auth(credentials.get_frozen_credentials(), service, "eu-west-1")
    expected = signer.signature(signer.string_to_sign(request, signer.canonical_request(request)), request)
    assert auth.endswith(f"Signature={expected}")
