"""What a Lambda cold start pays for, checked in fresh interpreters: importing the app builds no
validator, loads no SDK and none of the domain code a request has not asked for yet; building the
aws wiring connects to nothing and leaves the index client, numpy and the reviewer unimported until a
request searches, reviews or embeds, and the reviewer and the embedder never import the openai SDK
(their client is urllib3's, which botocore loads anyway)."""
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Never needed by importing the app: the SDKs and clients are built with the Deps on the first
# request that needs them (DynamoDB: any authenticated request; OpenSearch, openai: search, review,
# embedding; Powertools: the event handlers); numpy and ONNX are the embedded backend's.
HEAVY = ("boto3", "botocore", "pynamodb", "urllib3", "requests", "httpx", "openai", "opensearchpy", "numpy",
         "onnxruntime", "tokenizers", "aws_lambda_powertools", "aws_xray_sdk", "pydantic_settings")
# Our own modules a request imports when it needs them: the services and the domain behind them,
# the adapters, the ports, the OpenAPI document.
OWN_LATER = ("chalicelib.services.", "chalicelib.domain.", "chalicelib.adapters.", "chalicelib.ports",
             "chalicelib.api.openapi", "chalicelib.lambda_handlers", "chalicelib.observability")
OWN_AT_IMPORT = ("chalicelib.services.deps", "chalicelib.domain.errors", "chalicelib.domain.usage",
                 "chalicelib.adapters.review_signal")

LOADED = ("import json, sys; print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in {heavy} "
          "or (m.startswith({own}) and m not in {at_import}))))").format(heavy=set(HEAVY), own=OWN_LATER, at_import=OWN_AT_IMPORT)


def run(code: str, **env: str) -> str:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT,
                         env={**os.environ, "HINDSIGHT_BACKEND": "aws", "AWS_DEFAULT_REGION": "us-east-1", **env})
    return out.stdout.strip()


def test_importing_the_app_builds_no_validator_and_skips_pydantic_settings():
    code = ("import sys, app; from chalicelib.api import schemas as s; "
            "built = [n for n, m in vars(s).items() if isinstance(m, type) and issubclass(m, s.BaseModel) "
            "and m is not s.BaseModel and m.__pydantic_complete__]; "
            "print('pydantic_settings' in sys.modules, built)")
    assert run(code) == "False []"


def test_importing_the_app_loads_no_sdk_and_no_service_until_a_request_needs_it():
    code = "import app; print(len(app.api.routes))\n" + LOADED
    routes, loaded = run(code).splitlines()
    assert int(routes) > 20  # every route was declared
    assert json.loads(loaded) == []


HEALTH = """
import json, app
event = {"resource": "/v1/health", "path": "/v1/health", "httpMethod": "GET", "headers": {}, "multiValueHeaders": {},
         "queryStringParameters": None, "multiValueQueryStringParameters": None, "pathParameters": None,
         "stageVariables": None, "body": None, "isBase64Encoded": False,
         "requestContext": {"resourcePath": "/v1/health", "httpMethod": "GET", "path": "/v1/v1/health", "stage": "v1",
                            "requestId": "r", "identity": {"sourceIp": "127.0.0.1"}}}
response = app.app(event, None)  # as Lambda calls it
print(response["statusCode"], json.loads(response["body"])["backend"])
"""


def test_a_request_that_touches_no_store_loads_none_of_them_either():
    status, loaded = run(HEALTH + LOADED).splitlines()
    assert status == "200 aws"
    assert json.loads(loaded) == []


def test_the_aws_wiring_imports_the_index_client_and_the_reviewer_on_first_use():
    code = ("import sys; from chalicelib import container; deps = container.get_deps(); "
            "print(*(m in sys.modules for m in ('opensearchpy', 'openai', 'numpy', 'chalicelib.adapters.reviewers.llm'))); "
            "deps.index.spec; print('chalicelib.adapters.opensearch.http' in sys.modules, 'opensearchpy' in sys.modules, "
            "type(deps.index._target()).__name__); "
            "deps.reviewer.review; print(type(deps.reviewer._target()).__name__); "
            "print(deps.reviewer.client.base_url, deps.embedder.client.timeout, "
            "*(m in sys.modules for m in ('openai', 'httpx', 'chalicelib.adapters.openai_http')))")
    lines = run(code, HINDSIGHT_EMBEDDER="openai", HINDSIGHT_OPENAI_BASE_URL="http://127.0.0.1:9/v1",
                HINDSIGHT_LLM_TIMEOUT_SECONDS="7.5").splitlines()
    assert lines == ["False False False False", "True False OpenSearchVectorIndex", "LLMReviewer",
                     "http://127.0.0.1:9/v1 7.5 False False True"]


def test_the_review_workers_lambda_handler_loads_no_api_and_masks_keys_in_the_runtimes_log_handler():
    """Lambda imports chalicelib.review_worker_lambda for the worker (infra/), not app.py."""
    code = ("import json, logging, sys; logging.getLogger().addHandler(logging.StreamHandler()); "
            "from chalicelib import redaction, review_worker_lambda; "
            "print(json.dumps([sorted(m for m in sys.modules if m == 'app' or m.split('.')[0] == 'chalice' "
            "or m.startswith('chalicelib.api')), [redaction._FILTER in h.filters for h in logging.getLogger().handlers]]))")
    assert json.loads(run(code)) == [[], [True]]
