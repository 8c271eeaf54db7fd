"""The DynamoDB backend of the stores and the review queue: the public surface of ``dynamo_*``.

    tables = DynamoTables(DynamoConfig(prefix="hindsight-dev-", region="eu-west-1"))
    tenants, trajectories = DynamoTenantStore(tables), DynamoTrajectoryStore(tables)

Each store lives in a module of its own (``dynamo_tenants``, ``dynamo_trajectories``,
``dynamo_experiences``, ``dynamo_review_queue``); the schemas and the key design are described in
``dynamo_models``, the error boundary in ``dynamo_errors``.
"""
from __future__ import annotations

from chalicelib.adapters.dynamo.checkpoints import DynamoCheckpoints
from chalicelib.adapters.dynamo.errors import StoreUnavailable
from chalicelib.adapters.dynamo.experiences import DynamoExperienceStore
from chalicelib.adapters.dynamo.models import DynamoConfig, DynamoTables
from chalicelib.adapters.dynamo.recalls import DynamoRecallLedger
from chalicelib.adapters.dynamo.review_queue import DynamoReviewQueue
from chalicelib.adapters.dynamo.tenants import DynamoTenantStore
from chalicelib.adapters.dynamo.trajectories import DynamoTrajectoryStore

__all__ = [
    "DynamoCheckpoints",
    "DynamoConfig",
    "DynamoExperienceStore",
    "DynamoRecallLedger",
    "DynamoReviewQueue",
    "DynamoTables",
    "DynamoTenantStore",
    "DynamoTrajectoryStore",
    "StoreUnavailable",
]
