"""``SqsWorkQueue``: batches of ten, the entries SQS refused sent once more, then an error."""
from __future__ import annotations

import json

import pytest
from botocore.exceptions import ClientError

from chalicelib.adapters.sqs_queue import QueueUnavailable, SqsWorkQueue
from chalicelib.domain.errors import Unavailable


class FakeSqs:
    def __init__(self, refuse: dict[str, int] | None = None, error: Exception | None = None) -> None:
        self.batches: list[list[dict]] = []
        self.refuse = dict(refuse or {})  # message body -> how many times it is refused
        self.error = error

    def send_message_batch(self, QueueUrl: str, Entries: list[dict]) -> dict:  # noqa: N803 -- botocore's names
        if self.error:
            raise self.error
        self.batches.append(Entries)
        failed = []
        for e in Entries:
            if self.refuse.get(e["MessageBody"], 0) > 0:
                self.refuse[e["MessageBody"]] -= 1
                failed.append({"Id": e["Id"], "Code": "InternalError", "Message": "try again", "SenderFault": False})
        return {"Successful": [], "Failed": failed}


def test_messages_go_in_batches_of_ten_as_json_with_their_delay():
    sqs = FakeSqs()
    SqsWorkQueue(sqs, "url").send([{"tenant_id": f"t{i}", "step": 0} for i in range(23)], delay_seconds=10)
    assert [len(b) for b in sqs.batches] == [10, 10, 3]
    assert [json.loads(e["MessageBody"])["tenant_id"] for b in sqs.batches for e in b] == [f"t{i}" for i in range(23)]
    assert {e["DelaySeconds"] for b in sqs.batches for e in b} == {10}


def test_a_refused_entry_is_sent_once_more_then_raises():
    body = json.dumps({"tenant_id": "t1"}, separators=(",", ":"), sort_keys=True)
    sqs = FakeSqs(refuse={body: 1})
    SqsWorkQueue(sqs, "url").send([{"tenant_id": "t0"}, {"tenant_id": "t1"}])
    assert [[e["MessageBody"] for e in b] for b in sqs.batches][1] == [body]  # only the refused one again
    with pytest.raises(QueueUnavailable, match="refused 1"):
        SqsWorkQueue(FakeSqs(refuse={body: 2}), "url").send([{"tenant_id": "t1"}])


def test_a_failed_request_is_unavailable():
    error = ClientError({"Error": {"Code": "AccessDenied", "Message": "no"}}, "SendMessageBatch")
    with pytest.raises(Unavailable) as raised:
        SqsWorkQueue(FakeSqs(error=error), "url").send([{"tenant_id": "t0"}])
    assert raised.value.__cause__ is error
