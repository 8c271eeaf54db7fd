"""What the API key authorizer answers API Gateway: an Allow or a Deny, for every route at once.

API Gateway caches an authorizer's answer per key (the Authorization header) for the authorizer's
TTL and applies the cached policy to whichever route the next request with that key asks for, so
both answers name the whole API (``<api>/<stage>/*/*``), never the one route that was asked.

* A tenant's key: Allow, with ``tenant_id`` in the context (the routes read it there).
* Anything else (no such key, a revoked one, the admin key, a malformed header): an explicit
  Deny, with the reason in the context under ``error``. API Gateway answers it with its
  ACCESS_DENIED gateway response, which the stack (infra/) shapes as the contract's 401 with that
  reason; the embedded server does the same (``local/gateway.py``). The Deny is cached too, so
  a flood of one junk key costs one authorizer call per TTL and never reaches the API function.
"""
from __future__ import annotations

from typing import Any

ANONYMOUS = "anonymous"


def api_wide_arn(method_arn: str) -> str:
    """``arn:aws:execute-api:<region>:<account>:<api>/<stage>/<VERB>/<path>`` -> ``.../<api>/<stage>/*/*``."""
    head, _, rest = method_arn.partition("/")
    stage = rest.split("/", 1)[0]
    if not head or not stage:
        raise ValueError(f"not an execute-api method ARN: {method_arn!r}")
    return f"{head}/{stage}/*/*"


def _policy(effect: str, method_arn: str) -> dict[str, Any]:
    return {
        "Version": "2012-10-17",
        "Statement": [{"Action": "execute-api:Invoke", "Effect": effect, "Resource": [api_wide_arn(method_arn)]}],
    }


def allow(method_arn: str, tenant_id: str) -> dict[str, Any]:
    return {"principalId": tenant_id, "policyDocument": _policy("Allow", method_arn), "context": {"tenant_id": tenant_id}}


def deny(method_arn: str, reason: str) -> dict[str, Any]:
    return {"principalId": ANONYMOUS, "policyDocument": _policy("Deny", method_arn), "context": {"error": reason}}


def denial_reason(answer: dict[str, Any]) -> str | None:
    """The reason of a Deny answer (its context's ``error``), None for an Allow."""
    return (answer.get("context") or {}).get("error")
