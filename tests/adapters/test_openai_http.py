"""The service's OpenAI-compatible client against the local stub server (a real HTTP server):
the requests it sends, its retries and waits, and the errors it raises."""
from __future__ import annotations

import json
import time

import pytest
import urllib3

from chalicelib.adapters import openai_http as oh
from chalicelib.adapters.openai_http import ChatChoice, Embedding, OpenAICompatibleClient
from devtools.net import free_port
from devtools.openai_stub import OpenAIStub

SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"], "additionalProperties": False}
MESSAGES = [{"role": "system", "content": "Answer in JSON."}, {"role": "user", "content": "<trajectory>\n#1 USER hi\n</trajectory>"}]
CHAT = {"model": "model-full", "messages": MESSAGES, "temperature": 0, "max_tokens": 300,
        "response_format": {"type": "json_schema", "json_schema": {"name": "trajectory_review", "strict": True, "schema": SCHEMA}}}


@pytest.fixture()
def stub():
    with OpenAIStub() as s:
        yield s


def client(stub, waits: list[float] | None = None, **kw) -> OpenAICompatibleClient:
    kw = {"api_key": "sk-test", "max_retries": 2, "timeout": 10.0} | kw
    return OpenAICompatibleClient(stub.base_url if stub else None, sleep=(waits.append if waits is not None else time.sleep), **kw)


def test_the_requests_are_the_ones_the_openai_sdk_sends_and_the_answers_read_the_same(stub):
    openai = pytest.importorskip("openai")  # the SDK is a test tool here: the service never imports it
    sdk = openai.OpenAI(base_url=stub.base_url, api_key="sk-test", max_retries=0)
    ours = client(stub)

    sdk_chat = sdk.chat.completions.create(**CHAT)
    our_chat = ours.chat(**CHAT)
    sdk_emb = sdk.embeddings.create(model="text-embedding-3-small", input=["a b", "c d", " "], dimensions=16)
    our_emb = ours.embeddings(model="text-embedding-3-small", input=["a b", "c d", " "], dimensions=16)

    sdk_chat_req, our_chat_req, sdk_emb_req, our_emb_req = stub.state.requests
    assert our_chat_req == sdk_chat_req and our_emb_req == sdk_emb_req
    assert set(our_chat_req) == set(CHAT)  # nothing added: the SDK sent these fields and no other
    for sdk_headers, our_headers in ((stub.state.headers[0], stub.state.headers[1]), (stub.state.headers[2], stub.state.headers[3])):
        lower_sdk = {k.lower(): v for k, v in sdk_headers.items()}
        lower_ours = {k.lower(): v for k, v in our_headers.items()}
        for name in ("authorization", "content-type", "accept"):
            assert lower_ours[name] == lower_sdk[name], name
    assert our_chat == ChatChoice(sdk_chat.choices[0].message.content, sdk_chat.choices[0].finish_reason,
                                  sdk_chat.usage.total_tokens)
    assert our_chat.total_tokens > 0  # the tokens a tenant's reviews are metered by
    assert our_emb == [Embedding(d.index, d.embedding) for d in sdk_emb.data]


def test_an_answer_without_usage_counts_no_tokens():
    from chalicelib.adapters.openai_http import _total_tokens

    assert _total_tokens({"choices": []}) == 0
    assert _total_tokens({"usage": None}) == 0
    assert _total_tokens({"usage": {"total_tokens": "12"}}) == 0
    assert _total_tokens({"usage": {"prompt_tokens": 5, "total_tokens": 12}}) == 12


def test_a_chat_answer_cut_off_at_max_tokens_says_so(stub):
    stub.faults(truncate=1)
    choice = client(stub).chat(**CHAT)
    assert choice.finish_reason == "length"
    with pytest.raises(ValueError):
        json.loads(choice.content)
    assert client(stub).chat(**CHAT).finish_reason == "stop"


def test_without_a_key_no_authorization_header_is_sent(stub):
    client(stub, api_key=None).chat(**CHAT)
    assert "authorization" not in {k.lower() for k in stub.state.headers[0]}


def test_a_rate_limit_waits_as_long_as_retry_after_says_then_succeeds(stub):
    waits: list[float] = []
    stub.faults(fail=1, status=429, retry_after="0.25")
    assert client(stub, waits).embeddings(model="m", input=["x"], dimensions=8)[0].index == 0
    assert waits == [0.25] and len(stub.state.requests) == 2


def test_server_errors_back_off_exponentially_with_jitter_then_raise_the_last_error(stub):
    waits: list[float] = []
    stub.faults(fail=3)
    with pytest.raises(oh.InternalServerError) as caught:
        client(stub, waits).chat(**CHAT)
    assert len(stub.state.requests) == 3  # the first attempt and max_retries=2
    assert 0.375 <= waits[0] <= 0.5 and 0.75 <= waits[1] <= 1.0 and len(waits) == 2
    err = caught.value
    assert (err.status_code, str(err)) == (500, "Error code: 500 - stub failure")
    assert err.body == {"message": "stub failure", "type": "server_error"}


@pytest.mark.parametrize(("status", "error", "retried"), [
    (400, oh.BadRequestError, False), (401, oh.AuthenticationError, False), (403, oh.PermissionDeniedError, False),
    (404, oh.NotFoundError, False), (422, oh.UnprocessableEntityError, False), (418, oh.APIStatusError, False),
    (408, oh.APIStatusError, True), (409, oh.ConflictError, True), (429, oh.RateLimitError, True),
    (503, oh.InternalServerError, True),
])
def test_each_status_raises_its_error_and_only_the_transient_ones_are_retried(stub, status, error, retried):
    waits: list[float] = []
    stub.faults(fail=5, status=status)
    with pytest.raises(error) as caught:
        client(stub, waits, max_retries=1).chat(**CHAT)
    assert type(caught.value) is error and caught.value.status_code == status
    assert isinstance(caught.value, oh.APIError)
    assert len(stub.state.requests) == (2 if retried else 1) and len(waits) == (1 if retried else 0)


def test_a_retry_after_longer_than_two_minutes_is_not_waited_for(stub):
    waits: list[float] = []
    stub.faults(fail=1, status=429, retry_after="600")
    with pytest.raises(oh.RateLimitError):
        client(stub, waits).chat(**CHAT)
    assert waits == [] and len(stub.state.requests) == 1


def test_retry_after_is_read_in_milliseconds_seconds_or_as_a_date():
    assert oh.retry_after({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    assert oh.retry_after({"retry-after": "2"}) == 2.0
    in_30s = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(time.time() + 30))
    assert 27 <= oh.retry_after({"retry-after": in_30s}) <= 30
    assert oh.retry_after({"retry-after": "soon"}) is None and oh.retry_after({}) is None
    assert oh.backoff(0, 0.0) <= 0.5 and oh.backoff(10, None) <= 8.0  # no usable server delay: exponential, capped


def test_a_refused_connection_is_a_connection_error_retried_then_raised():
    waits: list[float] = []
    dead = OpenAICompatibleClient(f"http://127.0.0.1:{free_port()}/v1", max_retries=2, sleep=waits.append)
    with pytest.raises(oh.APIConnectionError) as caught:
        dead.embeddings(model="m", input=["x"])
    assert type(caught.value) is oh.APIConnectionError and str(caught.value) == "Connection error."
    assert isinstance(caught.value.__cause__, urllib3.exceptions.NewConnectionError)
    assert len(waits) == 2


def test_a_slow_answer_times_out_each_attempt_then_raises_a_timeout(stub):
    waits: list[float] = []
    stub.faults(delay=1.0)
    with pytest.raises(oh.APITimeoutError) as caught:
        client(stub, waits, timeout=0.2, max_retries=1).chat(**CHAT)
    assert f"{type(caught.value).__name__}: {caught.value}" == "APITimeoutError: Request timed out."  # what a failed review records
    assert isinstance(caught.value.__cause__, urllib3.exceptions.ReadTimeoutError)
    assert len(stub.state.requests) == 2 and len(waits) == 1


def test_a_base_url_that_is_not_http_is_refused_at_construction():
    with pytest.raises(ValueError, match="http"):
        OpenAICompatibleClient("127.0.0.1:8900/v1")
    assert OpenAICompatibleClient(None).base_url == "https://api.openai.com/v1"
