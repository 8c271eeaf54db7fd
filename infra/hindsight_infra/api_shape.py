"""Changes to the SAM template ``chalice package`` writes, made before CDK reads it (no CDK here).

Chalice writes the REST API as an OpenAPI body whose integrations and authorizer call the
functions' unqualified ARNs (their ``$LATEST``). With aliases (``AutoPublishAlias``) and a
canary (``DeploymentPreference``), API Gateway must call the alias, which CodeDeploy shifts from
one version to the next: every ``${Fn.Arn}`` of those functions in the body, and the permissions
that let API Gateway invoke them, are pointed at ``Fn.Alias`` (SAM's reference to the alias).

The keys of the body are paths (``/v1/openapi.json``) that CDK's property overrides cannot name,
hence a pass over the JSON rather than overrides.
"""
from __future__ import annotations

import re
from typing import Any

ALIAS_NAME = "live"


def _on_alias(value: Any, functions: set[str]) -> Any:
    """``{"Fn::Sub": "...${Fn.Arn}..."}`` -> ``{"Fn::Sub": ["...${FnAlias}...", {"FnAlias": {"Ref": "Fn.Alias"}}]}``."""
    if isinstance(value, list):
        return [_on_alias(v, functions) for v in value]
    if not isinstance(value, dict):
        return value
    if set(value) == {"Fn::Sub"} and isinstance(value["Fn::Sub"], str):
        text, variables = value["Fn::Sub"], {}
        for fn in sorted(functions):
            if "${%s.Arn}" % fn in text:
                text = text.replace("${%s.Arn}" % fn, "${%sAlias}" % fn)
                variables[f"{fn}Alias"] = {"Ref": f"{fn}.Alias"}
        return {"Fn::Sub": [text, variables]} if variables else value
    return {k: _on_alias(v, functions) for k, v in value.items()}


def point_api_at_aliases(sam: dict[str, Any], functions: set[str]) -> list[str]:
    """Make the REST API call ``functions`` (logical ids) through their aliases; returns what changed.

    Raises when a function is not called by the API at all, or is still called by its bare ARN
    afterwards (a new place Chalice writes it would otherwise call ``$LATEST`` unnoticed)."""
    changed = []
    resources = sam["Resources"]
    for logical_id, resource in resources.items():
        if resource["Type"] == "AWS::Serverless::Api":
            before = resource["Properties"]["DefinitionBody"]
            resource["Properties"]["DefinitionBody"] = _on_alias(before, functions)
            changed.append(logical_id)
        elif resource["Type"] == "AWS::Lambda::Permission":
            target = resource["Properties"]["FunctionName"]
            for fn in functions:
                if target in ({"Ref": fn}, {"Fn::GetAtt": [fn, "Arn"]}, {"Fn::GetAtt": f"{fn}.Arn"}):
                    resource["Properties"]["FunctionName"] = {"Ref": f"{fn}.Alias"}
                    changed.append(logical_id)
    text = repr(sam)
    for fn in functions:
        if "'%sAlias'" % fn not in text:
            raise RuntimeError(f"the API does not call {fn}: nothing to point at its alias")
        if re.search(r"\$\{%s\.Arn\}" % re.escape(fn), text):
            raise RuntimeError(f"the API still calls {fn} by its bare ARN")
    return changed


def method_resource_path(path: str) -> str:
    """``/v1/recall`` -> ``/~1v1~1recall``: how MethodSettings names a resource (JSON pointer escaping)."""
    return "/" + path.replace("~", "~0").replace("/", "~1")


def api_methods(sam: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """{"POST /v1/recall": its OpenAPI operation} of the REST API's body."""
    (api,) = [r for r in sam["Resources"].values() if r["Type"] == "AWS::Serverless::Api"]
    paths = api["Properties"]["DefinitionBody"]["paths"]
    return {f"{method.upper()} {path}": op for path, ops in paths.items() for method, op in ops.items()
            if method.lower() in ("get", "post", "put", "patch", "delete", "head", "options")}


def iam_methods(sam: dict[str, Any]) -> list[str]:
    """The methods API Gateway authorizes by IAM (SigV4): Chalice's IAMAuthorizer on the route."""
    return sorted(m for m, op in api_methods(sam).items() if {"sigv4": []} in (op.get("security") or []))


def execute_api_arn_path(method: str) -> str:
    """``POST /v1/tenants/{tenant_id}/keys`` -> ``POST/v1/tenants/*/keys``: the part of an
    execute-api ARN after the stage that an IAM policy names a method by."""
    verb, _, path = method.partition(" ")
    return verb + re.sub(r"\{[^}/]+\}", "*", path)
