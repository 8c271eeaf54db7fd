"""One stage of hindsight as one CloudFormation stack (CDK v2, with the Chalice app inside).

What it holds, by section below:
  tables     every DynamoDB table of ``chalicelib.adapters.dynamo.models`` plus Powertools'
             idempotency table: on-demand, point-in-time recovery, streams as the models declare
  queue      the SQS dead-letter queue of the review stream's event source mapping
  secrets    a reference to the OpenAI-compatible API key's secret (created by the operator);
             only its name reaches Lambda. There is no admin key: admin routes are authorized by IAM
  roles      one execution role per function, from ``access.FUNCTIONS`` (the authorizer reads the
             tenants table and nothing else)
  opensearch a Serverless VECTORSEARCH collection (encryption, network and data access policies)
             or a managed domain (OpenSearch 2.19), by the stage parameter ``opensearch``; the
             functions read and write documents only, the index is made at deploy time by a
             custom resource (``chalicelib/index_setup_lambda.py``)
  app        the Chalice app (REST API, authorizer, review worker, sweeper, decay, index setup),
             its functions named, each with its own role and log group, published under an alias;
             the API and the authorizer shift to a new version by CodeDeploy (canary in prod),
             rolled back by the alarms; the review worker's event source mapping completed
  edge       the REST API (regional) with stage and method throttling, a cached authorizer that
             denies unknown keys, JSON access logs keyed by tenant, admin routes authorized by IAM
             (SigV4), a WAF web ACL (a per-address rate limit, AWS managed rules)
  alarms     customers' view (API 5XX share, p99 latency), throttles (Lambda, DynamoDB), OpenSearch
             health, dead review jobs, the DLQ, errors of every function, the review stream's lag;
             M of N where one bad minute is noise; to an SNS topic (optionally mailed)
  dashboard  one CloudWatch dashboard of the above, and a saved Logs Insights query of the usage
             per tenant (the functions write it as embedded metric format, ``adapters/emf.py``)
"""
from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path
from typing import Any

import aws_cdk as cdk
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs
from aws_cdk import aws_opensearchserverless as aoss
from aws_cdk import aws_opensearchservice as opensearch
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_wafv2 as wafv2
from constructs import Construct

from . import access as acc
from .api_shape import (
    ALIAS_NAME,
    api_methods,
    execute_api_arn_path,
    iam_methods,
    method_resource_path,
    point_api_at_aliases,
)
from .config import StageConfig
from .packaging import ChaliceApp, stage_stub_project
from .tables import IDEMPOTENCY_TABLE, TableSpec, all_tables

REVIEW_WORKER = "review_worker"  # app.py's @app.on_dynamodb_record(name=...)
DECAY_WORKER = "decay_worker"  # app.py's @app.on_sqs_message(name=...)
DECAY_BATCH = 10  # messages (tenants) per decay worker invocation
DECAY_MAX_RECEIVES = 5  # deliveries of a decay message before it goes to the decay DLQ
INDEX_SETUP = "opensearch_index_setup"  # app.py's @app.lambda_function(name=...)
API_HANDLER, AUTHORIZER = "api_handler", "api_key_authorizer"
# where tenant exports go in their bucket (chalicelib.adapters.s3_exports), and for how long
EXPORT_PREFIX = "exports/"
EXPORT_RETENTION_DAYS = 7
# Lambda imports these instead of app.py (whose import loads the API): the same work, a shorter cold start
HANDLERS = {
    REVIEW_WORKER: "chalicelib.review_worker_lambda.handler",
    INDEX_SETUP: "chalicelib.index_setup_lambda.handler",
}
# Every function's environment beside the app's settings. No pydantic plugin is installed (a test
# checks): without this, the first model a cold start validates with scans every installed
# distribution's entry points looking for one.
RUNTIME_ENVIRONMENT = {"PYDANTIC_DISABLE_PLUGINS": "__all__"}
JOBS_TABLE = "review-jobs"  # the table whose stream drives the review worker
OPENSEARCH_VERSION = "OpenSearch_2.19"
API_STAGE = "api"  # the API Gateway stage: URLs are https://<id>.execute-api.<region>.amazonaws.com/api/v1/...

ES_HTTP_ACTIONS = ["es:ESHttpDelete", "es:ESHttpGet", "es:ESHttpHead", "es:ESHttpPost", "es:ESHttpPut"]
# the requests the index adapter sends with manage_index=False, each under the index's own path
ES_DOCUMENT_PATHS = ("_search", "_msearch", "_count", "_bulk")
AOSS_DOCUMENT_PERMISSIONS = ["aoss:ReadDocument", "aoss:WriteDocument"]
AOSS_INDEX_PERMISSIONS = ["aoss:CreateIndex", "aoss:DescribeIndex", "aoss:UpdateIndex"]

# The WAF's AWS managed rule groups. The bodies are the tenants' agents' own data (tool calls,
# code, HTML, URLs, file paths, up to 1 MB): the groups' body inspections would block ordinary
# traces, so they count (visible in the WAF's metrics) and the rest of each group blocks.
WAF_MANAGED_RULES = {
    "AWSManagedRulesAmazonIpReputationList": (),
    "AWSManagedRulesKnownBadInputsRuleSet": ("Log4JRCE_BODY", "JavaDeserializationRCE_BODY"),
    "AWSManagedRulesCommonRuleSet": ("SizeRestrictions_BODY", "EC2MetaDataSSRF_BODY", "GenericLFI_BODY",
                                     "GenericRFI_BODY", "CrossSiteScripting_BODY"),
}

# API Gateway's access log, one JSON object per request, keyed by tenant (the authorizer's context)
# or, on admin routes, by the IAM caller. Every value is quoted: an empty variable stays valid JSON.
ACCESS_LOG_FORMAT = {
    "requestId": "$context.requestId",
    "time": "$context.requestTimeEpoch",
    "ip": "$context.identity.sourceIp",
    "method": "$context.httpMethod",
    "resource": "$context.resourcePath",
    "path": "$context.path",
    "status": "$context.status",
    "responseLength": "$context.responseLength",
    "latencyMs": "$context.responseLatency",
    "integrationLatencyMs": "$context.integrationLatency",
    "tenant": "$context.authorizer.tenant_id",
    "denied": "$context.authorizer.error",
    "caller": "$context.identity.userArn",
    "errorType": "$context.error.responseType",
    "wafResponseCode": "$context.wafResponseCode",
    "xrayTraceId": "$context.xrayTraceId",
}
# The ACCESS_DENIED gateway response: the authorizer's reason when it denied a key, API Gateway's
# own words when IAM refused an admin call
ACCESS_DENIED_TEMPLATE = (
    '#if("$context.authorizer.error" != "")'
    '{"error": {"code": "unauthorized", "message": "$context.authorizer.error"}}'
    "#else"
    '{"error": {"code": "unauthorized", "message": $context.error.messageString}}'
    "#end"
)
USAGE_QUERY = (
    "filter ispresent(tenant) and ispresent(_aws.CloudWatchMetrics.0.Namespace)\n"
    "| stats sum(Requests) as requests, sum(Recalls) as recalls, sum(Events) as events, "
    "sum(LlmTokens) as llm_tokens by tenant\n"
    "| sort requests desc"
)


def _camel(name: str) -> str:
    return "".join(part.capitalize() for part in name.replace("_", "-").split("-"))


def chalice_function_name(handler: str) -> str:
    """Chalice's resource name of a function from its SAM Handler (``app.app`` is the REST API)."""
    attr = handler.split(".", 1)[1]
    return "api_handler" if attr == "app" else attr


def index_fingerprint(environment: dict[str, Any], dim: int) -> str:
    """A digest of the index's creation body (mapping, settings) as the functions' settings make
    it: a change reaches the custom resource as an Update, which adds the fields the index lacks."""
    from chalicelib import container
    from chalicelib.adapters.opensearch import queries
    from chalicelib.settings import Settings

    values = {k.removeprefix("HINDSIGHT_").lower(): v for k, v in environment.items()
              if k.startswith("HINDSIGHT_") and isinstance(v, str)}
    settings = Settings.model_validate(values)
    body = queries.index_body(container.index_spec(settings, dim))
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:16]


class HindsightStack(cdk.Stack):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        cfg: StageConfig,
        project_dir: Path,
        build_dir: Path,
        package: str = "stub",
        **kwargs: Any,
    ) -> None:
        super().__init__(
            scope,
            construct_id,
            description=f"hindsight experience memory, stage {cfg.stage} ({cfg.opensearch} OpenSearch, {package} package)",
            **kwargs,
        )
        self.cfg = cfg
        removal = cdk.RemovalPolicy.RETAIN if cfg.retain_data else cdk.RemovalPolicy.DESTROY
        cdk.Tags.of(self).add("app", cfg.app_name)
        cdk.Tags.of(self).add("stage", cfg.stage)

        # --- tables ------------------------------------------------------------------------------
        self.tables: dict[str, dynamodb.CfnTable] = {}
        for spec in all_tables():
            self.tables[spec.table] = self._table(spec, removal)
        jobs = self.tables[JOBS_TABLE]

        # --- queue -------------------------------------------------------------------------------
        self.dlq = sqs.Queue(
            self,
            "ReviewDeadLetterQueue",
            queue_name=f"{cfg.resource_name}-review-dlq",
            retention_period=cdk.Duration.days(cfg.dlq_retention_days),
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            removal_policy=removal,
        )

        # the on-failure destination of the functions invoked asynchronously (the decay schedule):
        # a run that failed every retry, with its error (the pass's checkpoint keeps its progress)
        self.maintenance_dlq = sqs.Queue(
            self,
            "MaintenanceDeadLetterQueue",
            queue_name=f"{cfg.resource_name}-maintenance-dlq",
            retention_period=cdk.Duration.days(cfg.dlq_retention_days),
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            removal_policy=removal,
        )

        # --- tenant exports ------------------------------------------------------------------------
        # JSON Lines parts of tenant exports (services.tenant_jobs): private, encrypted, TLS only,
        # unversioned (a deleted tenant's exports are gone, not kept as old versions), expired after
        # EXPORT_RETENTION_DAYS
        self.exports_bucket = s3.Bucket(
            self, "ExportsBucket",
            encryption=s3.BucketEncryption.S3_MANAGED,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            enforce_ssl=True,
            versioned=False,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            lifecycle_rules=[s3.LifecycleRule(id="expire-exports", prefix=EXPORT_PREFIX,
                                              expiration=cdk.Duration.days(EXPORT_RETENTION_DAYS))],
            removal_policy=removal,
        )

        # the decay pass fanned out: one message per tenant, read by the decay worker (a message that
        # failed maxReceiveCount times lands in its DLQ, alarmed); the visibility timeout is six of
        # the worker's timeouts, as Lambda's event source mapping asks
        self.decay_dlq = sqs.Queue(
            self,
            "DecayDeadLetterQueue",
            queue_name=f"{cfg.resource_name}-decay-dlq",
            retention_period=cdk.Duration.days(cfg.dlq_retention_days),
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            removal_policy=removal,
        )
        self.decay_queue = sqs.Queue(
            self,
            "DecayQueue",
            queue_name=f"{cfg.resource_name}-decay",
            visibility_timeout=cdk.Duration.seconds(6 * cfg.timeout(DECAY_WORKER)),
            retention_period=cdk.Duration.days(1),  # a pass's messages are done within the hour or dropped by the next
            dead_letter_queue=sqs.DeadLetterQueue(queue=self.decay_dlq, max_receive_count=DECAY_MAX_RECEIVES),
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            removal_policy=cdk.RemovalPolicy.DESTROY,
        )

        # --- secrets ------------------------------------------------------------------------------
        self.openai_secret_arn: str | None = None
        if cfg.openai_api_key_secret:
            ref = cfg.openai_api_key_secret
            # a secret named, not created here: its ARN ends in "-" and six random characters
            self.openai_secret_arn = ref if ref.startswith("arn:") else self.format_arn(
                service="secretsmanager", resource="secret", resource_name=f"{ref}-??????",
                arn_format=cdk.ArnFormat.COLON_RESOURCE_NAME,
            )

        # --- roles: one per function ----------------------------------------------------------------
        lambda_principal = iam.ServicePrincipal("lambda.amazonaws.com")
        self.roles: dict[str, iam.Role] = {
            fn: iam.Role(self, f"{_camel(fn)}Role", assumed_by=lambda_principal,
                         description=f"hindsight {cfg.stage}: {spec.description}")
            for fn, spec in acc.FUNCTIONS.items()
        }

        # --- opensearch ---------------------------------------------------------------------------
        readers = [self.roles[fn] for fn, spec in acc.FUNCTIONS.items() if spec.opensearch == "documents"]
        (index_role,) = [self.roles[fn] for fn, spec in acc.FUNCTIONS.items() if spec.opensearch == "index"]
        if cfg.opensearch == "serverless":
            endpoint, search_statements, self.search_policy = self._serverless_collection(readers, index_role, removal)
        else:
            endpoint, search_statements, self.search_policy = self._managed_domain(readers, index_role, removal)

        self.policies: dict[str, iam.Policy] = {}
        for fn, spec in acc.FUNCTIONS.items():
            statements = self._table_statements(spec)
            if spec.opensearch:
                statements.append(search_statements[spec.opensearch])
            if spec.openai_secret and self.openai_secret_arn:
                statements.append(iam.PolicyStatement(sid="OpenAIKey", actions=["secretsmanager:GetSecretValue"],
                                                      resources=[self.openai_secret_arn]))
            if spec.review_stream:
                statements += [
                    iam.PolicyStatement(sid="JobsStream", actions=list(acc.STREAM_ACTIONS), resources=[f"{jobs.attr_arn}/stream/*"]),
                    iam.PolicyStatement(sid="Idempotency", actions=list(acc.IDEMPOTENCY_ACTIONS),
                                        resources=[self.tables[IDEMPOTENCY_TABLE].attr_arn]),
                    iam.PolicyStatement(sid="DeadLetters", actions=["sqs:SendMessage"], resources=[self.dlq.queue_arn]),
                ]
            if spec.exports:
                statements += self._export_statements(spec.exports)
            if spec.on_failure:
                statements.append(iam.PolicyStatement(sid="FailedRuns", actions=["sqs:SendMessage"],
                                                      resources=[self.maintenance_dlq.queue_arn]))
            if spec.decay_queue:
                statements.append(iam.PolicyStatement(sid="DecayQueue", actions=list(acc.DECAY_QUEUE_ACTIONS[spec.decay_queue]),
                                                      resources=[self.decay_queue.queue_arn]))
            if cfg.tracing:  # X-Ray has no resource-level permissions: "*" is the only resource it accepts
                statements.append(iam.PolicyStatement(sid="XRay", actions=["xray:PutTelemetryRecords", "xray:PutTraceSegments"],
                                                      resources=["*"]))
            if statements:
                self.policies[fn] = iam.Policy(self, f"{_camel(fn)}Policy", roles=[self.roles[fn]], statements=statements)

        # --- app ------------------------------------------------------------------------------------
        self.function_environment = {
            "HINDSIGHT_BACKEND": "aws",
            "HINDSIGHT_WORKER": "false",
            "HINDSIGHT_STAGE": cfg.stage,
            "HINDSIGHT_AWS_REGION": cdk.Aws.REGION,
            "HINDSIGHT_TABLE_PREFIX": cfg.table_prefix,
            "HINDSIGHT_IDEMPOTENCY_TABLE": cfg.table_prefix + IDEMPOTENCY_TABLE,
            "HINDSIGHT_JOBS_STREAM_ARN": jobs.attr_stream_arn,
            "HINDSIGHT_OPENSEARCH_ENDPOINT": endpoint,
            "HINDSIGHT_OPENSEARCH_SERVICE": cfg.opensearch_service,
            "HINDSIGHT_OPENSEARCH_INDEX": cfg.opensearch_index,
            "HINDSIGHT_OPENSEARCH_ENGINE": "faiss",
            "HINDSIGHT_OPENSEARCH_CREATE_INDEX": "false",  # the custom resource below makes it
            "HINDSIGHT_DECAY_QUEUE_URL": self.decay_queue.queue_url,
            "HINDSIGHT_EMBEDDER": "openai",
            "HINDSIGHT_EMBEDDING_MODEL": cfg.embedding_model,
            "HINDSIGHT_EMBEDDING_DIM": str(cfg.embedding_dim),
            # read by app.py at import, so by Chalice when it writes the API's definition
            "HINDSIGHT_ADMIN_AUTH": "iam",
            "HINDSIGHT_AUTHORIZER_TTL": str(cfg.authorizer_ttl_s),
            "HINDSIGHT_EXPORT_BUCKET": self.exports_bucket.bucket_name,
            **RUNTIME_ENVIRONMENT,
        }
        if self.openai_secret_arn:
            self.function_environment["HINDSIGHT_OPENAI_API_KEY_SECRET"] = cfg.openai_api_key_secret
        if cfg.openai_base_url:
            self.function_environment["HINDSIGHT_OPENAI_BASE_URL"] = cfg.openai_base_url
        if cfg.tracing:
            self.function_environment["HINDSIGHT_TRACING"] = "true"
        if cfg.opensearch == "domain":  # the custom resource creates the index with them (Serverless: no shard settings)
            self.function_environment["HINDSIGHT_OPENSEARCH_SHARDS"] = str(cfg.opensearch_shards)
            if cfg.opensearch_replicas is not None:
                self.function_environment["HINDSIGHT_OPENSEARCH_REPLICAS"] = str(cfg.opensearch_replicas)
        self.function_environment.update(cfg.environment)

        # Chalice reads per-function settings (role, timeout) only from .chalice/config.json, not from
        # a construct's stage_config: _complete_functions sets them on the template instead.
        stage_config = {
            "api_gateway_stage": API_STAGE,
            "api_gateway_endpoint_type": "REGIONAL",  # the WAF sees the clients' addresses, not CloudFront's
            "automatic_layer": True,  # dependencies in a layer cached by requirements' hash
            "manage_iam_role": False,
            "iam_role_arn": self.roles[API_HANDLER].role_arn,
            "lambda_memory_size": cfg.lambda_memory_mb,
            "lambda_timeout": cfg.timeout("default"),
            "xray": cfg.tracing,
            "environment_variables": self.function_environment,
        }
        self.sam_methods: dict[str, dict[str, Any]] = {}
        self.admin_methods: list[str] = []
        source_dir = project_dir if package == "full" else stage_stub_project(project_dir, build_dir)
        self.chalice = ChaliceApp(self, "ChaliceApp", source_dir=str(source_dir), chalice_stage=cfg.stage,
                                  stage_config=stage_config, reshape=self._reshape_sam)
        if package == "full":
            self.chalice.verify_dependencies()

        # --- alarms (first: the canary's rollback names some) -------------------------------------
        self.alarm_topic = sns.Topic(self, "AlarmTopic", topic_name=f"{cfg.resource_name}-alarms")
        if cfg.alarm_email:
            self.alarm_topic.add_subscription(subscriptions.EmailSubscription(cfg.alarm_email))
        self.function_names = {fn: f"{cfg.resource_name}-{fn}" for fn in acc.FUNCTIONS}
        self.alarms: dict[str, cloudwatch.Alarm] = {}
        self._alarms()

        self._complete_functions()
        self._call_aliases()
        self.index_resource = self._index_setup()
        self._edge()
        self._dashboard()

        if package != "full":
            cdk.CfnRule(
                self,
                "StubPackageIsNotDeployable",
                assertions=[cdk.CfnRuleAssertion(
                    assert_=cdk.Fn.condition_equals("stub", "full"),
                    assert_description="This template was synthesized with a stub Lambda package (no dependencies). "
                    "Synthesize with `infra/synth.py --package full` to deploy.",
                )],
            )

        for name, value, description in (
            ("TablePrefix", cfg.table_prefix, "prefix of every DynamoDB table"),
            ("OpenSearchEndpoint", endpoint, f"{cfg.opensearch} OpenSearch endpoint"),
            ("ReviewDeadLetterQueueUrl", self.dlq.queue_url, "the review stream's on-failure destination"),
            ("AdminPolicyArn", self.admin_policy.managed_policy_arn,
             "attach to the operators' role: execute-api:Invoke on the admin routes (SigV4-signed calls, in CloudTrail)"),
            ("AlarmTopicArn", self.alarm_topic.topic_arn, "every alarm notifies this topic"),
            ("DashboardName", self.dashboard.dashboard_name, "CloudWatch dashboard of the stage"),
        ):
            cdk.CfnOutput(self, name, value=value, description=description)

    # --- tables ---------------------------------------------------------------------------------

    def _table(self, spec: TableSpec, removal: cdk.RemovalPolicy) -> dynamodb.CfnTable:
        def keys(schema: list[dict[str, str]]) -> list[dynamodb.CfnTable.KeySchemaProperty]:
            return [dynamodb.CfnTable.KeySchemaProperty(attribute_name=k["AttributeName"], key_type=k["KeyType"]) for k in schema]

        def projection(p: dict[str, Any]) -> dynamodb.CfnTable.ProjectionProperty:
            return dynamodb.CfnTable.ProjectionProperty(
                projection_type=p["ProjectionType"], non_key_attributes=p.get("NonKeyAttributes")
            )

        table = dynamodb.CfnTable(
            self,
            f"{_camel(spec.table)}Table",
            table_name=self.cfg.table_prefix + spec.table,
            billing_mode="PAY_PER_REQUEST",
            key_schema=keys(spec.key_schema),
            attribute_definitions=[
                dynamodb.CfnTable.AttributeDefinitionProperty(attribute_name=a["AttributeName"], attribute_type=a["AttributeType"])
                for a in spec.attribute_definitions
            ],
            global_secondary_indexes=[
                dynamodb.CfnTable.GlobalSecondaryIndexProperty(
                    index_name=i.name, key_schema=keys(i.key_schema), projection=projection(i.projection)
                )
                for i in spec.global_indexes
            ] or None,
            local_secondary_indexes=[
                dynamodb.CfnTable.LocalSecondaryIndexProperty(
                    index_name=i.name, key_schema=keys(i.key_schema), projection=projection(i.projection)
                )
                for i in spec.local_indexes
            ] or None,
            stream_specification=dynamodb.CfnTable.StreamSpecificationProperty(stream_view_type=spec.stream_view_type)
            if spec.stream_view_type else None,
            time_to_live_specification=dynamodb.CfnTable.TimeToLiveSpecificationProperty(
                attribute_name=spec.ttl_attribute, enabled=True
            ) if spec.ttl_attribute else None,
            point_in_time_recovery_specification=dynamodb.CfnTable.PointInTimeRecoverySpecificationProperty(
                point_in_time_recovery_enabled=True
            ),
            deletion_protection_enabled=self.cfg.retain_data,
        )
        table.apply_removal_policy(removal)
        return table

    def _table_statements(self, spec: acc.Access) -> list[iam.PolicyStatement]:
        """The function's tables (and their indexes), one statement per set of actions."""
        by_actions: dict[tuple[str, ...], list[str]] = {}
        for table, actions in sorted(spec.tables.items()):
            arn = self.tables[table].attr_arn
            by_actions.setdefault(tuple(sorted(actions)), []).extend([arn, f"{arn}/index/*"])
        return [iam.PolicyStatement(sid="Tables" if i == 0 else f"Tables{i + 1}", actions=list(actions), resources=resources)
                for i, (actions, resources) in enumerate(sorted(by_actions.items(), key=lambda kv: -len(kv[0])))]

    def _export_statements(self, actions: tuple[str, ...]) -> list[iam.PolicyStatement]:
        """Object actions on the exports' prefix; listing the bucket, for that prefix only."""
        objects = sorted(a for a in actions if a != "s3:ListBucket")
        out = [iam.PolicyStatement(sid="Exports", actions=objects, resources=[self.exports_bucket.arn_for_objects(f"{EXPORT_PREFIX}*")])]
        if "s3:ListBucket" in actions:
            out.append(iam.PolicyStatement(sid="ListExports", actions=["s3:ListBucket"], resources=[self.exports_bucket.bucket_arn],
                                           conditions={"StringLike": {"s3:prefix": [f"{EXPORT_PREFIX}*"]}}))
        return out

    # --- opensearch -----------------------------------------------------------------------------

    def _serverless_collection(self, readers: list[iam.Role], index_role: iam.Role, removal: cdk.RemovalPolicy):
        name = self.cfg.resource_name
        resource = [f"collection/{name}"]
        index = [f"index/{name}/{self.cfg.opensearch_index}"]
        encryption = aoss.CfnSecurityPolicy(
            self, "CollectionEncryptionPolicy", name=f"{name}-enc", type="encryption",
            description="hindsight vectors: encrypted with an AWS owned key",
            policy=json.dumps({"Rules": [{"ResourceType": "collection", "Resource": resource}], "AWSOwnedKey": True}),
        )
        network = aoss.CfnSecurityPolicy(
            self, "CollectionNetworkPolicy", name=f"{name}-net", type="network",
            description="the collection endpoint is public (the functions run outside a VPC); every request is SigV4-signed and checked against the data access policy",
            policy=json.dumps([{"Rules": [{"ResourceType": "collection", "Resource": resource}], "AllowFromPublic": True}]),
        )
        access = aoss.CfnAccessPolicy(
            self, "CollectionDataAccessPolicy", name=f"{name}-data", type="data",
            description="documents of the experience index for the functions; the index itself for its deploy-time setup",
            policy=cdk.Stack.of(self).to_json_string([
                {"Rules": [{"ResourceType": "index", "Resource": index, "Permission": AOSS_DOCUMENT_PERMISSIONS}],
                 "Principal": [r.role_arn for r in readers]},
                {"Rules": [{"ResourceType": "index", "Resource": index, "Permission": AOSS_INDEX_PERMISSIONS}],
                 "Principal": [index_role.role_arn]},
            ]),
        )
        collection = aoss.CfnCollection(
            self, "Collection", name=name, type="VECTORSEARCH",
            description=f"hindsight {self.cfg.stage}: experience vectors and text",
            standby_replicas="ENABLED" if self.cfg.serverless_standby_replicas else "DISABLED",
        )
        collection.add_resource_dependency(encryption)  # a collection needs its encryption policy first
        collection.add_resource_dependency(network)
        collection.add_resource_dependency(access)
        collection.apply_removal_policy(removal)
        self.collection = collection
        # IAM lets a role reach the collection's API; the data access policy says what it may do there
        statement = iam.PolicyStatement(sid="OpenSearch", actions=["aoss:APIAccessAll"], resources=[collection.attr_arn])
        return collection.attr_collection_endpoint, {"documents": statement, "index": statement}, access

    def _managed_domain(self, readers: list[iam.Role], index_role: iam.Role, removal: cdk.RemovalPolicy):
        cfg = self.cfg
        name = cfg.resource_name
        # built from the name, so the domain's own access policy can name it without a cycle
        domain_arn = self.format_arn(service="es", resource="domain", resource_name=name)
        index_arn = f"{domain_arn}/{cfg.opensearch_index}"
        documents = [f"{index_arn}/{path}" for path in ES_DOCUMENT_PATHS]
        multi_az = cfg.domain_instance_count > 1
        domain = opensearch.CfnDomain(
            self, "Domain",
            domain_name=name,
            engine_version=OPENSEARCH_VERSION,
            cluster_config=opensearch.CfnDomain.ClusterConfigProperty(
                instance_type=cfg.domain_instance_type,
                instance_count=cfg.domain_instance_count,
                zone_awareness_enabled=multi_az,
                zone_awareness_config=opensearch.CfnDomain.ZoneAwarenessConfigProperty(availability_zone_count=2)
                if multi_az else None,
            ),
            ebs_options=opensearch.CfnDomain.EBSOptionsProperty(ebs_enabled=True, volume_type="gp3", volume_size=cfg.domain_volume_gb),
            encryption_at_rest_options=opensearch.CfnDomain.EncryptionAtRestOptionsProperty(enabled=True),
            node_to_node_encryption_options=opensearch.CfnDomain.NodeToNodeEncryptionOptionsProperty(enabled=True),
            domain_endpoint_options=opensearch.CfnDomain.DomainEndpointOptionsProperty(
                enforce_https=True, tls_security_policy="Policy-Min-TLS-1-2-PFS-2023-10"
            ),
            # the domain's own policy grants no more than the roles' (either one allowing is enough)
            access_policies={
                "Version": "2012-10-17",
                "Statement": [
                    {"Effect": "Allow", "Principal": {"AWS": [r.role_arn for r in readers]},
                     "Action": ["es:ESHttpGet", "es:ESHttpPost"], "Resource": documents},
                    {"Effect": "Allow", "Principal": {"AWS": [index_role.role_arn]},
                     "Action": ["es:ESHttpGet", "es:ESHttpHead", "es:ESHttpPut"], "Resource": [index_arn, f"{index_arn}/*"]},
                ],
            },
        )
        domain.apply_removal_policy(removal)
        self.domain = domain
        statements = {
            "documents": iam.PolicyStatement(sid="OpenSearch", actions=["es:ESHttpGet", "es:ESHttpPost"], resources=documents),
            "index": iam.PolicyStatement(sid="OpenSearch", actions=["es:ESHttpGet", "es:ESHttpHead", "es:ESHttpPut"],
                                         resources=[index_arn, f"{index_arn}/*"]),
        }
        return cdk.Fn.join("", ["https://", domain.attr_domain_endpoint]), statements, domain

    # --- app ------------------------------------------------------------------------------------

    def _reshape_sam(self, sam: dict[str, Any]) -> None:
        """Read Chalice's SAM template before CDK includes it: the API's methods, and its resources
        as they must be to call the functions' aliases. Those are set as overrides once included
        (``_call_aliases``): CDK's include refuses SAM's ``Fn.Alias`` references in the template."""
        by_name = {chalice_function_name(r["Properties"]["Handler"]): logical_id
                   for logical_id, r in sam["Resources"].items() if r["Type"] == "AWS::Serverless::Function"}
        aliased = copy.deepcopy(sam)
        changed = point_api_at_aliases(aliased, {by_name[fn] for fn in acc.CANARY_FUNCTIONS})
        self.aliased_resources = {logical_id: aliased["Resources"][logical_id] for logical_id in changed}
        self.sam_methods = api_methods(sam)
        self.admin_methods = iam_methods(sam)
        self.function_ids = by_name

    def _call_aliases(self) -> None:
        for logical_id, resource in self.aliased_resources.items():
            included = self.chalice.get_resource(logical_id)
            cdk.Validations.of(included).acknowledge(cdk.Acknowledgment(
                id="CloudFormation-Validate::F1020",
                reason="Fn.Alias is SAM's reference to the alias AutoPublishAlias makes: resolved by the transform",
            ))
            if resource["Type"] == "AWS::Serverless::Api":
                included.add_property_override("DefinitionBody", resource["Properties"]["DefinitionBody"])
            else:
                included.add_property_override("FunctionName", resource["Properties"]["FunctionName"])

    def _sam_functions(self) -> dict[str, dict[str, Any]]:
        """The SAM template Chalice wrote: its AWS::Serverless::Function resources by logical id."""
        template = json.loads((Path(self.chalice._sam_package_dir) / "sam.json").read_text())
        return {k: r for k, r in template["Resources"].items() if r["Type"] == "AWS::Serverless::Function"}

    def _complete_functions(self) -> None:
        """Name every function, give each its role and log group, publish it under an alias (the
        API's two with a deployment preference), finish the review worker's event source."""
        cfg = self.cfg
        found = {chalice_function_name(r["Properties"]["Handler"]): (logical_id, r)
                 for logical_id, r in self._sam_functions().items()}
        if set(found) != set(acc.FUNCTIONS):
            raise RuntimeError(
                f"the app's functions {sorted(found)} are not those infra/hindsight_infra/access.py grants "
                f"{sorted(acc.FUNCTIONS)}: give a new function its own entry (what it may reach)"
            )
        self.codedeploy_role = self._codedeploy_role()
        stream_sources: list[str] = []
        for fn_name, (logical_id, resource) in sorted(found.items()):
            lambda_name = self.function_names[fn_name]
            fn = self.chalice.get_resource(logical_id)
            fn.add_property_override("FunctionName", lambda_name)
            fn.add_property_override("Timeout", cfg.timeout(fn_name))
            fn.add_property_override("Role", self.roles[fn_name].role_arn)
            log_group = logs.CfnLogGroup(
                self, f"{logical_id}LogGroup", log_group_name=f"/aws/lambda/{lambda_name}",
                retention_in_days=cfg.log_retention_days,
            )
            log_group.apply_removal_policy(cdk.RemovalPolicy.DESTROY)
            logs_policy = iam.Policy(self, f"{logical_id}Logs", roles=[self.roles[fn_name]], statements=[
                iam.PolicyStatement(sid="Logs", actions=["logs:CreateLogStream", "logs:PutLogEvents"],
                                    resources=[log_group.attr_arn]),
            ])
            fn.add_resource_dependency(log_group)
            fn.add_resource_dependency(logs_policy.node.default_child)
            if fn_name in self.policies:
                # the event source mapping checks at creation that the role can read the stream
                fn.add_resource_dependency(self.policies[fn_name].node.default_child)
            if fn_name in HANDLERS:
                fn.add_property_override("Handler", HANDLERS[fn_name])
            if fn_name in acc.ALIASED_FUNCTIONS:
                fn.add_property_override("AutoPublishAlias", ALIAS_NAME)
            if fn_name in acc.CANARY_FUNCTIONS:
                fn.add_property_override("DeploymentPreference", {
                    "Type": cfg.deployment_preference,
                    "Alarms": [self.alarms[name].alarm_name for name in ("api-5xx", f"{fn_name}-errors")],
                    "Role": self.codedeploy_role.role_arn,
                })
            if acc.FUNCTIONS[fn_name].on_failure:
                fn.add_property_override("EventInvokeConfig", {
                    "MaximumRetryAttempts": 2,
                    "MaximumEventAgeInSeconds": 3600,
                    "DestinationConfig": {"OnFailure": {"Type": "SQS", "Destination": self.maintenance_dlq.queue_arn}},
                })
                if fn_name in self.policies:  # Lambda sends through the function's role
                    fn.add_resource_dependency(self.policies[fn_name].node.default_child)
            if fn_name == REVIEW_WORKER and cfg.review_worker_reserved_concurrency is not None:
                fn.add_property_override("ReservedConcurrentExecutions", cfg.review_worker_reserved_concurrency)
            for event_name, event in (resource["Properties"].get("Events") or {}).items():
                if event["Type"] == "SQS":
                    if fn_name != DECAY_WORKER:
                        raise RuntimeError(f"{fn_name} reads an SQS queue; only {DECAY_WORKER} does (the decay queue)")
                    self._complete_decay_source(fn, event_name)
                if event["Type"] == "DynamoDB":
                    stream_sources.append(fn_name)
                    self._complete_stream_source(fn, event_name)
        if stream_sources != [REVIEW_WORKER]:
            raise RuntimeError(f"expected one DynamoDB stream source, on {REVIEW_WORKER}; the app has {stream_sources}")

    def _codedeploy_role(self) -> iam.Role:
        """CodeDeploy's role for the canary: move the API's aliases, read the alarms that stop it.
        SAM would attach a managed policy; this one names the stage's aliases and alarms only."""
        aliases = [self.format_arn(service="lambda", resource="function", resource_name=f"{self.function_names[fn]}:{ALIAS_NAME}",
                                   arn_format=cdk.ArnFormat.COLON_RESOURCE_NAME) for fn in acc.CANARY_FUNCTIONS]
        alarms = self.format_arn(service="cloudwatch", resource="alarm", resource_name=f"{self.cfg.resource_name}-*",
                                 arn_format=cdk.ArnFormat.COLON_RESOURCE_NAME)
        return iam.Role(
            self, "CodeDeployRole", assumed_by=iam.ServicePrincipal("codedeploy.amazonaws.com"),
            description=f"hindsight {self.cfg.stage}: shifts the API's aliases to a new version, watching the alarms",
            inline_policies={"Canary": iam.PolicyDocument(statements=[
                iam.PolicyStatement(sid="Aliases", actions=["lambda:GetAlias", "lambda:GetProvisionedConcurrencyConfig",
                                                            "lambda:UpdateAlias"], resources=aliases),
                iam.PolicyStatement(sid="Alarms", actions=["cloudwatch:DescribeAlarms"], resources=[alarms]),
            ])},
        )

    def _complete_stream_source(self, fn: cdk.CfnResource, event_name: str) -> None:
        """What ``@app.on_dynamodb_record`` cannot say: partial failures, bisect, limits, the DLQ."""
        cfg = self.cfg
        props = f"Events.{event_name}.Properties"
        fn.add_property_override(f"{props}.Stream", self.tables[JOBS_TABLE].attr_stream_arn)
        fn.add_property_override(f"{props}.StartingPosition", "TRIM_HORIZON")
        fn.add_property_override(f"{props}.FunctionResponseTypes", ["ReportBatchItemFailures"])
        fn.add_property_override(f"{props}.BisectBatchOnFunctionError", cfg.stream_bisect_on_error)
        fn.add_property_override(f"{props}.MaximumRetryAttempts", cfg.stream_maximum_retry_attempts)
        fn.add_property_override(f"{props}.MaximumRecordAgeInSeconds", cfg.stream_maximum_record_age_s)
        # each invocation drains the queue (claims leased, so concurrent ones never share a job):
        # more than one per shard is what lets reviews keep up when each takes seconds (an LLM)
        fn.add_property_override(f"{props}.ParallelizationFactor", cfg.stream_parallelization_factor)
        fn.add_property_override(f"{props}.MaximumBatchingWindowInSeconds", cfg.stream_batching_window_s)
        fn.add_property_override(f"{props}.DestinationConfig", {"OnFailure": {"Type": "SQS", "Destination": self.dlq.queue_arn}})

    def _complete_decay_source(self, fn: cdk.CfnResource, event_name: str) -> None:
        """The decay worker's SQS event source: the stack's queue (Chalice names one by a name it
        cannot know), failed messages reported one by one, a ceiling on concurrent invocations."""
        props = f"Events.{event_name}.Properties"
        fn.add_property_override(f"{props}.Queue", self.decay_queue.queue_arn)
        fn.add_property_override(f"{props}.BatchSize", DECAY_BATCH)
        fn.add_property_override(f"{props}.FunctionResponseTypes", ["ReportBatchItemFailures"])
        fn.add_property_override(f"{props}.ScalingConfig", {"MaximumConcurrency": max(2, self.cfg.decay_max_concurrency)})

    def _index_setup(self) -> cdk.CustomResource:
        """The index, made when the stage is created or its mapping changes (a custom resource calling
        the index setup function); the API and the worker wait for it on a first deployment."""
        setup = self.chalice.get_resource(self.function_ids[INDEX_SETUP])
        resource = cdk.CustomResource(
            self, "OpenSearchIndex", resource_type="Custom::OpenSearchIndex",
            service_token=setup.get_att("Arn").to_string(),
            properties={
                "IndexName": self.cfg.opensearch_index,
                "Dimension": str(self.cfg.embedding_dim),
                "Fingerprint": index_fingerprint(self.function_environment, self.cfg.embedding_dim),
            },
        )
        cfn = resource.node.default_child
        cfn.add_resource_dependency(self.search_policy)  # the setup role must be let in before it calls
        cfn.add_resource_dependency(self.policies[INDEX_SETUP].node.default_child)
        for fn in (API_HANDLER, REVIEW_WORKER):
            self.chalice.get_resource(self.function_ids[fn]).add_resource_dependency(cfn)
        return resource

    # --- edge -----------------------------------------------------------------------------------

    def _edge(self) -> None:
        cfg = self.cfg
        api = self.chalice.get_resource("RestAPI")
        unknown = sorted(set(cfg.api_method_throttle) - set(self.sam_methods))
        if unknown:
            raise ValueError(f"api_method_throttle names methods the API does not have: {unknown}")
        if not self.admin_methods:
            raise RuntimeError("no route is authorized by IAM: app.py should see HINDSIGHT_ADMIN_AUTH=iam when packaged")

        # the account's logging role (API Gateway writes access logs through it, one per account and region)
        if cfg.apigateway_logging_role:
            role = iam.Role(
                self, "ApiGatewayLoggingRole", assumed_by=iam.ServicePrincipal("apigateway.amazonaws.com"),
                description="API Gateway's account-wide CloudWatch Logs role (access and execution logs of this account's APIs)",
                inline_policies={"Logs": iam.PolicyDocument(statements=[iam.PolicyStatement(
                    actions=["logs:CreateLogGroup", "logs:CreateLogStream", "logs:DescribeLogGroups", "logs:DescribeLogStreams",
                             "logs:PutLogEvents", "logs:GetLogEvents", "logs:FilterLogEvents"],
                    resources=[self.format_arn(service="logs", resource="log-group", resource_name="*",
                                               arn_format=cdk.ArnFormat.COLON_RESOURCE_NAME)],
                )])},
            )
            role.apply_removal_policy(cdk.RemovalPolicy.RETAIN)  # other stages' APIs may be logging through it
            account = cdk.CfnResource(self, "ApiGatewayAccount", type="AWS::ApiGateway::Account",
                                      properties={"CloudWatchRoleArn": role.role_arn})
            account.apply_removal_policy(cdk.RemovalPolicy.RETAIN)
            api.add_resource_dependency(account)

        access_log = logs.CfnLogGroup(self, "ApiAccessLogGroup", log_group_name=f"/aws/apigateway/{cfg.resource_name}-access",
                                      retention_in_days=cfg.log_retention_days)
        access_log.apply_removal_policy(cdk.RemovalPolicy.DESTROY)
        self.access_log_group = access_log

        def throttle(limits: dict[str, float]) -> dict[str, float]:
            return {"ThrottlingRateLimit": limits["rate"], "ThrottlingBurstLimit": int(limits["burst"])}

        method_settings = [{"ResourcePath": "/*", "HttpMethod": "*", "MetricsEnabled": False, **throttle(cfg.api_throttle)}]
        for method, limits in sorted(cfg.api_method_throttle.items()):
            verb, _, path = method.partition(" ")
            method_settings.append({"ResourcePath": method_resource_path(path), "HttpMethod": verb, **throttle(limits)})
        api.add_property_override("Name", cfg.resource_name)
        api.add_property_override("MethodSettings", method_settings)
        api.add_property_override("AccessLogSetting", {"DestinationArn": access_log.attr_arn,
                                                       "Format": json.dumps(ACCESS_LOG_FORMAT, separators=(",", ":"))})
        api.add_property_override("TracingEnabled", cfg.tracing)
        self._contract_shaped_gateway_errors(api)
        self._waf(api)
        self._admin_policy(api)

    def _contract_shaped_gateway_errors(self, api: cdk.CfnResource) -> None:
        """API Gateway answers some requests itself (no Authorization header, a denied key, no such
        route, its own faults): give those answers the contract's error shape too, {"error": {"code", "message"}}."""
        def response(status: int | None, code: str, retry_after: int | None = None, template: str | None = None) -> dict[str, Any]:
            body = template or '{"error": {"code": "%s", "message": $context.error.messageString}}' % code
            out: dict[str, Any] = {"ResponseTemplates": {"application/json": body}}
            if status is not None:  # None: keep the status API Gateway chose
                out["StatusCode"] = str(status)
            if retry_after is not None:
                out["ResponseParameters"] = {"Headers": {"Retry-After": f"'{retry_after}'"}}  # SAM's form
            return out

        api.add_property_override("GatewayResponses", {
            "UNAUTHORIZED": response(401, "unauthorized"),
            "MISSING_AUTHENTICATION_TOKEN": response(404, "not_found"),  # what API Gateway says for an unknown route
            # the authorizer denied the key (its reason), or IAM refused an admin call
            "ACCESS_DENIED": response(401, "unauthorized", template=ACCESS_DENIED_TEMPLATE),
            # the authorizer raised (its key lookup's store failed): a retryable 503, as the routes say
            "AUTHORIZER_FAILURE": response(503, "unavailable", retry_after=1),
            "THROTTLED": response(429, "rate_limited", retry_after=1),  # the stage's own throttling
            "WAF_FILTERED": response(403, "forbidden"),  # a managed rule blocked the request
            "DEFAULT_4XX": response(None, "bad_request"),
            "DEFAULT_5XX": response(None, "internal_error"),
        })

    def _waf(self, api: cdk.CfnResource) -> None:
        cfg = self.cfg

        def visibility(metric: str) -> wafv2.CfnWebACL.VisibilityConfigProperty:
            return wafv2.CfnWebACL.VisibilityConfigProperty(cloud_watch_metrics_enabled=True, metric_name=metric,
                                                            sampled_requests_enabled=True)

        rules = [wafv2.CfnWebACL.RuleProperty(
            name="RateLimitPerAddress", priority=0,
            statement=wafv2.CfnWebACL.StatementProperty(rate_based_statement=wafv2.CfnWebACL.RateBasedStatementProperty(
                limit=cfg.waf_requests_per_5min_per_ip, aggregate_key_type="IP", evaluation_window_sec=300)),
            action=wafv2.CfnWebACL.RuleActionProperty(block=wafv2.CfnWebACL.BlockActionProperty(
                custom_response=wafv2.CfnWebACL.CustomResponseProperty(response_code=429, custom_response_body_key="rate_limited"))),
            visibility_config=visibility(f"{cfg.resource_name}-rate-per-address"),
        )]
        for priority, (group, counted) in enumerate(WAF_MANAGED_RULES.items(), start=1):
            rules.append(wafv2.CfnWebACL.RuleProperty(
                name=group, priority=priority,
                statement=wafv2.CfnWebACL.StatementProperty(managed_rule_group_statement=wafv2.CfnWebACL.ManagedRuleGroupStatementProperty(
                    vendor_name="AWS", name=group,
                    rule_action_overrides=[wafv2.CfnWebACL.RuleActionOverrideProperty(
                        name=rule, action_to_use=wafv2.CfnWebACL.RuleActionProperty(count={})) for rule in counted] or None,
                )),
                override_action=wafv2.CfnWebACL.OverrideActionProperty(none={}),
                visibility_config=visibility(f"{cfg.resource_name}-{group}"),
            ))
        body = json.dumps({"error": {"code": "rate_limited", "message": "too many requests from this address; retry later"}})
        self.web_acl = wafv2.CfnWebACL(
            self, "WebAcl", name=f"{cfg.resource_name}-api", scope="REGIONAL",
            description=f"hindsight {cfg.stage}: the REST API firewall",
            default_action=wafv2.CfnWebACL.DefaultActionProperty(allow={}),
            rules=rules,
            custom_response_bodies={"rate_limited": wafv2.CfnWebACL.CustomResponseBodyProperty(
                content=body, content_type="APPLICATION_JSON")},
            visibility_config=visibility(f"{cfg.resource_name}-api"),
        )
        stage_arn = cdk.Fn.join("", ["arn:", cdk.Aws.PARTITION, ":apigateway:", cdk.Aws.REGION, "::/restapis/",
                                     api.ref, f"/stages/{API_STAGE}"])
        association = wafv2.CfnWebACLAssociation(self, "WebAclAssociation", resource_arn=stage_arn,
                                                 web_acl_arn=self.web_acl.attr_arn)
        association.add_override("DependsOn", [f"RestAPI{API_STAGE}Stage"])  # SAM's stage, made by the transform
        cdk.Validations.of(association).acknowledge(cdk.Acknowledgment(
            id="CloudFormation-Validate::E3005", reason="the API's stage is made by the SAM transform, under this logical id"))

    def _admin_policy(self, api: cdk.CfnResource) -> None:
        """A policy for the operators' role: the admin routes, by SigV4 (CloudTrail records each call)."""
        resources = [cdk.Fn.join("", ["arn:", cdk.Aws.PARTITION, ":execute-api:", cdk.Aws.REGION, ":", cdk.Aws.ACCOUNT_ID, ":",
                                      api.ref, f"/{API_STAGE}/{execute_api_arn_path(m)}"]) for m in self.admin_methods]
        self.admin_policy = iam.ManagedPolicy(
            self, "AdminPolicy", description=f"hindsight {self.cfg.stage}: call the admin routes (tenants, keys, maintenance)",
            statements=[iam.PolicyStatement(sid="AdminRoutes", actions=["execute-api:Invoke"], resources=resources)],
        )

    # --- alarms ---------------------------------------------------------------------------------

    def _alarm(self, key: str, name: str, description: str, metric: cloudwatch.IMetric, threshold: float, *,
               datapoints: int = 1, periods: int = 1,
               comparison: cloudwatch.ComparisonOperator = cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD) -> None:
        a = cloudwatch.Alarm(
            self, f"{_camel(key)}Alarm", alarm_name=f"{self.cfg.resource_name}-{name}", alarm_description=description,
            metric=metric, threshold=threshold, evaluation_periods=periods, datapoints_to_alarm=datapoints,
            comparison_operator=comparison, treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        )
        a.add_alarm_action(cw_actions.SnsAction(self.alarm_topic))
        self.alarms[key] = a

    def api_metric(self, name: str, statistic: str) -> cloudwatch.Metric:
        return cloudwatch.Metric(namespace="AWS/ApiGateway", metric_name=name, statistic=statistic,
                                 dimensions_map={"ApiName": self.cfg.resource_name, "Stage": API_STAGE},
                                 period=cdk.Duration.minutes(1))

    def app_metric(self, name: str, minutes: int = 5) -> cloudwatch.Metric:
        """A metric the functions write (``domain.usage``), summed over the stage's tenants."""
        from chalicelib.domain import usage

        return cloudwatch.Metric(namespace=usage.NAMESPACE, metric_name=name, statistic="Sum",
                                 dimensions_map={usage.STAGE_DIMENSION: self.cfg.stage}, period=cdk.Duration.minutes(minutes))

    def _alarms(self) -> None:
        from chalicelib.domain import usage

        cfg = self.cfg
        m, n = cfg.alarm_datapoints, cfg.alarm_periods
        five_minutes, one_minute = cdk.Duration.minutes(5), cdk.Duration.minutes(1)

        # what customers see
        self._alarm(
            "api-5xx", "api-5xx",
            f"More than {cfg.api_5xx_percent}% of the API's answers were 5XX in {m} of {n} minutes (the functions' "
            "503s and 500s, the gateway's own faults). Rolls back a canary deployment.",
            cloudwatch.MathExpression(
                expression="IF(requests > 0, 100 * errors / requests, 0)", label="5XX %", period=one_minute,
                using_metrics={"errors": self.api_metric("5XXError", "Sum"), "requests": self.api_metric("Count", "Sum")},
            ),
            cfg.api_5xx_percent, datapoints=m, periods=n,
        )
        self._alarm(
            "api-latency", "api-p99-latency",
            f"The API's p99 latency was above {cfg.api_p99_latency_ms} ms in {m} of {n} minutes.",
            self.api_metric("Latency", "p99"), cfg.api_p99_latency_ms, datapoints=m, periods=n,
        )
        # the functions
        for fn_name, lambda_name in sorted(self.function_names.items()):
            self._alarm(
                f"{fn_name}-errors", f"{fn_name}-errors",
                f"{lambda_name} raised errors (unhandled exceptions or timeouts) in the last 5 minutes.",
                cloudwatch.Metric(namespace="AWS/Lambda", metric_name="Errors", dimensions_map={"FunctionName": lambda_name},
                                  statistic="Sum", period=five_minutes),
                0,
            )
            self._alarm(
                f"{fn_name}-throttles", f"{fn_name}-throttles",
                f"{lambda_name} was throttled in {m} of {n} minutes: the account's concurrency is spent (or the "
                "function's reserved concurrency is too low for its load).",
                cloudwatch.Metric(namespace="AWS/Lambda", metric_name="Throttles", dimensions_map={"FunctionName": lambda_name},
                                  statistic="Sum", period=one_minute),
                0, datapoints=m, periods=n,
            )
        # the tables
        for spec in all_tables():
            name = self.cfg.table_prefix + spec.table
            dims = {"TableName": name}
            self._alarm(
                f"{spec.table}-table-throttles", f"{spec.table}-table-throttled",
                f"DynamoDB throttled reads or writes of {name} (an on-demand table past its partitions' limits: "
                f"a hot key, or a jump past twice the previous peak) in {m} of {n} minutes.",
                cloudwatch.MathExpression(
                    expression="FILL(reads, 0) + FILL(writes, 0)", label="throttle events", period=one_minute,
                    using_metrics={
                        "reads": cloudwatch.Metric(namespace="AWS/DynamoDB", metric_name="ReadThrottleEvents",
                                                   dimensions_map=dims, statistic="Sum", period=one_minute),
                        "writes": cloudwatch.Metric(namespace="AWS/DynamoDB", metric_name="WriteThrottleEvents",
                                                    dimensions_map=dims, statistic="Sum", period=one_minute),
                    },
                ),
                0, datapoints=m, periods=n,
            )
        # OpenSearch
        for key, name, description, metric, threshold, comparison, datapoints, periods in self._search_health():
            self._alarm(key, name, description, metric, threshold, comparison=comparison, datapoints=datapoints, periods=periods)
        # the review pipeline
        self._alarm(
            "review-jobs-dead", "review-jobs-dead",
            "Review jobs were given up on (their last attempt failed): the tenants' trajectories show review_failed. "
            "GET /v1/maintenance/failed-reviews lists them with the reason; POST /v1/maintenance/redrive sends them round again.",
            self.app_metric(usage.REVIEW_JOBS_DEAD), 0,
        )
        self._alarm(
            "review-dlq", "review-dlq-not-empty",
            "Review stream batches failed every retry and landed in the DLQ: the jobs they woke are still in "
            "the queue table (the sweeper retries them); read the DLQ message for the shard and sequence range.",
            self.dlq.metric_approximate_number_of_messages_visible(period=one_minute, statistic="Maximum"), 0,
        )
        self._alarm(
            "maintenance-dlq", "maintenance-dlq-not-empty",
            "A decay run failed every retry and landed in the maintenance DLQ (the message holds its error); "
            "the next scheduled run goes on from the pass's checkpoint.",
            self.maintenance_dlq.metric_approximate_number_of_messages_visible(period=one_minute, statistic="Maximum"), 0,
        )
        self._alarm(
            "decay-dlq", "decay-dlq-not-empty",
            f"A tenant's decay message failed {DECAY_MAX_RECEIVES} deliveries and landed in the decay DLQ (its body names "
            "the tenant and pass; the worker's log the error); the tenant's next pass starts over from its first lesson.",
            self.decay_dlq.metric_approximate_number_of_messages_visible(period=one_minute, statistic="Maximum"), 0,
        )
        self._alarm(
            "review-stream-iterator-age", "review-stream-lagging",
            "The review worker is behind the review-jobs stream (oldest record's age).",
            cloudwatch.Metric(namespace="AWS/Lambda", metric_name="IteratorAge",
                              dimensions_map={"FunctionName": self.function_names[REVIEW_WORKER]},
                              statistic="Maximum", period=five_minutes),
            cfg.iterator_age_alarm_ms,
        )

    def _search_health(self) -> list[tuple]:
        cfg = self.cfg
        m, n = cfg.alarm_datapoints, cfg.alarm_periods
        above, at_least = cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD, cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD
        below = cloudwatch.ComparisonOperator.LESS_THAN_THRESHOLD
        one_minute = cdk.Duration.minutes(1)
        if cfg.opensearch == "serverless":
            dims = {"CollectionName": cfg.resource_name, "CollectionId": self.collection.attr_id, "ClientId": cdk.Aws.ACCOUNT_ID}

            def aoss_metric(name: str) -> cloudwatch.Metric:
                return cloudwatch.Metric(namespace="AWS/AOSS", metric_name=name, dimensions_map=dims, statistic="Sum", period=one_minute)

            return [
                ("opensearch-search-errors", "opensearch-search-errors",
                 f"The collection answered searches with errors in {m} of {n} minutes: recalls fail (503).",
                 aoss_metric("SearchRequestErrors"), 0, above, m, n),
                ("opensearch-ingest-errors", "opensearch-ingest-errors",
                 f"The collection refused writes in {m} of {n} minutes: reviews retry, lessons wait.",
                 aoss_metric("IngestionRequestErrors"), 0, above, m, n),
            ]
        dims = {"DomainName": cfg.resource_name, "ClientId": cdk.Aws.ACCOUNT_ID}

        def es_metric(name: str, statistic: str) -> cloudwatch.Metric:
            return cloudwatch.Metric(namespace="AWS/ES", metric_name=name, dimensions_map=dims, statistic=statistic, period=one_minute)

        return [
            ("opensearch-red", "opensearch-cluster-red", "A primary shard is unassigned: some lessons cannot be searched or written.",
             es_metric("ClusterStatus.red", "Maximum"), 1, at_least, 1, 1),
            ("opensearch-writes-blocked", "opensearch-writes-blocked",
             "The domain blocks writes (disk or memory pressure): reviews cannot store lessons.",
             es_metric("ClusterIndexWritesBlocked", "Maximum"), 1, at_least, 1, 1),
            ("opensearch-storage", "opensearch-storage-low",
             "A node has less than a quarter of its volume free.",
             es_metric("FreeStorageSpace", "Minimum"), cfg.domain_volume_gb * 1024 * 0.25, below, 1, 1),
            ("opensearch-jvm", "opensearch-jvm-pressure",
             f"JVM memory pressure above 85% in {m} of {n} minutes (k-NN graphs live in memory).",
             es_metric("JVMMemoryPressure", "Maximum"), 85, above, m, n),
        ]

    # --- dashboard ------------------------------------------------------------------------------

    def _dashboard(self) -> None:
        from chalicelib.domain import usage

        cfg = self.cfg
        minute = cdk.Duration.minutes(1)

        def lambda_metric(fn: str, name: str, statistic: str) -> cloudwatch.Metric:
            return cloudwatch.Metric(namespace="AWS/Lambda", metric_name=name, statistic=statistic, period=minute,
                                     dimensions_map={"FunctionName": self.function_names[fn]}, label=fn)

        def graph(title: str, left: list[cloudwatch.IMetric], width: int = 8, right: list[cloudwatch.IMetric] | None = None):
            return cloudwatch.GraphWidget(title=title, left=left, right=right or [], width=width, height=6)

        functions = sorted(self.function_names)
        self.dashboard = cloudwatch.Dashboard(self, "Dashboard", dashboard_name=cfg.resource_name, widgets=[
            [cloudwatch.AlarmStatusWidget(title="Alarms", alarms=list(self.alarms.values()), width=24, height=4)],
            [graph("API requests and errors", [self.api_metric("Count", "Sum"), self.api_metric("4XXError", "Sum"),
                                               self.api_metric("5XXError", "Sum")]),
             graph("API latency (ms)", [self.api_metric("Latency", "p50"), self.api_metric("Latency", "p99"),
                                        self.api_metric("IntegrationLatency", "p99")]),
             graph("Usage (all tenants)", [self.app_metric(name, 1) for name in usage.TENANT_METRICS])],
            [graph("Lambda errors", [lambda_metric(fn, "Errors", "Sum") for fn in functions]),
             graph("Lambda throttles", [lambda_metric(fn, "Throttles", "Sum") for fn in functions]),
             graph("Lambda p99 duration (ms)", [lambda_metric(fn, "Duration", "p99") for fn in functions])],
            [graph("DynamoDB throttle events", [
                cloudwatch.Metric(namespace="AWS/DynamoDB", metric_name=metric, statistic="Sum", period=minute,
                                  dimensions_map={"TableName": cfg.table_prefix + t}, label=f"{t} {metric[:-14].lower()}")
                for t in acc.APP_TABLES for metric in ("ReadThrottleEvents", "WriteThrottleEvents")], width=12),
             graph("Review pipeline", [self.app_metric(usage.REVIEW_JOBS_DEAD, 1),
                                       self.dlq.metric_approximate_number_of_messages_visible(period=minute, statistic="Maximum")],
                   right=[lambda_metric(REVIEW_WORKER, "IteratorAge", "Maximum")], width=12)],
            [graph("WAF blocked requests", [
                cloudwatch.Metric(namespace="AWS/WAFV2", metric_name="BlockedRequests", statistic="Sum", period=minute,
                                  dimensions_map={"WebACL": f"{cfg.resource_name}-api", "Region": cdk.Aws.REGION, "Rule": "ALL"})],
                   width=12),
             graph("OpenSearch", [alarm.metric for key, alarm in self.alarms.items() if key.startswith("opensearch-")], width=12)],
        ])
        logs.CfnQueryDefinition(
            self, "UsageByTenantQuery", name=f"{cfg.resource_name}/usage-by-tenant", query_string=USAGE_QUERY,
            log_group_names=[f"/aws/lambda/{self.function_names[fn]}" for fn in (API_HANDLER, REVIEW_WORKER, "review_sweeper")],
        )
        logs.CfnQueryDefinition(
            self, "AccessByTenantQuery", name=f"{cfg.resource_name}/requests-by-tenant",
            query_string="stats count(*) as requests, sum(status >= 500) as errors_5xx, sum(status >= 400 and status < 500) "
                         "as errors_4xx, pct(latencyMs, 99) as p99_ms by tenant\n| sort requests desc",
            log_group_names=[self.access_log_group.ref],
        )
