"""An HTTPS server on the loopback with certificates made on the spot, for tests and benchmarks of
the service's TLS clients: a test CA signs a certificate for ``localhost`` and 127.0.0.1, and a
second CA signs nothing (a bundle that must be refused). With ``close`` (the default) every answer
closes its connection, so each request opens a new one; without, connections are kept alive. ``POST .../embeddings`` answers one OpenAI-style vector; anything else
answers ``{"path": ...}``.

    with TlsServer(tmp_dir) as server:
        server.url, server.ca_path, server.other_ca_path
"""
from __future__ import annotations

import datetime
import http.server
import ipaddress
import json
import ssl
import threading
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


def _name(text: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, text)])


def _validity(builder: x509.CertificateBuilder) -> x509.CertificateBuilder:
    now = datetime.datetime.now(datetime.timezone.utc)
    return builder.not_valid_before(now - datetime.timedelta(days=1)).not_valid_after(now + datetime.timedelta(days=2))


def make_ca(label: str) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = ec.generate_private_key(ec.SECP256R1())
    usage = x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=False,
                          data_encipherment=False, key_agreement=False, key_cert_sign=True, crl_sign=True,
                          encipher_only=False, decipher_only=False)
    cert = (_validity(x509.CertificateBuilder()).subject_name(_name(label)).issuer_name(_name(label))
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(usage, critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .sign(key, hashes.SHA256()))
    return key, cert


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive unless the server closes each connection

    def _answer(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body: dict = {"path": self.path}
        if self.path.endswith("/embeddings"):
            body = {"data": [{"index": 0, "embedding": [0.5, 0.25]}]}
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if self.server.close_each:  # type: ignore[attr-defined]
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = _answer

    def log_message(self, *args) -> None:  # quiet
        pass


class TlsServer:
    def __init__(self, directory: Path, close: bool = True) -> None:
        self.directory = Path(directory)
        self.close = close

    def __enter__(self) -> "TlsServer":
        ca_key, ca_cert = make_ca("hindsight-test-ca")
        _, other = make_ca("hindsight-other-ca")
        self.ca_path = str(self.directory / "test-ca.pem")
        self.other_ca_path = str(self.directory / "other-ca.pem")
        Path(self.ca_path).write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
        Path(self.other_ca_path).write_bytes(other.public_bytes(serialization.Encoding.PEM))
        key = ec.generate_private_key(ec.SECP256R1())
        names = x509.SubjectAlternativeName([x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))])
        cert = (_validity(x509.CertificateBuilder()).subject_name(_name("localhost")).issuer_name(ca_cert.subject)
                .public_key(key.public_key()).serial_number(x509.random_serial_number())
                .add_extension(names, critical=False)
                .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
                .sign(ca_key, hashes.SHA256()))
        chain = self.directory / "server.pem"
        chain.write_bytes(cert.public_bytes(serialization.Encoding.PEM) + key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.httpd.close_each = self.close  # type: ignore[attr-defined]
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(str(chain))
        self.httpd.socket = context.wrap_socket(self.httpd.socket, server_side=True)
        self.port = self.httpd.server_address[1]
        self.url = f"https://localhost:{self.port}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
