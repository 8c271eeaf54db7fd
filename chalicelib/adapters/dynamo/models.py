"""The DynamoDB tables of one deployment: pynamodb models bound to a table prefix at run time.

pynamodb keeps a table's name and endpoint on the model class (``Meta``). This module declares each
table's schema once, unbound, and ``DynamoTables`` derives one subclass per table with its own
``Meta``: names from ``DynamoConfig.prefix``, region, host and credentials from the config. Two
``DynamoTables`` with different prefixes (stages, tests) share no connection and no index object.

Tables, keys and the access pattern each one serves (``#`` joins key parts, ``<ts>`` is a
20-digit microsecond timestamp, so string order is time order)::

  table         partition key          sort key               serves
  ────────────  ─────────────────────  ─────────────────────  ────────────────────────────────────
  tenants       pk=tenant#<t>          sk=tenant              the tenant (name, created_at)
                pk=key#<hash>          sk=key                 tenant_for_key: one GetItem
                pk=tenant#<t>          sk=key#<hash>          revoke_keys: one consistent Query
    GSI by_created  listing="tenant"   created_sk=<ts>#<t>    list_tenants, oldest first (sparse)
  trajectories  tenant_id              trajectory_id          get / create / finalize (conditional)
    GSI by_status   tenant_status=<t>#<status>  trajectory_id count_by_status (KEYS_ONLY)
    GSI outbox      outbox_shard       outbox_sk=<ts>#<t>#<tr> finalized_unreviewed (sparse:
                                                              only while finalized)
  events        pk=<t>#<tr>            sk=seq#<12-digit seq>  events in arrival order
                pk=<t>#<tr>            sk=evt#<event_id>      the idempotency marker of an event; TTL on
                                                              ``expires`` (the trajectory's events_expire_at)
                                                              drops both
  experiences   tenant_id              experience_id          get / get_many / put
    GSI by_created  tenant_id          created_sk=<ts>#<id>   list newest first
    GSI by_status   tenant_status      created_sk             list by status, count_by_status
    GSI by_agent    tenant_agent       created_sk             list by agent (+ status as filter)
    GSI by_fingerprint  fp_scope       created_sk             exact-scope fingerprint lookup (sparse:
    GSI by_situation    situation_scope created_sk            only active ones; the scope key is
                                                              sha256 of [tenant, agent, user, key];
                                                              a forgotten one's fingerprint key adds
                                                              "forgotten": its tombstone's lookup)
                                                              every put_if conditions on ``rev``
    GSI active      active_shard       active_sk=<t>#<id>     scan_active across tenants (sparse)
  review-jobs   tenant_id              job=<tr>#<kind>        enqueue / complete (conditional)
    GSI due         due_shard          due_sk=<ts>#<t>#<tr>#<kind>  claim oldest due first, pending
                                                              count (sparse: pending or leased)
  rate-limits   bucket=tenant#<t>      -                      the tenant's token bucket: one number
                                                              (tat_us) moved by conditional updates;
                                                              TTL on ``expires`` drops idle tenants
  maintenance   name                   -                      checkpoints of work that outlasts an
                                                              invocation (decay's pass, admin jobs)
  recalls       tenant_id              key=recall#<id>        what a recall served (BatchGetItem), and
                                                              ``trajectory_id``: the run it is bound to
                                                              (attach: a conditional update)
                tenant_id              key=credit#<tr>#<exp>  credit marker (conditional put); TTL on
                                                              ``expires`` drops both once expired

Streams (NEW_AND_OLD_IMAGES) on trajectories, events and review-jobs: the review Lambda reads the
jobs stream; finalize shows as a MODIFY on trajectories. The cross-tenant sparse indexes spread
their items over ``shards`` partitions (crc32 of the item key); readers query every shard and
merge, so ``shards`` may grow between deployments but never shrink.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeVar

from pynamodb.attributes import BooleanAttribute, NumberAttribute, TTLAttribute, UnicodeAttribute, UnicodeSetAttribute
from pynamodb.connection import Connection
from pynamodb.indexes import AllProjection, GlobalSecondaryIndex, KeysOnlyProjection
from pynamodb.models import Model

from chalicelib.adapters.dynamo.errors import boundary

STREAM_VIEW = "NEW_AND_OLD_IMAGES"

M = TypeVar("M", bound=Model)


@dataclass(frozen=True)
class DynamoConfig:
    prefix: str  # e.g. "hindsight-dev-": every table name starts with it
    region: str = "us-east-1"
    host: str | None = None  # an endpoint URL (moto, a VPC endpoint); None: the region's endpoint
    aws_access_key_id: str | None = None  # None: botocore's default chain (the Lambda role)
    aws_secret_access_key: str | None = None
    aws_session_token: str | None = None
    connect_timeout_seconds: float = 5
    read_timeout_seconds: float = 10
    max_retry_attempts: int = 3
    max_pool_connections: int = 10
    shards: int = 4  # partitions of each cross-tenant sparse index; may grow, never shrink


def _index(table: str, name: str, hash_name: str, range_name: str, keys_only: bool = False) -> GlobalSecondaryIndex:
    """A global secondary index of the table, keyed on two string attributes; ``keys_only``: it
    projects the keys alone, else every attribute."""
    meta = type("Meta", (), {"index_name": name, "projection": KeysOnlyProjection() if keys_only else AllProjection()})
    cls = type(
        f"_{table}_{name}",
        (GlobalSecondaryIndex,),
        {"Meta": meta, hash_name: UnicodeAttribute(hash_key=True), range_name: UnicodeAttribute(range_key=True)},
    )
    return cls()


# --- tenants ------------------------------------------------------------------------------------


class TenantItem(Model):
    pk = UnicodeAttribute(hash_key=True)
    sk = UnicodeAttribute(range_key=True)
    tenant_id = UnicodeAttribute()
    name = UnicodeAttribute(null=True)
    created_at = UnicodeAttribute(null=True)
    revoked = BooleanAttribute(null=True)
    event_retention_days = NumberAttribute(null=True)  # on the tenant item: its own retention (none: the default)
    listing = UnicodeAttribute(null=True)
    created_sk = UnicodeAttribute(null=True)
    by_created = _index("Tenants", "by_created", "listing", "created_sk")


# --- trajectories and events --------------------------------------------------------------------


class TrajectoryItem(Model):
    tenant_id = UnicodeAttribute(hash_key=True)
    trajectory_id = UnicodeAttribute(range_key=True)
    doc = UnicodeAttribute()  # JSON of the fields fixed at creation
    status = UnicodeAttribute()
    event_count = NumberAttribute()
    updated_at = UnicodeAttribute()
    outcome = UnicodeAttribute(null=True)
    feedback = UnicodeAttribute(null=True)
    finalized_at = UnicodeAttribute(null=True)
    experience_ids = UnicodeAttribute(null=True)  # JSON list
    review = UnicodeAttribute(null=True)  # JSON object
    rev = NumberAttribute()  # bumped by every write: the version read-modify-writes condition on
    tools_ok = UnicodeSetAttribute(null=True)  # the tools with a call that worked, added by each append
    tenant_status = UnicodeAttribute()
    outbox_shard = UnicodeAttribute(null=True)
    outbox_sk = UnicodeAttribute(null=True)
    by_status = _index("Trajectories", "by_status", "tenant_status", "trajectory_id", keys_only=True)
    outbox = _index("Trajectories", "outbox", "outbox_shard", "outbox_sk", keys_only=True)


class EventItem(Model):
    pk = UnicodeAttribute(hash_key=True)
    sk = UnicodeAttribute(range_key=True)
    tenant_id = UnicodeAttribute()
    trajectory_id = UnicodeAttribute()
    event_id = UnicodeAttribute()
    seq = NumberAttribute()
    doc = UnicodeAttribute(null=True)  # JSON of the event (cut to fit, marked); None on markers
    # the trajectory's events_expire_at, on events and markers alike: TTL deletes them (within
    # days); readers go by the trajectory's expiry, not by what is still here
    expires = TTLAttribute(null=True)


# --- experiences --------------------------------------------------------------------------------


class ExperienceItem(Model):
    tenant_id = UnicodeAttribute(hash_key=True)
    experience_id = UnicodeAttribute(range_key=True)
    doc = UnicodeAttribute()  # JSON of the whole experience
    status = UnicodeAttribute()
    created_sk = UnicodeAttribute()
    tenant_status = UnicodeAttribute()
    tenant_agent = UnicodeAttribute(null=True)
    fp_scope = UnicodeAttribute(null=True)
    situation_scope = UnicodeAttribute(null=True)
    active_shard = UnicodeAttribute(null=True)
    active_sk = UnicodeAttribute(null=True)
    rev = NumberAttribute(null=True)  # Experience.revision: what a conditional write compares (none: 0)
    by_created = _index("Experiences", "by_created", "tenant_id", "created_sk")
    by_status = _index("Experiences", "by_status", "tenant_status", "created_sk")
    by_agent = _index("Experiences", "by_agent", "tenant_agent", "created_sk")
    by_fingerprint = _index("Experiences", "by_fingerprint", "fp_scope", "created_sk")
    by_situation = _index("Experiences", "by_situation", "situation_scope", "created_sk")
    active = _index("Experiences", "active", "active_shard", "active_sk")


# --- review jobs --------------------------------------------------------------------------------


class JobItem(Model):
    tenant_id = UnicodeAttribute(hash_key=True)
    job = UnicodeAttribute(range_key=True)
    trajectory_id = UnicodeAttribute()
    kind = UnicodeAttribute()
    state = UnicodeAttribute()  # pending | leased | done | dead
    attempts = NumberAttribute()
    due_us = NumberAttribute()
    last_error = UnicodeAttribute(null=True)
    due_shard = UnicodeAttribute(null=True)
    due_sk = UnicodeAttribute(null=True)
    triggers = UnicodeAttribute(null=True)  # JSON list: the events a local review reviews
    due = _index("Jobs", "due", "due_shard", "due_sk")


# --- rate limits --------------------------------------------------------------------------------


class RateLimitItem(Model):
    bucket = UnicodeAttribute(hash_key=True)
    tat_us = NumberAttribute(null=True)  # the bucket's theoretical arrival time (domain.ratelimit)
    expires = TTLAttribute(null=True)  # past it the bucket is full again: the item may go


# --- served recalls and credit markers ---------------------------------------------------------


class RecallItem(Model):
    tenant_id = UnicodeAttribute(hash_key=True)
    key = UnicodeAttribute(range_key=True)
    doc = UnicodeAttribute(null=True)  # JSON of what a recall served; None on credit markers
    trajectory_id = UnicodeAttribute(null=True)  # of a recall: the one trajectory it credits, set once
    expires_us = NumberAttribute()  # readers compare it: TTL deletes up to days after expiry
    expires = TTLAttribute()


# --- maintenance checkpoints -------------------------------------------------------------------


class CheckpointItem(Model):
    name = UnicodeAttribute(hash_key=True)  # e.g. "decay": the pass over every tenant
    doc = UnicodeAttribute()  # JSON object: where the work stands


# --- binding ------------------------------------------------------------------------------------


def _bind(base: type[M], config: DynamoConfig, table: str, stream: bool) -> type[M]:
    meta: dict[str, Any] = {
        "table_name": config.prefix + table,
        "region": config.region,
        "host": config.host,
        "billing_mode": "PAY_PER_REQUEST",
        "connect_timeout_seconds": config.connect_timeout_seconds,
        "read_timeout_seconds": config.read_timeout_seconds,
        "max_retry_attempts": config.max_retry_attempts,
        "max_pool_connections": config.max_pool_connections,
        "aws_access_key_id": config.aws_access_key_id,
        "aws_secret_access_key": config.aws_secret_access_key,
        "aws_session_token": config.aws_session_token,
    }
    if stream:  # pynamodb enables a stream when the attribute exists at all
        meta["stream_view_type"] = STREAM_VIEW
    # a subclass per binding: pynamodb copies the indexes onto it, bound to this table
    return type(base.__name__, (base,), {"Meta": type("Meta", (), meta), "__module__": __name__})


def connect(config: DynamoConfig) -> Connection:
    """A pynamodb connection (one botocore client, built on first use) to the config's endpoint."""
    return Connection(
        region=config.region,
        host=config.host,
        connect_timeout_seconds=config.connect_timeout_seconds,
        read_timeout_seconds=config.read_timeout_seconds,
        max_retry_attempts=config.max_retry_attempts,
        max_pool_connections=config.max_pool_connections,
        aws_access_key_id=config.aws_access_key_id,
        aws_secret_access_key=config.aws_secret_access_key,
        aws_session_token=config.aws_session_token,
    )


class DynamoTables:
    """The bound model classes of one deployment and the one connection they all go through.

    Built once in the composition root and handed to the stores. ``connection`` may be given (one
    botocore client for several prefixes, as the tests do); it must point where ``config`` does.
    Left alone, pynamodb would build a botocore client per model class, each loading the service
    model again: a cold start pays that once, not five times.
    """

    def __init__(self, config: DynamoConfig, connection: Connection | None = None) -> None:
        self.config = config
        self.connection = connection or connect(config)
        self.tenants = self._bound(TenantItem, "tenants", stream=False)
        self.trajectories = self._bound(TrajectoryItem, "trajectories", stream=True)
        self.events = self._bound(EventItem, "events", stream=True)
        self.experiences = self._bound(ExperienceItem, "experiences", stream=False)
        self.jobs = self._bound(JobItem, "review-jobs", stream=True)
        self.rate_limits = self._bound(RateLimitItem, "rate-limits", stream=False)
        self.recalls = self._bound(RecallItem, "recalls", stream=False)
        self.checkpoints = self._bound(CheckpointItem, "maintenance", stream=False)

    def _bound(self, base: type[M], table: str, stream: bool) -> type[M]:
        model = _bind(base, self.config, table, stream)
        table_connection = model._get_connection()  # pynamodb's, with the table's key schema
        try:
            self.connection.add_meta_table(table_connection.get_meta_table())
        except ValueError:  # already known to a shared connection: the same table, the same schema
            pass
        table_connection.connection = self.connection
        return model

    @property
    def shards(self) -> list[str]:
        return [str(i) for i in range(self.config.shards)]

    def groups(self) -> dict[str, tuple[type[Model], ...]]:
        """The tables each store needs, by store."""
        return {
            "tenants": (self.tenants,),
            "trajectories": (self.trajectories, self.events),
            "experiences": (self.experiences,),
            "queue": (self.jobs,),
            "rate_limits": (self.rate_limits,),
            "recalls": (self.recalls,),
            "checkpoints": (self.checkpoints,),
        }

    def create(self, *group: str) -> None:
        """Create the tables of the named stores (all when none is named) that do not exist yet.

        For local runs and tests; a cloud deployment creates them with its infrastructure code.
        """
        groups = self.groups()
        with boundary("create_table"):
            for name in group or groups:
                for model in groups[name]:
                    model.create_table(wait=True)

    def delete(self, *group: str) -> None:
        groups = self.groups()
        with boundary("delete_table"):
            for name in group or groups:
                for model in groups[name]:
                    if model.exists():
                        model.delete_table()
