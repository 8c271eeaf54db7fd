"""The aws wiring signs the index's requests with the credentials the DynamoDB stores' botocore
session resolved, not with a session of its own (each session resolves them again on a cold
start); an unsigned index takes none."""
import pytest

from chalicelib import container
from chalicelib.settings import Settings


@pytest.fixture
def aws_env(monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "role-key")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "role-secret")
    monkeypatch.setenv("AWS_SESSION_TOKEN", "role-token")


def aws_deps(service: str):
    return container.build(Settings(backend="aws", aws_region="eu-west-1", embedder="hash", opensearch_service=service,
                                    opensearch_endpoint="https://search-x.eu-west-1.es.amazonaws.com"))


@pytest.mark.parametrize("service", ["es", "aoss"])
def test_a_signed_index_uses_the_stores_sessions_credentials(aws_env, service):
    deps = aws_deps(service)
    session = deps.queue.tables.connection.session
    signer = deps.index.client.signer
    assert signer.credentials is session.get_credentials()
    assert (signer.service, signer.region) == (service, "eu-west-1")
    assert signer.credentials.get_frozen_credentials().access_key == "role-key"


def test_an_unsigned_index_has_no_signer(aws_env):
    assert aws_deps("none").index.client.signer is None
