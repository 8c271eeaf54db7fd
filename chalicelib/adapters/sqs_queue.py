"""``ports.WorkQueue`` on Amazon SQS: ``SendMessageBatch`` of up to ten messages a request.

A message is its JSON text. A batch whose every entry SQS refused, or a request that failed,
raises ``QueueUnavailable`` (from botocore's error); a batch of which some entries failed sends
the failed ones once more, then raises. The client is botocore's (the stores' session, so a cold
start resolves credentials once)."""
from __future__ import annotations

import json
from typing import Any, Sequence

from chalicelib.domain.errors import Unavailable

BATCH = 10  # SendMessageBatch's most entries


class QueueUnavailable(Unavailable, RuntimeError):
    """SQS could not enqueue a message; ``__cause__`` holds botocore's error when there is one."""


class SqsWorkQueue:
    def __init__(self, client: Any, queue_url: str) -> None:
        self.client = client
        self.queue_url = queue_url

    def send(self, messages: Sequence[dict], delay_seconds: int = 0) -> None:
        for start in range(0, len(messages), BATCH):
            entries = [{"Id": str(i), "MessageBody": json.dumps(m, separators=(",", ":"), sort_keys=True),
                        "DelaySeconds": int(delay_seconds)} for i, m in enumerate(messages[start : start + BATCH])]
            for attempt in range(2):
                failed = self._send(entries)
                if not failed:
                    break
                entries = [e for e in entries if e["Id"] in failed]
            else:
                raise QueueUnavailable(f"SQS refused {len(failed)} message(s): {sorted(failed.values())[:3]}")

    def _send(self, entries: list[dict]) -> dict[str, str]:
        """The ids of the entries SQS did not take, with its reason."""
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            response = self.client.send_message_batch(QueueUrl=self.queue_url, Entries=entries)
        except (BotoCoreError, ClientError) as exc:
            raise QueueUnavailable(f"SQS SendMessageBatch failed: {exc}") from exc
        return {f["Id"]: f"{f.get('Code')}: {f.get('Message', '')}" for f in response.get("Failed", [])}
