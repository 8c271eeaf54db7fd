"""In the cloud the functions get secret ARNs, never values (infra/). Each key is read from Secrets
Manager (moto here) when a request first needs it, through botocore without importing boto3 (which
the API function needs for nothing else), and kept: loading the settings reads nothing, a tenant's
request never reads the admin key, and the LLM client reads the OpenAI key when it is first built."""
import json
import os
import subprocess
import sys
import uuid

import boto3

from devtools.moto_server import REGION, moto_endpoint

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

CODE = """
import json, sys
from chalicelib import container
from chalicelib.services import tenants
seen = []
settings = container.get_settings()
seen.append([settings.admin_key, settings.openai_api_key, len(container._secret_values)])
deps = container.get_deps()
tenant, key = tenants.create_tenant(deps, "t")
seen.append([tenants.authenticate(deps, "Bearer " + key) == tenant.tenant_id, len(container._secret_values)])
seen.append([tenants.is_admin(deps, "hsadmin_from_the_secret"), tenants.is_admin(deps, "hsadmin_guess"),
             len(container._secret_values)])
try:
    tenants.authenticate(deps, "Bearer hsadmin_from_the_secret")
except Exception as exc:
    seen.append(str(exc))
seen.append([deps.embedder.client._headers["Authorization"], len(container._secret_values), "boto3" in sys.modules])
print(json.dumps(seen))
"""


def test_each_key_is_read_from_its_secret_when_first_needed_without_boto3():
    endpoint = moto_endpoint()
    client = boto3.client("secretsmanager", endpoint_url=endpoint, region_name=REGION,
                          aws_access_key_id="testing", aws_secret_access_key="testing")
    run = uuid.uuid4().hex[:8]
    arns = [client.create_secret(Name=f"hindsight-test-{name}-{run}", SecretString=value)["ARN"]
            for name, value in (("admin", "hsadmin_from_the_secret"), ("openai", "sk-from-the-secret"))]
    env = {"PATH": os.environ["PATH"], "HINDSIGHT_BACKEND": "aws", "HINDSIGHT_AWS_REGION": REGION,
           "AWS_DEFAULT_REGION": REGION, "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
           "AWS_ENDPOINT_URL_SECRETS_MANAGER": endpoint, "NO_PROXY": "127.0.0.1",
           "HINDSIGHT_DYNAMODB_ENDPOINT": endpoint, "HINDSIGHT_CREATE_TABLES": "true",
           "HINDSIGHT_TABLE_PREFIX": f"secrets-{run}-", "HINDSIGHT_EMBEDDER": "openai",
           "HINDSIGHT_ADMIN_KEY_SECRET": arns[0], "HINDSIGHT_OPENAI_API_KEY_SECRET": arns[1]}
    out = subprocess.run([sys.executable, "-c", CODE], cwd=ROOT, env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-3000:]
    assert json.loads(out.stdout) == [
        [None, None, 0],  # the settings name the secrets and read neither
        [True, 0],  # a tenant's key authenticates without the admin key
        [True, False, 1],  # the admin key, read once
        "the admin key cannot read or write tenant data; use a tenant key",
        ["Bearer sk-from-the-secret", 2, False],  # the OpenAI key, when the client is built; no boto3
    ]
