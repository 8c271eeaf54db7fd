"""In the cloud the functions get secret ARNs, never values: the first ``get_settings()`` reads the
admin key and the OpenAI key from Secrets Manager (moto here), through botocore, without importing
boto3 (which the API function needs for nothing else)."""
import json
import os
import subprocess
import sys

import boto3

from devtools.moto_server import REGION, moto_endpoint

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

CODE = """
import json, sys
from chalicelib.container import get_settings
settings = get_settings()
print(json.dumps([settings.admin_key, settings.openai_api_key, "boto3" in sys.modules]))
"""


def test_the_keys_named_by_their_secrets_are_read_from_secrets_manager_without_boto3():
    endpoint = moto_endpoint()
    client = boto3.client("secretsmanager", endpoint_url=endpoint, region_name=REGION,
                          aws_access_key_id="testing", aws_secret_access_key="testing")
    arns = [client.create_secret(Name=f"hindsight-test-{name}-{os.getpid()}", SecretString=value)["ARN"]
            for name, value in (("admin", "hsadmin_from_the_secret"), ("openai", "sk-from-the-secret"))]
    env = {"PATH": os.environ["PATH"], "HINDSIGHT_BACKEND": "aws", "HINDSIGHT_AWS_REGION": REGION,
           "AWS_DEFAULT_REGION": REGION, "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
           "AWS_ENDPOINT_URL_SECRETS_MANAGER": endpoint, "NO_PROXY": "127.0.0.1",
           "HINDSIGHT_ADMIN_KEY_SECRET": arns[0], "HINDSIGHT_OPENAI_API_KEY_SECRET": arns[1]}
    out = subprocess.run([sys.executable, "-c", CODE], cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == ["hsadmin_from_the_secret", "sk-from-the-secret", False]
