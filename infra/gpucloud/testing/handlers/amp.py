"""Amazon Managed Service for Prometheus: workspaces and rule groups namespaces in moto; alert
manager definitions, which moto lacks, checked against the account and recorded, one per workspace."""

from __future__ import annotations

import re
from typing import Any

import yaml

from gpucloud.testing.handlers.kms import require_key
from gpucloud.testing.handlers.statements import allows, listed, principals, statements
from gpucloud.testing.registry import Account, Created, ResourceRequest, drop_none, invoke, refused, resource

AMP_KEY_ARN = re.compile(r"arn:aws[-a-z]*:kms:[-a-z0-9]+:[0-9]{12}:key/[-a-f0-9]+")
"""CreateWorkspace's kmsKeyArn pattern (AMP API reference): a multi-region key (`mrk-...`) does not
match, and AMP refuses it (aws/amazon-managed-service-for-prometheus-roadmap#40, 2024-09-30)."""
LOG_GROUP_ARN = re.compile(r"arn:aws[a-z0-9-]*:logs:[a-z0-9-]+:[0-9]{12}:log-group:[A-Za-z0-9.\-_#/]{1,512}:\*")
"""The API's LogGroupArn pattern: the log group's ARN with its `:*` suffix."""


def _account_may_use_key_through_aps(account: Account, key: str) -> bool:
    """AMP makes its KMS calls (DescribeKey, CreateGrant) as the workspace's creator, through
    `aps.<region>.amazonaws.com`: a statement for the account's principals must allow them, with
    no kms:ViaService condition or one that names AMP."""
    root = account.arn("iam", "root", region=False)
    service = f"aps.{account.region}.amazonaws.com"
    policy = account.client("kms").get_key_policy(KeyId=key, PolicyName="default")["Policy"]
    allowed = set()
    for statement in statements(policy):
        if root not in principals(statement, "AWS"):
            continue
        conditions = statement.get("Condition", {})
        if set(conditions) - {"StringEquals", "Bool"} or set(conditions.get("StringEquals", {})) - {"kms:ViaService", "kms:CallerAccount"}:
            continue
        # AMP's grant is for an AWS resource, so kms:GrantIsForAWSResource is true on its CreateGrant
        # (KMS developer guide, "kms:GrantIsForAWSResource"); other Bool conditions are not known to hold.
        if conditions.get("Bool", {}) not in ({}, {"kms:GrantIsForAWSResource": "true"}):
            continue
        equals = conditions.get("StringEquals", {})
        if "kms:ViaService" in equals and service not in listed(equals["kms:ViaService"]):
            continue
        if equals.get("kms:CallerAccount", account.account_id) != account.account_id:
            continue
        allowed |= {action for action in ("kms:DescribeKey", "kms:CreateGrant") if allows(statement, action)}
    return allowed == {"kms:DescribeKey", "kms:CreateGrant"}


@resource("aws:amp/workspace:Workspace")
def create_workspace(account: Account, request: ResourceRequest) -> Created:
    inputs = request.inputs
    key = inputs.get("kmsKeyArn")
    if key:
        if not AMP_KEY_ARN.fullmatch(key):
            raise refused("CreateWorkspace", "ValidationException", f"kmsKeyArn {key} is not a single-region key ARN")
        require_key(account, key, f"Prometheus workspace {request.name}")
        if account.client("kms").describe_key(KeyId=key)["KeyMetadata"]["KeySpec"] != "SYMMETRIC_DEFAULT":
            raise refused("CreateWorkspace", "ValidationException", f"{key} is not a symmetric key, which AMP requires")
        if not _account_may_use_key_through_aps(account, key):
            raise refused("CreateWorkspace", "AccessDeniedException",
                          f"the key policy of {key} does not let this account's principals use the key through "
                          f"aps.{account.region}.amazonaws.com (kms:DescribeKey and kms:CreateGrant)")
    amp = account.client("amp")
    created = amp.create_workspace(**drop_none({"alias": inputs.get("alias"), "tags": inputs.get("tags") or None,
                                                "kmsKeyArn": key}))
    workspace_id = created["workspaceId"]
    logging = inputs.get("loggingConfiguration") or {}
    if logging.get("logGroupArn"):
        log_group_arn = logging["logGroupArn"]
        if not LOG_GROUP_ARN.fullmatch(log_group_arn):
            raise refused("CreateLoggingConfiguration", "ValidationException", f"logGroupArn {log_group_arn} must end in :*")
        log_group = log_group_arn.split(":log-group:", 1)[1].removesuffix(":*")
        if not account.client("logs").describe_log_groups(logGroupNamePrefix=log_group)["logGroups"]:
            raise refused("CreateLoggingConfiguration", "ValidationException", f"log group {log_group} does not exist")
        amp.create_logging_configuration(workspaceId=workspace_id, logGroupArn=log_group_arn)
    found = amp.describe_workspace(workspaceId=workspace_id)["workspace"]
    return Created(id=workspace_id, outputs={
        "arn": found["arn"],
        "alias": found.get("alias"),
        "prometheusEndpoint": found["prometheusEndpoint"],
        "kmsKeyArn": key,
    })


def _rule_file_problem(data: str) -> str | None:
    """What AMP's ruler would refuse in a Prometheus rule file: not YAML, no groups, a group
    without a name or rules, a rule that neither records nor alerts, or a name twice."""
    try:
        document = yaml.safe_load(data)
    except yaml.YAMLError as error:
        return f"not YAML: {error}"
    groups = document.get("groups") if isinstance(document, dict) else None
    if not groups:
        return "no rule groups"
    names = [group.get("name") for group in groups]
    if len(set(names)) != len(names) or not all(names):
        return f"rule group names must be present and unique: {names}"
    for group in groups:
        for rule in group.get("rules") or [None]:
            if not isinstance(rule, dict) or not (rule.get("record") or rule.get("alert")) or not rule.get("expr"):
                return f"group {group['name']}: every rule needs an expr and a record or alert name"
    return None


CONFLICT = "ConflictException"
"""What CreateRuleGroupsNamespace and CreateAlertManagerDefinition answer for a namespace name the
workspace holds, or a workspace that has a definition: "the request would cause an inconsistent
state", HTTP 409 (botocore's amp model 2020-08-01, both operations' errors; AMP API reference,
CreateAlertManagerDefinition: a workspace that has one takes PutAlertManagerDefinition; read
2026-11-25). The provider creates, never puts, on create (terraform-provider-aws
internal/service/amp/alert_manager_definition.go, rule_group_namespace.go). moto replaces a
namespace of the same name, and has no definitions."""


@resource("aws:amp/ruleGroupNamespace:RuleGroupNamespace")
def create_rule_groups_namespace(account: Account, request: ResourceRequest) -> Created:
    inputs = request.inputs
    problem = _rule_file_problem(inputs["data"])
    if problem:
        raise refused("CreateRuleGroupsNamespace", "ValidationException", f"{inputs['name']}: {problem}")
    held = account.client("amp").list_rule_groups_namespaces(workspaceId=inputs["workspaceId"], name=inputs["name"])
    if any(namespace["name"] == inputs["name"] for namespace in held["ruleGroupsNamespaces"]):
        raise refused("CreateRuleGroupsNamespace", CONFLICT,
                      f"workspace {inputs['workspaceId']} already has a rule groups namespace {inputs['name']}")
    created = account.client("amp").create_rule_groups_namespace(
        workspaceId=inputs["workspaceId"], name=inputs["name"], data=inputs["data"].encode(),
        **drop_none({"tags": inputs.get("tags") or None}),
    )
    return Created(id=created["arn"], outputs={"arn": created["arn"]})


def _topic_problem(account: Account, topic_arn: str, workspace_arn: str) -> str | None:
    """AMP accepts any topic in the definition; notifications then fail unless the topic policy
    lets aps.amazonaws.com publish (for this workspace) and an encrypted topic's key lets it
    encrypt (AMP user guide, "Troubleshoot alert manager with CloudWatch Logs", read 2026-11-25)."""
    try:
        attributes = account.client("sns").get_topic_attributes(TopicArn=topic_arn)["Attributes"]
    except account.client("sns").exceptions.NotFoundException:
        return f"topic {topic_arn} does not exist"
    publishes = [
        statement for statement in statements(attributes.get("Policy", "{}"))
        if allows(statement, "sns:Publish")
        and "aps.amazonaws.com" in principals(statement, "Service")
    ]
    if not publishes:
        return f"the policy of {topic_arn} does not let aps.amazonaws.com publish (no resource based policy)"
    if not any(workspace_arn in listed(statement.get("Condition", {}).get("ArnEquals", {}).get("aws:SourceArn", workspace_arn))
               for statement in publishes):
        return f"the policy of {topic_arn} lets AMP publish for other workspaces only, not {workspace_arn}"
    key = attributes.get("KmsMasterKeyId")
    if key:
        policy = account.client("kms").get_key_policy(KeyId=key, PolicyName="default")["Policy"]
        services = [statement for statement in statements(policy)
                    if "aps.amazonaws.com" in principals(statement, "Service")]
        if not all(any(allows(statement, action) for statement in services) for action in ("kms:GenerateDataKey", "kms:Decrypt")):
            return f"the topic's key {key} does not let aps.amazonaws.com use it (AMP is not authorized to call KMS)"
    return None


@resource("aws:amp/alertManagerDefinition:AlertManagerDefinition")
def record_alert_manager_definition(account: Account, request: ResourceRequest) -> Created:
    inputs = request.inputs
    workspace = account.client("amp").describe_workspace(workspaceId=inputs["workspaceId"])["workspace"]
    if inputs["workspaceId"] in account.alert_manager_definitions:
        raise refused("CreateAlertManagerDefinition", CONFLICT,
                      f"workspace {inputs['workspaceId']} already has an alert manager definition")
    definition = yaml.safe_load(inputs["definition"])
    config = yaml.safe_load(definition["alertmanager_config"]) if isinstance(definition, dict) else None
    if not isinstance(config, dict) or "route" not in config or not config.get("receivers"):
        raise refused("CreateAlertManagerDefinition", "ValidationException",
                      "the definition needs alertmanager_config with a route and receivers")
    for receiver in config["receivers"]:
        for sns in receiver.get("sns_configs", []):
            problem = _topic_problem(account, sns["topic_arn"], workspace["arn"])
            if problem:
                raise refused("CreateAlertManagerDefinition", "ValidationException",
                              f"receiver {receiver['name']}: {problem}; every alert would fail to send")
    account.alert_manager_definitions[inputs["workspaceId"]] = inputs["definition"]
    return Created(
        id=inputs["workspaceId"],
        outputs={"definition": inputs["definition"]},
        validated=False,
        note="moto has no alert manager definitions: its workspace, SNS topics, topic policy and key were checked, "
             "the definition recorded by the engine only",
    )


@invoke("aws:amp/getWorkspace:getWorkspace")
def workspace(account: Account, args: dict[str, Any]) -> dict[str, Any]:
    found = account.client("amp").describe_workspace(workspaceId=args["workspaceId"])["workspace"]
    return {
        "id": found["workspaceId"],
        "workspaceId": found["workspaceId"],
        "arn": found["arn"],
        "alias": found.get("alias", ""),
        "status": found["status"]["statusCode"],
        "prometheusEndpoint": found["prometheusEndpoint"],
        "kmsKeyArn": found.get("kmsKeyArn", ""),
        "createdDate": str(found.get("createdAt", "")),
        "tags": found.get("tags", {}),
    }
