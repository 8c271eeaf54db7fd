"""The service's own HTTPS clients (the OpenSearch index's, the OpenAI-compatible endpoint's) check
the server's certificate against their CA bundle, and parse that bundle once per process, not at
every new connection; a server signed by another CA is refused. A real TLS server on the loopback,
with certificates made for the test."""
from __future__ import annotations

import datetime
import http.server
import ipaddress
import json
import ssl
import threading

import certifi
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from chalicelib.adapters import tls
from chalicelib.adapters.openai_http import APIConnectionError, OpenAICompatibleClient
from chalicelib.adapters.opensearch_http import ConnectionFailed, OpenSearchHttp


def _name(text: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, text)])


def _ca(tmp, label: str):
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(_name(label)).issuer_name(_name(label)).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=2))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=False,
                                         data_encipherment=False, key_agreement=False, key_cert_sign=True,
                                         crl_sign=True, encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .sign(key, hashes.SHA256()))
    path = tmp / f"{label}.pem"
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return key, cert, str(path)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """An HTTPS server for localhost signed by a test CA; every answer closes its connection, so
    each request opens a new one. Yields (port, the CA's bundle, another CA's bundle)."""
    tmp = tmp_path_factory.mktemp("tls")
    ca_key, ca_cert, ca_path = _ca(tmp, "test-ca")
    _, _, other_path = _ca(tmp, "other-ca")
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(_name("localhost")).issuer_name(ca_cert.subject)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=1)).not_valid_after(now + datetime.timedelta(days=2))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost"),
                                                        x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
            .sign(ca_key, hashes.SHA256()))
    (tmp / "server.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM) + key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))

    class Handler(http.server.BaseHTTPRequestHandler):
        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            self.rfile.read(length)
            body = {"path": self.path}
            if self.path.endswith("/embeddings"):
                body = {"data": [{"index": 0, "embedding": [0.5, 0.25]}]}
            data = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(data)
            self.close_connection = True

        do_GET = do_POST = _answer

        def log_message(self, *args) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(str(tmp / "server.pem"))
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd.server_address[1], ca_path, other_path
    httpd.shutdown()
    httpd.server_close()


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
