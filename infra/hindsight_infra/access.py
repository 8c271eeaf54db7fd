"""What each function of the app may reach: one IAM role per function, built from this table.

No CDK here: the stack reads it to write the roles, and ``tests/infra`` runs each function's code
on moto and checks that every DynamoDB call it makes is one its role allows (and the template that
the role allows no more than this).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Mapping

# Data-plane actions the stores use (pynamodb: get, batch_get, query, save, update, delete,
# transactions -- authorised per item as Put/Update/Delete/ConditionCheck -- and DescribeTable
# for count() and exists()). No Scan, no table management.
TABLE_ACTIONS = (
    "dynamodb:BatchGetItem",
    "dynamodb:BatchWriteItem",
    "dynamodb:ConditionCheckItem",
    "dynamodb:DeleteItem",
    "dynamodb:DescribeTable",
    "dynamodb:GetItem",
    "dynamodb:PutItem",
    "dynamodb:Query",
    "dynamodb:UpdateItem",
)
IDEMPOTENCY_ACTIONS = ("dynamodb:DeleteItem", "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem")
STREAM_ACTIONS = ("dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator", "dynamodb:ListStreams")

# The app's tables (``chalicelib.adapters.dynamo.models``), by their name without the prefix
APP_TABLES = ("tenants", "trajectories", "events", "experiences", "review-jobs", "rate-limits", "recalls")
# What a review reads and writes: the trajectory and its events, the lessons, the recalls it credits,
# the job queue. Not the tenants (a key is never looked up) nor the rate limits (no request is admitted)
REVIEW_TABLES = ("trajectories", "events", "experiences", "review-jobs", "recalls")

# Checkpoints (ports.Checkpoints in the maintenance table): the tenant jobs' and the list of those
# under way (services.tenant_jobs), the successful runs a review compares a failed one with
# (services.contrast)
CHECKPOINT_ACTIONS = ("dynamodb:GetItem", "dynamodb:PutItem")
# What a tenant export and deletion do to the exports bucket: write the parts, read them, delete a
# deleted tenant's
EXPORT_ACTIONS = ("s3:DeleteObject", "s3:GetObject", "s3:ListBucket", "s3:PutObject")

# OpenSearch: "documents" reads and writes documents of the index (search, count, bulk) and
# nothing else; "index" creates the index and changes its mapping (the deploy-time setup only)
OpenSearchAccess = Literal["documents", "index"]


@dataclass(frozen=True)
class Access:
    description: str
    tables: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # table -> actions
    opensearch: OpenSearchAccess | None = None
    openai_secret: bool = False  # the OpenAI-compatible API key: embeddings and reviews
    review_stream: bool = False  # the review-jobs stream, the idempotency table and the DLQ
    # invoked asynchronously (a schedule): a run that fails every retry goes to the maintenance DLQ
    on_failure: bool = False
    # S3 actions on the tenant exports' objects (``exports/*`` of the exports bucket); s3:ListBucket
    # is granted on the bucket itself, for that prefix only
    exports: tuple[str, ...] = ()
    # the decay queue: "send" (the schedule fans a pass out), "consume" (its event source mapping
    # reads and deletes, and the worker sends an unfinished tenant back)
    decay_queue: Literal["send", "consume"] | None = None


def _all(tables: tuple[str, ...], actions: tuple[str, ...] = TABLE_ACTIONS) -> dict[str, tuple[str, ...]]:
    return {t: actions for t in tables}


# Keyed by Chalice's function name (app.py); the stack refuses an app whose functions differ.
FUNCTIONS: dict[str, Access] = {
    # the admin routes of tenant exports and deletions write their jobs' checkpoints and read the parts
    "api_handler": Access("the REST API", _all(APP_TABLES) | {"maintenance": CHECKPOINT_ACTIONS}, "documents",
                          openai_secret=True, exports=("s3:GetObject",)),
    # a key's hash to its tenant: one GetItem, nothing else
    "api_key_authorizer": Access("the API key authorizer", {"tenants": ("dynamodb:GetItem",)}),
    # reviews: the review tables, and the register of a scope's successful runs (a checkpoint)
    "review_worker": Access("the review-jobs stream's worker", _all(REVIEW_TABLES) | {"maintenance": CHECKPOINT_ACTIONS},
                            "documents", openai_secret=True, review_stream=True),
    "review_sweeper": Access("the review sweeper (lost jobs, due retries)",
                             _all(REVIEW_TABLES) | {"maintenance": CHECKPOINT_ACTIONS}, "documents", openai_secret=True),
    # a tenant's export (reads its partitions of every table, writes the parts) and deletion (deletes
    # every item of it in every table, its index documents and its exports)
    "tenant_jobs": Access("tenant exports and deletions",
                          _all(APP_TABLES) | {"maintenance": (*CHECKPOINT_ACTIONS, "dynamodb:DeleteItem")},
                          "documents", on_failure=True, exports=EXPORT_ACTIONS),
    # the decay pass fanned out: the tenants (one query of their listing), the pass's checkpoint,
    # one message per tenant to the decay queue
    "decay_schedule": Access("the decay pass's schedule (one message per tenant)",
                             {"tenants": ("dynamodb:Query",), "maintenance": ("dynamodb:GetItem", "dynamodb:PutItem")},
                             on_failure=True, decay_queue="send"),
    # archiving one tenant at a time: the lessons (read by the tenant's active index, archived by
    # conditional puts), the index entries of archived ones, the tenant's checkpoint
    "decay_worker": Access("the decay queue's worker (a tenant's share of a pass)",
                           {"experiences": TABLE_ACTIONS, "maintenance": ("dynamodb:GetItem", "dynamodb:PutItem")},
                           "documents", decay_queue="consume"),
    "opensearch_index_setup": Access("the deploy-time OpenSearch index setup", opensearch="index"),
}

# The functions API Gateway calls through an alias that CodeDeploy moves (canary, rolled back by
# the alarms), and those published under an alias alone (their event sources call the alias)
CANARY_FUNCTIONS = ("api_handler", "api_key_authorizer")
ALIASED_FUNCTIONS = ("api_handler", "api_key_authorizer", "review_worker", "review_sweeper", "decay_schedule", "decay_worker")
# what each use of the decay queue may do
DECAY_QUEUE_ACTIONS = {
    "send": ("sqs:SendMessage",),
    "consume": ("sqs:ChangeMessageVisibility", "sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:ReceiveMessage",
                "sqs:SendMessage"),
}
