"""The service's own HTTPS clients (the OpenSearch index's, the OpenAI-compatible endpoint's) check
the server's certificate against their CA bundle, and parse that bundle once per process, not at
every new connection; a server signed by another CA is refused. A real TLS server on the loopback,
with certificates made for the test."""
from __future__ import annotations

import ssl

import certifi
import pytest

from chalicelib.adapters import tls
from chalicelib.adapters.openai_http import APIConnectionError, OpenAICompatibleClient
from chalicelib.adapters.opensearch.http import ConnectionFailed, OpenSearchHttp
from devtools.tls_server import TlsServer


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """(port, the CA's bundle, another CA's bundle) of an HTTPS server for localhost."""
    with TlsServer(tmp_path_factory.mktemp("tls")) as tls_server:
        yield tls_server.port, tls_server.ca_path, tls_server.other_ca_path


@pytest.fixture
def loads(monkeypatch):
    """The CA bundles loaded into an SSL context from now on."""
    tls.verified_context.cache_clear()
    seen: list = []
    real = ssl.SSLContext.load_verify_locations

    def counting(self, cafile=None, capath=None, cadata=None):
        seen.append(cafile)
        return real(self, cafile, capath, cadata)

    monkeypatch.setattr(ssl.SSLContext, "load_verify_locations", counting)
    yield seen
    tls.verified_context.cache_clear()


def test_the_index_client_checks_the_certificate_and_parses_its_bundle_once(server, loads):
    port, ca, _ = server
    clients = [OpenSearchHttp(f"https://localhost:{port}", ca_certs=ca, max_retries=0) for _ in range(2)]
    for client in clients:
        for _ in range(2):  # a new connection each time: the server closes every one
            assert client.request("GET", "/x") == {"path": "/x"}
    assert loads == [ca]


def test_a_server_signed_by_another_ca_is_refused(server, loads):
    port, _, other = server
    with pytest.raises(ConnectionFailed, match="CERTIFICATE_VERIFY_FAILED"):
        OpenSearchHttp(f"https://localhost:{port}", ca_certs=other, max_retries=0).request("GET", "/x")


def test_the_llm_client_checks_with_certifis_bundle_parsed_once_at_its_first_request(server, loads, monkeypatch):
    port, ca, other = server
    monkeypatch.setattr(certifi, "where", lambda: ca)  # the bundle it checks with: the test CA's
    clients = [OpenAICompatibleClient(f"https://localhost:{port}/v1", max_retries=0) for _ in range(2)]
    assert loads == []  # building a client parses nothing: the API's ingest builds one and never calls it
    for client in clients:
        for _ in range(2):
            assert [e.embedding for e in client.embeddings(model="m", input=["a"])] == [[0.5, 0.25]]
    assert loads == [ca]
    monkeypatch.setattr(certifi, "where", lambda: other)
    with pytest.raises(APIConnectionError) as refused:
        OpenAICompatibleClient(f"https://localhost:{port}/v1", max_retries=0).embeddings(model="m", input=["a"])
    assert "CERTIFICATE_VERIFY_FAILED" in str(refused.value.__cause__)
