"""A local stand-in for Lambda's DynamoDB event source mapping: reads a table's stream (moto
server) and hands Lambda-shaped batches to a handler, as AWS would.

moto's records lack ``eventSourceARN`` and give ``ApproximateCreationDateTime`` as a datetime; both
are fixed here. A batch whose handler reports ``batchItemFailures`` is retried from the first
failed record, up to ``max_retries`` times, then its records go to ``dead_letters`` (the DLQ).
"""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any, Callable

Handler = Callable[[dict[str, Any]], dict[str, Any] | None]


def _plain(value: Any) -> Any:
    if isinstance(value, dt.datetime):
        return value.timestamp()
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, (bytes, bytearray)):
        import base64

        return base64.b64encode(value).decode()
    return value


@dataclass
class StreamPoller:
    streams_client: Any  # boto3 "dynamodbstreams"
    stream_arn: str
    handler: Handler
    batch_size: int = 10
    max_retries: int = 2
    dead_letters: list[dict[str, Any]] = field(default_factory=list)
    _iterators: dict[str, str] = field(default_factory=dict)

    def _shard_iterators(self) -> dict[str, str]:
        shards = self.streams_client.describe_stream(StreamArn=self.stream_arn)["StreamDescription"]["Shards"]
        for shard in shards:
            sid = shard["ShardId"]
            if sid not in self._iterators:
                self._iterators[sid] = self.streams_client.get_shard_iterator(
                    StreamArn=self.stream_arn, ShardId=sid, ShardIteratorType="TRIM_HORIZON"
                )["ShardIterator"]
        return self._iterators

    def poll_once(self) -> int:
        """Deliver every record available now; returns how many were delivered."""
        delivered = 0
        for sid, iterator in list(self._shard_iterators().items()):
            while iterator:
                out = self.streams_client.get_records(ShardIterator=iterator, Limit=self.batch_size)
                records = [_plain(r) | {"eventSourceARN": self.stream_arn} for r in out.get("Records", [])]
                iterator = out.get("NextShardIterator")
                self._iterators[sid] = iterator
                if not records:
                    break
                self._deliver(records)
                delivered += len(records)
        return delivered

    def _deliver(self, records: list[dict[str, Any]]) -> None:
        for attempt in range(self.max_retries + 1):
            response = self.handler({"Records": records}) or {}
            failures = [f["itemIdentifier"] for f in response.get("batchItemFailures", [])]
            if not failures:
                return
            seqs = [r["dynamodb"]["SequenceNumber"] for r in records]
            first = min(seqs.index(s) for s in failures if s in seqs)
            records = records[first:]  # Lambda retries from the first failed record on
        self.dead_letters.extend(records)
