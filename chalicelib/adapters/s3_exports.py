"""``ports.ExportStore`` on S3: one object per export part, ``<prefix><tenant>/<export>/part-00001.jsonl``,
encrypted at rest by the bucket's default (infra/: SSE-S3, versioning off, a lifecycle that expires
exports). botocore's client, not boto3's (the functions do not import boto3 otherwise)."""
from __future__ import annotations

from typing import Any

from chalicelib.domain.errors import NotFound, Unavailable


class S3ExportStore:
    def __init__(self, bucket: str, prefix: str = "exports/", region: str = "us-east-1", endpoint: str | None = None,
                 client: Any = None) -> None:
        self.bucket, self.prefix, self.region, self.endpoint = bucket, prefix, region, endpoint
        self._client = client

    @property
    def client(self) -> Any:
        if self._client is None:
            import botocore.session

            self._client = botocore.session.get_session().create_client("s3", region_name=self.region,
                                                                         endpoint_url=self.endpoint)
        return self._client

    def _key(self, key: str) -> str:
        return self.prefix + key

    def write(self, key: str, data: bytes) -> None:
        try:
            self.client.put_object(Bucket=self.bucket, Key=self._key(key), Body=data, ContentType="application/x-ndjson")
        except Exception as exc:  # botocore's errors stay behind the port
            raise Unavailable(f"S3 put of export part failed: {type(exc).__name__}") from exc

    def read(self, key: str) -> bytes:
        try:
            answer = self.client.get_object(Bucket=self.bucket, Key=self._key(key))
        except self.client.exceptions.NoSuchKey:
            raise NotFound(f"export part {key} not found") from None
        except Exception as exc:
            raise Unavailable(f"S3 get of export part failed: {type(exc).__name__}") from exc
        return bytes(answer["Body"].read())

    def delete_prefix(self, prefix: str) -> int:
        gone = 0
        try:
            while True:
                listed = self.client.list_objects_v2(Bucket=self.bucket, Prefix=self._key(prefix), MaxKeys=1000)
                keys = [{"Key": o["Key"]} for o in listed.get("Contents", [])]
                if not keys:
                    return gone
                self.client.delete_objects(Bucket=self.bucket, Delete={"Objects": keys, "Quiet": True})
                gone += len(keys)
        except Exception as exc:
            raise Unavailable(f"S3 delete of exports failed: {type(exc).__name__}") from exc

    def location(self, key: str) -> str:
        return f"s3://{self.bucket}/{self._key(key)}"
