"""One TLS context per CA bundle for the service's own HTTP clients (the OpenSearch index's and
the OpenAI-compatible endpoint's).

Given ``ca_certs``, urllib3 loads the bundle into the connection's SSL context at every new
connection (``load_verify_locations``: certifi's ~150 certificates parsed again, 40-60 ms with
OpenSSL 3 on this machine). A review worker's cold start opens one to OpenSearch and one to the LLM
endpoint, and a warm one opens more when a kept connection was dropped. A pool given a context that
already holds the bundle loads nothing: the process parses it once.
"""
from __future__ import annotations

import functools
import ssl


@functools.lru_cache(maxsize=4)
def verified_context(ca_certs: str) -> ssl.SSLContext:
    """urllib3's default client context (TLS 1.2 or later, the certificate and the host name
    checked) with the bundle at ``ca_certs`` loaded; shared by every pool that checks with it
    (an SSLContext is safe to share between threads)."""
    from urllib3.util.ssl_ import create_urllib3_context

    context = create_urllib3_context(cert_reqs=ssl.CERT_REQUIRED)
    context.load_verify_locations(cafile=ca_certs)
    return context
