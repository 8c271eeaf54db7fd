#!/usr/bin/env python3
"""Call an admin route of a deployed stage, signed with your AWS credentials (SigV4).

The stack authorizes the admin routes (tenants, keys, maintenance) by IAM: API Gateway checks
the request's signature and that the caller may ``execute-api:Invoke`` the route (attach the
stack's ``AdminPolicyArn`` output to the operators' role), and CloudTrail records the call.
There is no admin key in the cloud.

    .venv/bin/python infra/admin_call.py --stack prod POST /v1/tenants '{"name": "acme"}'
    .venv/bin/python infra/admin_call.py --url https://<id>.execute-api.<region>.amazonaws.com/api GET /v1/tenants

``--stack`` reads the endpoint from the stack's ``EndpointURL`` output. The credentials are
botocore's usual chain (environment, profile, SSO, instance role). The same signing in a script:

    import botocore.session, urllib3
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    session = botocore.session.get_session()
    request = AWSRequest("POST", url + "/v1/tenants", data=b'{"name": "acme"}', headers={"Content-Type": "application/json"})
    SigV4Auth(session.get_credentials(), "execute-api", region).add_auth(request)
    urllib3.request("POST", request.url, body=request.body, headers=dict(request.headers))
"""
from __future__ import annotations

import argparse
import json
import sys
from typing import Any
from urllib.parse import urlsplit

SERVICE = "execute-api"


def signed_request(method: str, url: str, body: bytes | None, credentials: Any, region: str) -> tuple[str, dict[str, str], bytes | None]:
    """(url, headers, body) of the request, signed for API Gateway in ``region``."""
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest

    headers = {"Content-Type": "application/json"} if body is not None else {}
    request = AWSRequest(method=method.upper(), url=url, data=body, headers=headers)
    SigV4Auth(credentials, SERVICE, region).add_auth(request)
    return request.url, dict(request.headers.items()), body


def region_of(url: str) -> str | None:
    """``https://<id>.execute-api.<region>.amazonaws.com/...`` -> ``<region>``."""
    parts = urlsplit(url).hostname.split(".") if urlsplit(url).hostname else []
    return parts[2] if len(parts) > 3 and parts[1] == SERVICE else None


def endpoint_of(stack: str, region: str | None) -> str:
    import boto3

    outputs = boto3.client("cloudformation", region_name=region).describe_stacks(StackName=f"hindsight-{stack}")["Stacks"][0]["Outputs"]
    return next(o["OutputValue"] for o in outputs if o["OutputKey"] == "EndpointURL").rstrip("/")


def call(method: str, url: str, body: bytes | None, credentials: Any, region: str, timeout: float = 30.0) -> tuple[int, bytes]:
    import urllib3

    target, headers, data = signed_request(method, url, body, credentials, region)
    response = urllib3.PoolManager().request(method.upper(), target, body=data, headers=headers,
                                             timeout=urllib3.Timeout(total=timeout), retries=False)
    return response.status, response.data


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--stack", help="the stage whose EndpointURL output to call")
    where.add_argument("--url", help="the API's base URL, up to the stage (…/api)")
    parser.add_argument("--region", help="default: the URL's, else your configured region")
    parser.add_argument("method")
    parser.add_argument("path", help="e.g. /v1/tenants")
    parser.add_argument("body", nargs="?", help="JSON")
    args = parser.parse_args(argv)
    import botocore.session

    session = botocore.session.get_session()
    base = args.url.rstrip("/") if args.url else endpoint_of(args.stack, args.region)
    region = args.region or region_of(base) or session.get_config_variable("region")
    if not region:
        parser.error("no region: give --region")
    body = json.dumps(json.loads(args.body)).encode() if args.body else None
    status, data = call(args.method, base + args.path, body, session.get_credentials(), region)
    print(data.decode(errors="replace"))
    return 0 if status < 400 else 1


if __name__ == "__main__":
    sys.exit(main())
