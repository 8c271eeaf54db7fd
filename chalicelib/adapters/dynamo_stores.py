"""The DynamoDB backend of the stores and the review queue: the public surface of ``dynamo_*``.

    tables = DynamoTables(DynamoConfig(prefix="hindsight-dev-", region="eu-west-1"))
    tenants, trajectories = DynamoTenantStore(tables), DynamoTrajectoryStore(tables)

Each store lives in a module of its own (``dynamo_tenants``, ``dynamo_trajectories``,
``dynamo_experiences``, ``dynamo_review_queue``); the schemas and the key design are described in
``dynamo_models``, the error boundary in ``dynamo_errors``.
"""
from __future__ import annotations

from .dynamo_errors import StoreUnavailable
from .dynamo_experiences import DynamoExperienceStore
from .dynamo_models import DynamoConfig, DynamoTables
from .dynamo_recalls import DynamoRecallLedger
from .dynamo_review_queue import DynamoReviewQueue
from .dynamo_tenants import DynamoTenantStore
from .dynamo_trajectories import DynamoTrajectoryStore

__all__ = [
    "DynamoConfig",
    "DynamoExperienceStore",
    "DynamoRecallLedger",
    "DynamoReviewQueue",
    "DynamoTables",
    "DynamoTenantStore",
    "DynamoTrajectoryStore",
    "StoreUnavailable",
]
