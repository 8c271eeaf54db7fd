"""The DynamoDB tables of a stage, read from the application's own pynamodb models.

``chalicelib.adapters.dynamo.models`` is the specification of every table (keys, GSIs and their
projections, streams). Nothing here restates it: ``app_tables`` asks ``DynamoTables`` which tables
it binds (name, model, stream or not) without connecting anywhere, and each model's pynamodb
schema gives the keys and indexes. A table or index added to the models reaches the stack on the
next synthesis; ``tests/infra`` checks the result against what pynamodb itself creates.

The Powertools idempotency table is not a pynamodb model: its shape (partition key ``id``, TTL on
``expiration``) is Powertools' ``DynamoDBPersistenceLayer`` default, declared in ``IDEMPOTENCY``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

IDEMPOTENCY_TABLE = "idempotency"


@dataclass(frozen=True)
class Index:
    name: str
    key_schema: list[dict[str, str]]  # CloudFormation shape, HASH first
    projection: dict[str, Any]  # {"ProjectionType": ..., "NonKeyAttributes": [...]}


@dataclass(frozen=True)
class TableSpec:
    table: str  # the name without the prefix, e.g. "review-jobs"
    key_schema: list[dict[str, str]]
    attribute_definitions: list[dict[str, str]]
    global_indexes: list[Index] = field(default_factory=list)
    local_indexes: list[Index] = field(default_factory=list)
    stream_view_type: str | None = None
    ttl_attribute: str | None = None


def _hash_first(key_schema: list[dict[str, str]]) -> list[dict[str, str]]:
    """CloudFormation (and the DynamoDB API) want the HASH key first; pynamodb lists them as declared."""
    ordered = sorted(key_schema, key=lambda k: 0 if k["KeyType"] == "HASH" else 1)
    return [{"AttributeName": k["AttributeName"], "KeyType": k["KeyType"]} for k in ordered]


def _projection(raw: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"ProjectionType": raw["ProjectionType"]}
    if raw.get("NonKeyAttributes"):
        out["NonKeyAttributes"] = list(raw["NonKeyAttributes"])
    return out


def _spec(table: str, model: Any, stream: bool) -> TableSpec:
    schema = model._get_schema()  # pynamodb's own create_table input, built offline
    attributes: dict[str, str] = {}
    for definition in schema["attribute_definitions"]:
        attributes[definition["AttributeName"]] = definition["AttributeType"]
    globals_, locals_ = [], []
    for kind, out in (("global_secondary_indexes", globals_), ("local_secondary_indexes", locals_)):
        for index in schema.get(kind) or []:
            for definition in index.get("attribute_definitions") or []:
                attributes[definition["AttributeName"]] = definition["AttributeType"]
            out.append(Index(index["index_name"], _hash_first(index["key_schema"]), _projection(index["projection"])))
    ttl = model._ttl_attribute() if hasattr(model, "_ttl_attribute") else None
    return TableSpec(
        table=table,
        key_schema=_hash_first(schema["key_schema"]),
        # CloudFormation refuses a definition that no key uses: pynamodb lists key attributes only
        attribute_definitions=[{"AttributeName": n, "AttributeType": t} for n, t in sorted(attributes.items())],
        global_indexes=sorted(globals_, key=lambda i: i.name),
        local_indexes=sorted(locals_, key=lambda i: i.name),
        stream_view_type=getattr(model.Meta, "stream_view_type", None) if stream else None,
        ttl_attribute=ttl.attr_name if ttl is not None else None,
    )


def app_tables() -> list[TableSpec]:
    """Every table the application binds, in ``DynamoTables`` order, read without any AWS call."""
    from chalicelib.adapters.dynamo.models import DynamoConfig, DynamoTables, _bind

    class _Recorder(DynamoTables):
        """``DynamoTables`` that records what it binds instead of attaching a connection."""

        def __init__(self) -> None:
            self.bound: list[tuple[str, Any, bool]] = []
            # a placeholder connection: _bound below never touches it, so nothing connects
            super().__init__(DynamoConfig(prefix="", region="us-east-1"), connection=object())  # type: ignore[arg-type]

        def _bound(self, base, table, stream):  # type: ignore[override]
            model = _bind(base, self.config, table, stream)
            self.bound.append((table, model, stream))
            return model

    recorder = _Recorder()
    return [_spec(table, model, stream) for table, model, stream in recorder.bound]


def idempotency_table() -> TableSpec:
    """Powertools idempotency's table, with the attribute names its persistence layer uses by default."""
    key_attr, expiry_attr = "id", "expiration"
    try:  # read the defaults from Powertools itself when it is installed, so a change shows
        import inspect

        from aws_lambda_powertools.utilities.idempotency import DynamoDBPersistenceLayer

        params = inspect.signature(DynamoDBPersistenceLayer.__init__).parameters
        key_attr, expiry_attr = params["key_attr"].default, params["expiry_attr"].default
    except ImportError:  # pragma: no cover - Powertools is in requirements.txt
        pass
    return TableSpec(
        table=IDEMPOTENCY_TABLE,
        key_schema=[{"AttributeName": key_attr, "KeyType": "HASH"}],
        attribute_definitions=[{"AttributeName": key_attr, "AttributeType": "S"}],
        ttl_attribute=expiry_attr,
    )


def all_tables() -> list[TableSpec]:
    return [*app_tables(), idempotency_table()]
