"""The recorded calls as templates (`gpucloud/data/access_calls.json`): which features a stack
uses and who makes their calls, and each placeholder's values in this stack, so that
`gpucloud.plan.access` can fill every call with the stack's own names before it evaluates them."""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from gpucloud.config import StackSettings
from gpucloud.config.node_endpoints import group_features
from gpucloud.documents.load_balancer_logs import log_writer
from gpucloud.naming import (
    GROUP_TAG,
    STACK_TAG,
    autoscaling_group_name,
    endpoint_logs_bucket_name,
    job_log_group_name,
    jupyter_token_parameter_name,
)
from gpucloud.plan.access_secrets import secret_values
from gpucloud.testing import AppliedResource

_PLACEHOLDER = re.compile(r"\$\{([A-Za-z][A-Za-z0-9]*)\}")
EXAMPLE_JOB_TIME = "20261128120000-0a1b"
"""A job id is `<group>-<utc time>-<4 hex>` (ops/jobs.py new_job_id); the check uses this one."""
EXAMPLE_INSTANCE = "i-0123456789abcdef0"
EXAMPLE_VOLUME = "vol-0123456789abcdef0"
EXAMPLE_RESERVATION = "cr-0123456789abcdef0"
EXAMPLE_SESSION = "notebook-user-0123456789abcdef0"
"""A Session Manager session id: the starter's name and 17 hex digits."""
EXAMPLE_ROLE_ID = "AROAEXAMPLENOTEBOOKID"
"""The unique id of the role the check takes as holding a group's notebook user policy."""
PER_GROUP = frozenset({"group", "job", "parameterName", "autoScalingGroupId", "endpointLogsBucket", "accessLogsPrefix",
                       "userId"})
EXAMPLE_OBJECT = "example/object.bin"
EXAMPLE_LOG_STREAM = f"0b5c8f3e-example-command/{EXAMPLE_INSTANCE}/aws-runShellScript/stdout"
BUCKET_OBJECT = "aws:s3/bucketObjectv2:BucketObjectv2"
AUTOSCALING_GROUP = "aws:autoscaling/group:Group"
LOG_GROUP = "aws:cloudwatch/logGroup:LogGroup"
DEPLOYING_PERSON = "person:deployer"
"""Who runs `gpucloud capacity buy` (before `pulumi up`, with the deployer's credentials, which the
plan does not hold)."""
NOTEBOOK_USER = "person:notebookUser"
"""Who runs `gpucloud connect` and reads a group's token: one person per group, holding that
group's notebook user policy where the group asks for one (`services.jupyter.userPolicy`)."""
_GROUP_ARN = re.compile(r":autoScalingGroup:(?P<id>[^:]+):autoScalingGroupName/(?P<name>.+)$")


def partition_of(region: str) -> str:
    return "aws-cn" if region.startswith("cn-") else "aws-us-gov" if region.startswith("us-gov-") else "aws"


def stack_features(settings: StackSettings) -> dict[str, tuple[str, list[str]]]:
    """feature -> (the actor expected to make its calls, the groups it concerns) for what this
    stack uses (the feature names of access_calls.json)."""
    config = settings.config
    everyone = [group.name for group in config.groups]
    features: dict[str, tuple[str, list[str]]] = {"cloudWatchAgent": ("node", everyone)}
    for group in config.groups:
        for feature in group_features(config, group):
            features.setdefault(feature, ("node", []))[1].append(group.name)
    jupyter = [group.name for group in config.groups if group.services.jupyter is not None]
    logging = [group.name for group in config.groups if group.endpoint is not None and group.endpoint.access_logs.enabled]
    to_buy = [group.name for group in config.groups
              if group.capacity.capacity_block is not None and group.capacity.capacity_block.offering is not None]
    stack_wide = {
        "sessionManager": ("node", config.access.ssm), "run": ("person:jobRunner", config.access.ssm),
        "logs": ("person:jobRunner", config.access.ssm), "stop": ("person:jobRunner", config.access.ssm),
        "connect": ("person:notebookUser", config.access.ssm), "services.jupyter": ("deployer", bool(jupyter)),
        "storage.lustre": ("deployer", config.storage.lustre is not None),
        "storage.s3Mount": ("node", config.storage.s3_mount is not None),
        "monitoring.prometheus": ("deployer", config.monitoring.prometheus.enabled),
        "monitoring.grafana": ("deployer", config.monitoring.grafana.enabled),
        "monitoring.alarms": ("service:cloudwatch.amazonaws.com", True), "budget": ("service:budgets.amazonaws.com", True),
        "endpoint.accessLogs": ("service:logdelivery.elasticloadbalancing.amazonaws.com", bool(logging)),
        "backup": ("deployer", any(group.persistent_volume_gib for group in config.groups)),
        "logGroups": ("service:logs.amazonaws.com", True), "groups": ("deployer", True), "agentBundle": ("deployer", True),
        "flowLogs": ("deployer", config.network.created), "jobSupervisor": ("deployer", True),
        "capacityBuy": (DEPLOYING_PERSON, bool(to_buy)),
    }
    concerns = {"services.jupyter": jupyter, "endpoint.accessLogs": logging, "capacityBuy": to_buy}
    for feature, (actor, used) in stack_wide.items():
        if used:
            features.setdefault(feature, (actor, concerns.get(feature, everyone)))
    return features


def placeholder_values(settings: StackSettings, resources: Sequence[AppliedResource], account: str) -> dict[str, list[str]]:
    """Each placeholder's values in this stack (several: the call is checked once per value)."""
    config, base = settings.config, settings.name_base
    data = config.data
    values = {
        "partition": [partition_of(settings.region)], "region": [settings.region], "account": [account],
        "nameBase": [base], "stack": [settings.stack], "project": [config.project],
        "group": [group.name for group in config.groups],
        "dataBucket": [data.bucket] if data else [], "readPrefix": list(data.read_prefixes) if data else [],
        "writePrefix": list(data.write_prefixes) if data else [],
        "instanceId": [EXAMPLE_INSTANCE], "volumeId": [EXAMPLE_VOLUME], "logGroup": [job_log_group_name(base)],
        "sessionId": [EXAMPLE_SESSION], "capacityReservationId": [EXAMPLE_RESERVATION],
        "objectKey": [EXAMPLE_OBJECT], "logStream": [EXAMPLE_LOG_STREAM],
        "elbLogWriter": [next(iter(log_writer(settings.region, partition_of(settings.region)).values()))],
        "repository": sorted({match["repository"] for group in config.groups for match in group.services.ecr_images}),
    }
    found = {"keyArn": ("aws:kms/key:Key", "arn"), "keyId": ("aws:kms/key:Key", "keyId"),
             "alarmName": ("aws:cloudwatch/metricAlarm:MetricAlarm", "name"), "budgetName": ("aws:budgets/budget:Budget", "name"),
             "topicArn": ("aws:sns/topic:Topic", "arn"), "fileSystemId": ("aws:fsx/lustreFileSystem:LustreFileSystem", "id")}
    for name, (kind, key) in found.items():
        values[name] = sorted({str(r.state.get(key) or r.id) for r in resources if r.custom and r.type == kind})
    values["encryptedLogGroup"] = sorted(str(r.state.get("name")) for r in resources if r.custom and r.type == LOG_GROUP
                                         and r.state.get("kmsKeyId") in (*values["keyArn"], *values["keyId"]))
    bundle = [r.state for r in resources if r.custom and r.type == BUCKET_OBJECT and str(r.state.get("key")).startswith("agent/")]
    values["artifactsBucket"] = [str(bundle[0]["bucket"])] if bundle else []
    values["agentBundleKey"] = [str(bundle[0]["key"])] if bundle else []
    workspace = config.monitoring.prometheus.workspace_id
    values["workspaceId"] = [workspace] if workspace else sorted(
        str(r.id) for r in resources if r.custom and r.type == "aws:amp/workspace:Workspace")
    values["autoScalingGroupId"] = sorted(set(group_ids(resources).values()))[:1]
    values |= secret_values(config, partition_of(settings.region), settings.region, account)
    return values


def group_ids(resources: Sequence[AppliedResource]) -> dict[str, str]:
    """Auto Scaling group name -> the id inside its ARN (`autoScalingGroup:<id>:autoScalingGroupName/<name>`)."""
    ids = {}
    for resource in resources:
        found = _GROUP_ARN.search(str(resource.state.get("arn") or "")) if resource.type == AUTOSCALING_GROUP else None
        if found:
            ids[found["name"]] = found["id"]
    return ids


def group_values(settings: StackSettings, group: str, ids: Mapping[str, str], account: str) -> dict[str, list[str]]:
    """What a group's own names fill: its job ids, token parameter, Auto Scaling group, endpoint logs."""
    values = {"group": [group], "job": [f"{group}-{EXAMPLE_JOB_TIME}"],
              "parameterName": [jupyter_token_parameter_name(settings.name_base, group)],
              "userId": [notebook_user_id(group)]}
    own = ids.get(autoscaling_group_name(settings.name_base, group))
    if own:
        values["autoScalingGroupId"] = [own]
    endpoint = next((g.endpoint for g in settings.config.groups if g.name == group), None)
    if endpoint is not None:
        values["endpointLogsBucket"] = [endpoint_logs_bucket_name(settings.name_base, group, account)]
        values["accessLogsPrefix"] = [endpoint.access_logs.prefix]
    return values


def fill(template: Mapping[str, Any], values: Mapping[str, list[str]]) -> tuple[list[dict[str, Any]], set[str]]:
    """The template once per combination of its placeholders' values (none where one has no value
    in this stack: a job record's call in a stack without write prefixes), and the placeholders the
    plan knows no value for at all (the call is left out, and the plan says so)."""
    names = sorted(placeholders(template))
    unknown = {name for name in names if name not in values}
    if unknown:
        return [], unknown
    return [substitute(template, dict(zip(names, combination)))
            for combination in itertools.product(*(values[name] for name in names))], set()


def placeholders(value: Any) -> set[str]:
    """The `${name}`s in a call's strings (context keys included)."""
    found: set[str] = set()
    for text in _strings(value):
        if "${" in text:
            found.update(_PLACEHOLDER.findall(text))
    return found


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield key
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def substitute(value: Any, binding: Mapping[str, str], keep: bool = False) -> Any:
    if isinstance(value, str):
        return _PLACEHOLDER.sub(lambda match: binding.get(match.group(1), match.group(0)) if keep
                                else binding[match.group(1)], value)
    if isinstance(value, Mapping):
        return {substitute(key, binding, keep): substitute(item, binding, keep) for key, item in value.items()}
    if isinstance(value, list):
        return [substitute(item, binding, keep) for item in value]
    return value


def notebook_user_id(group: str) -> str:
    """The aws:userid of a group's notebook user: a session of the role holding the group's policy,
    `role-id:caller-specified-role-name` (IAM user guide, "AWS global condition context keys",
    aws:userid; read 2026-11-28), one person per group."""
    return f"{EXAMPLE_ROLE_ID}:{group}-user"


def as_group_member(call: dict[str, Any], group: str) -> dict[str, Any]:
    """A notebook user's call for `group`: on an instance, the resource-tag keys that read the
    stack's tag also read the group's, which the launch template puts on each of the group's nodes
    beside the stack's (components/environment.py, `GROUP_TAG`)."""
    context = dict(call.get("context") or {})
    if ":instance/" in str(call.get("resource")):
        context |= {key.removesuffix(STACK_TAG) + GROUP_TAG: group for key in list(context) if key.endswith(f"/{STACK_TAG}")}
    return {**call, "context": context, "group": group}


def partly(value: Any, binding: Mapping[str, str]) -> Any:
    """`value` with the placeholders `binding` names filled, the others kept."""
    return substitute(value, binding, keep=True)
