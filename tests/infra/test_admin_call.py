"""infra/admin_call.py: an admin call signed with AWS credentials, as API Gateway's IAM
authorization checks it. The signature is recomputed here from the request a local server
received, with the same credentials: a request changed on the way, or signed for another
service or region, would not match."""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from botocore.credentials import Credentials

from infra import admin_call

CREDENTIALS = Credentials("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "session-token")


@pytest.fixture()
def gateway():
    seen = []

    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            seen.append((self.command, self.path, {k: v for k, v in self.headers.items()}, body))
            out = json.dumps({"tenant_id": "t_1"}).encode()
            self.send_response(201)
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

        do_POST = do_GET = _answer  # noqa: N815

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/api", seen
    server.shutdown()
    server.server_close()


def test_the_call_carries_a_sigv4_signature_for_execute_api_that_verifies(gateway):
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest

    base, seen = gateway
    status, data = admin_call.call("POST", base + "/v1/tenants", b'{"name": "acme"}', CREDENTIALS, "eu-west-3")
    assert status == 201 and json.loads(data) == {"tenant_id": "t_1"}
    ((method, path, headers, body),) = seen
    assert (method, path, body) == ("POST", "/api/v1/tenants", b'{"name": "acme"}')
    auth = headers["Authorization"]
    assert auth.startswith("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/") and "/eu-west-3/execute-api/aws4_request" in auth
    assert headers["X-Amz-Security-Token"] == "session-token"
    # the signature, recomputed from what arrived, matches; a body changed on the way does not
    assert "Signature=" + signature_of(base, headers, body) in auth
    assert "Signature=" + signature_of(base, headers, b'{"name": "evil"}') not in auth


def signature_of(base: str, headers: dict, body: bytes) -> str:
    """SigV4 of the received request, at its own X-Amz-Date, over the headers it says it signed."""
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest

    signed = headers["Authorization"].split("SignedHeaders=")[1].split(",")[0].split(";")
    lower = {k.lower(): v for k, v in headers.items()}
    request = AWSRequest("POST", base + "/v1/tenants", data=body, headers={h: lower[h] for h in signed})
    request.context["timestamp"] = lower["x-amz-date"]
    signer = SigV4Auth(CREDENTIALS, "execute-api", "eu-west-3")
    return signer.signature(signer.string_to_sign(request, signer.canonical_request(request)), request)


def test_the_region_comes_from_the_apis_host():
    assert admin_call.region_of("https://abc123.execute-api.eu-west-3.amazonaws.com/api") == "eu-west-3"
    assert admin_call.region_of("http://127.0.0.1:9000/api") is None
