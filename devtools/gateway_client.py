"""``chalice.test.Client`` whose requests go through the embedded server's gateway
(``local.gateway.LeanGateway``) instead of Chalice's stock emulation.

The difference that matters: a key the authorizer denies. API Gateway then answers with its
ACCESS_DENIED gateway response, which the stack (infra/) shapes as the contract's 401 with the
authorizer's reason, and so does the embedded server; Chalice's emulation knows nothing of
gateway responses and answers 403 ``{"Message": ...}``. Tests of the HTTP contract drive the app
through this client, so they see what clients of either deployment see.
"""
from __future__ import annotations

from typing import Any

from chalice.test import Client, TestHTTPClient


class GatewayClient(Client):
    @property
    def http(self) -> TestHTTPClient:
        if self._http_client is None:
            from local.gateway import LeanGateway

            client = TestHTTPClient(self._app, self._chalice_config)
            client._local_gateway = LeanGateway(self._app, self._chalice_config)
            self._http_client = client
        return self._http_client


def gateway_client(chalice_app: Any, **kwargs: Any) -> GatewayClient:
    return GatewayClient(chalice_app, **kwargs)
