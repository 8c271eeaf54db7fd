"""``ports.Checkpoints`` on DynamoDB: one item per name in the maintenance table."""
from __future__ import annotations

import json

from chalicelib.adapters.dynamo.errors import boundary
from chalicelib.adapters.dynamo.items import dumps
from chalicelib.adapters.dynamo.models import DynamoTables


class DynamoCheckpoints:
    def __init__(self, tables: DynamoTables) -> None:
        self.Item = tables.checkpoints

    def load(self, name: str) -> dict | None:
        with boundary("load checkpoint"):
            try:
                return json.loads(self.Item.get(name, consistent_read=True).doc)
            except self.Item.DoesNotExist:
                return None

    def save(self, name: str, state: dict) -> None:
        with boundary("save checkpoint"):
            self.Item(name, doc=dumps(state)).save()

    def delete(self, name: str) -> None:
        with boundary("delete checkpoint"):
            self.Item(name).delete()
