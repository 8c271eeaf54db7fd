"""The console on the aws backend, locally: the real server process on DynamoDB (a moto server) and
a real OpenSearch node, embeddings and reviews through the OpenAI-compatible stub. The pages read
only the JSON API, so what is checked here is that every read they make works on this backend."""
from __future__ import annotations

import uuid

import pytest

from tests.browser.conftest import Console, make_driver
from tests.browser.test_console import record_weather, run_recall

pytestmark = [pytest.mark.browser, pytest.mark.e2e, pytest.mark.opensearch]


@pytest.fixture()
def aws_console(tmp_path, openai_stub, start_server, moto_url, opensearch_url):
    prefix = f"console{uuid.uuid4().hex[:8]}-"
    env = {
        "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ACCOUNT_ID_ENDPOINT_MODE": "disabled",
        "HINDSIGHT_BACKEND": "aws", "HINDSIGHT_TABLE_PREFIX": prefix, "HINDSIGHT_DYNAMODB_ENDPOINT": moto_url,
        "HINDSIGHT_CREATE_TABLES": "true", "HINDSIGHT_OPENSEARCH_ENDPOINT": opensearch_url, "HINDSIGHT_OPENSEARCH_SERVICE": "none",
        "HINDSIGHT_OPENSEARCH_INDEX": f"{prefix}experiences", "HINDSIGHT_EMBEDDER": "openai", "HINDSIGHT_EMBEDDING_DIM": "64",
        "HINDSIGHT_OPENAI_BASE_URL": openai_stub.base_url, "HINDSIGHT_OPENAI_API_KEY": "stub", "HINDSIGHT_ADMIN_KEY": "admin-" + uuid.uuid4().hex,
    }
    srv = start_server(env=env)
    driver = make_driver(tmp_path / "profile")
    try:
        yield Console(driver, srv)
    finally:
        driver.quit()


def test_every_page_reads_the_aws_backend(aws_console):
    console = aws_console
    key = console.tenant("aws-team")
    client = console.client(key)
    traj = record_weather(client, "aws-run-1")
    assert traj["status"] == "reviewed" and traj["experience_ids"], traj
    lesson_id = traj["experience_ids"][0]

    console.open()
    console.sign_in(key)
    console.wait_ready("overview")
    console.wait(lambda d: console.css("#learned-per-day").get_attribute("data-loaded") == "yes", what="lessons per day")
    assert console.css('[data-stat="active lessons"] .n').text == str(len(traj["experience_ids"]))
    console.go("#/lessons", "lessons")
    console.wait(lambda d: console.css("#lesson-count").get_attribute("data-loaded") == "yes", what="the lesson list")
    assert lesson_id in [r.get_attribute("data-id") for r in console.all("#lessons-table tr[data-id]")]
    console.go(f"#/lesson/{lesson_id}", "lesson")
    assert [a.get_attribute("data-trajectory") for a in console.all("article.source")] == ["aws-run-1"]
    assert len(console.all("article.source ol.timeline-list li")) == 4
    console.go("#/playground", "playground")
    run_recall(console)
    assert lesson_id in [h.get_attribute("data-id") for h in console.all("#recall-result li.hit")]
    console.screenshot("09-aws-playground")
    console.go("#/admin", "admin")
    console.sign_in(console.admin_key, "admin")
    console.wait(lambda d: console.all("#tenants"), what="the tenants table")
    assert "aws-team" in console.css("#tenants").text
    assert console.browser_errors() == []
