"""Access proven, not assumed: every call the stack's actors were measured to make
(`gpucloud/data/access_calls.json`), filled with this stack's names and evaluated against the
plan's own policies (`gpucloud.policy.access`). A denied call fails the plan; a feature the stack
uses that no test measured is named; an identity grant no measured call uses is a hint."""

from __future__ import annotations

import dataclasses
import itertools
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from gpucloud.config import StackSettings
from gpucloud.config.node_endpoints import group_features
from gpucloud.documents.load_balancer_logs import log_writer
from gpucloud.naming import (
    GROUP_TAG,
    STACK_TAG,
    autoscaling_group_name,
    endpoint_logs_bucket_name,
    instance_role_name,
    job_log_group_name,
    job_runner_policy_name,
    jupyter_token_parameter_name,
    notebook_user_policy_name,
    role_arn,
)
from gpucloud.plan.access_documents import collect_documents, named, plan_account
from gpucloud.plan.access_secrets import secret_key_policies, secret_values
from gpucloud.plan.access_report import findings, unused_grants
from gpucloud.plan.model import PlanFinding
from gpucloud.policy.access import DEPLOYER, Call, Documents, evaluate
from gpucloud.testing import AppliedResource

DATA_BUCKET_POLICY_OUTPUT = "dataBucketPolicyForFileSystem"
ACCESS_CALLS_PATH = Path(__file__).resolve().parents[1] / "data" / "access_calls.json"
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


def load_calls(path: Path | None = None) -> dict[str, Any] | None:
    """The recorded calls, or None where they have not been recorded yet."""
    path = path or ACCESS_CALLS_PATH
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


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
    values["autoScalingGroupId"] = sorted(set(_group_ids(resources).values()))[:1]
    values |= secret_values(config, partition_of(settings.region), settings.region, account)
    return values


def _group_ids(resources: Sequence[AppliedResource]) -> dict[str, str]:
    """Auto Scaling group name -> the id inside its ARN (`autoScalingGroup:<id>:autoScalingGroupName/<name>`)."""
    ids = {}
    for resource in resources:
        found = _GROUP_ARN.search(str(resource.state.get("arn") or "")) if resource.type == AUTOSCALING_GROUP else None
        if found:
            ids[found["name"]] = found["id"]
    return ids


def _group_values(settings: StackSettings, group: str, group_ids: Mapping[str, str], account: str) -> dict[str, list[str]]:
    """What a group's own names fill: its job ids, token parameter, Auto Scaling group, endpoint logs."""
    values = {"group": [group], "job": [f"{group}-{EXAMPLE_JOB_TIME}"],
              "parameterName": [jupyter_token_parameter_name(settings.name_base, group)],
              "userId": [notebook_user_id(group)]}
    own = group_ids.get(autoscaling_group_name(settings.name_base, group))
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
    return [_substitute(template, dict(zip(names, combination)))
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


def _substitute(value: Any, binding: Mapping[str, str], keep: bool = False) -> Any:
    if isinstance(value, str):
        return _PLACEHOLDER.sub(lambda match: binding.get(match.group(1), match.group(0)) if keep
                                else binding[match.group(1)], value)
    if isinstance(value, Mapping):
        return {_substitute(key, binding, keep): _substitute(item, binding, keep) for key, item in value.items()}
    if isinstance(value, list):
        return [_substitute(item, binding, keep) for item in value]
    return value


def principal_of(actor: str, partition: str, account: str, settings: StackSettings, holders: Mapping[str, str],
                 group: str | None = None) -> str:
    """The principal an actor calls as: the node role, a role holding the stack's team policy or
    the group's notebook user policy, the deployer, a person outside the plan, or an AWS service."""
    if actor == NOTEBOOK_USER and group:
        return holders.get(_notebook_policy_arn(settings, partition, account, group), actor)
    if actor == "node":
        return role_arn(partition, account, instance_role_name(settings.name_base))
    if actor == "person:jobRunner":
        team = f"arn:{partition}:iam::{account}:policy/{job_runner_policy_name(settings.name_base)}"
        return holders.get(team, actor)
    if actor.startswith("service:"):
        return actor.removeprefix("service:")
    return DEPLOYER if actor == "deployer" else actor


def check_access(settings: StackSettings, resources: Sequence[AppliedResource], recorded: Mapping[str, Any] | None,
                 outputs: Mapping[str, Any] | None = None,
                 deployer: str | None = None) -> tuple[dict[str, Any] | None, list[PlanFinding]]:
    """The plan's `access` object and its findings; (None, []) where no calls are recorded. The
    data bucket is not the stack's: its policy is the one the stack asks its owner to add (the
    `dataBucketPolicyForFileSystem` output), where the stack has one. `deployer`: the ARN the
    program ran as (what the stack's policies name as the deployer: aws:PrincipalArn of its calls)."""
    account = plan_account(resources)
    if recorded is None or account is None:
        return None, []
    partition = partition_of(settings.region)
    holders = _team_holders(settings, resources, partition, account)
    documents = collect_documents(resources, partition, account, holders)
    documents = dataclasses.replace(documents, resource=[
        *documents.resource, *secret_key_policies(settings.config, partition, settings.region, account)])
    asked = (outputs or {}).get(DATA_BUCKET_POLICY_OUTPUT)
    if asked and settings.config.data:
        owned = (f"arn:{partition}:s3:::{settings.config.data.bucket}", named(asked, f"the {DATA_BUCKET_POLICY_OUTPUT} output"))
        documents = dataclasses.replace(documents, resource=[*documents.resource, owned])
    calls, unfilled = _stack_calls(settings, resources, account, recorded)
    checked = [(entry, _call(entry, principal_of(entry["actor"], partition, account, settings, holders, entry.get("group")),
                             deployer)) for entry in calls]
    denied = [_listed_call(entry, call, decision.reason) for entry, call in checked
              if not (decision := evaluate(call, documents)).allowed]
    measured = {call["feature"] for call in recorded.get("calls", [])}
    measured |= {feature for features in (recorded.get("features") or {}).values() for feature in features}
    unmeasured = [{"feature": feature, "actor": actor} for feature, (actor, _groups) in stack_features(settings).items()
                  if feature not in measured]
    access = {"calls": len(checked), "actors": len({call.actor for _entry, call in checked}), "denied": denied,
              "unmeasured": unmeasured, "unusedGrants": unused_grants(documents, [call for _entry, call in checked])}
    beyond = _beyond_stack(settings, resources, account, recorded, holders, documents)
    beyond += _beyond_group(settings, resources, account, recorded, holders, documents)
    if holders:
        access["beyondStack"] = beyond
    if unfilled:
        access["unfilled"] = sorted(unfilled)
    return access, findings(access)


def _team_holders(settings: StackSettings, resources: Sequence[AppliedResource], partition: str,
                  account: str) -> dict[str, str]:
    """The stack's team policy (`access.jobRunnerPolicy`) and each group's notebook user policy
    (`services.jupyter.userPolicy`) -> the role the check takes as holding it (the account attaches
    it to its own people), for each the stack makes."""
    names = [job_runner_policy_name(settings.name_base),
             *(notebook_user_policy_name(settings.name_base, group.name) for group in settings.config.groups)]
    made = {r.state.get("arn") for r in resources if r.custom}
    return {f"arn:{partition}:iam::{account}:policy/{name}": f"arn:{partition}:iam::{account}:role/{name}"
            for name in names if f"arn:{partition}:iam::{account}:policy/{name}" in made}


def notebook_user_id(group: str) -> str:
    """The aws:userid of a group's notebook user: a session of the role holding the group's policy,
    `role-id:caller-specified-role-name` (IAM user guide, "AWS global condition context keys",
    aws:userid; read 2026-11-28), one person per group."""
    return f"{EXAMPLE_ROLE_ID}:{group}-user"


def _notebook_policy_arn(settings: StackSettings, partition: str, account: str, group: str) -> str:
    return f"arn:{partition}:iam::{account}:policy/{notebook_user_policy_name(settings.name_base, group)}"


def _call(entry: Mapping[str, Any], principal: str, deployer: str | None = None) -> Call:
    """The call as the evaluator takes it; a call that says who AWS sees make it (a service's role,
    another account) is made by that principal, not the actor's. The deployer's calls carry the ARN
    the plan ran as, unless they say otherwise."""
    principal = entry.get("principal") or principal
    context = dict(entry.get("context") or {})
    if principal == DEPLOYER and deployer and not any(key.lower() == "aws:principalarn" for key in context):
        context["aws:PrincipalArn"] = deployer
    return Call(actor=entry["actor"], principal=principal, action=entry["action"], resource=entry["resource"],
                context=context, endpoint=entry.get("endpoint"))


def _listed_call(entry: Mapping[str, Any], call: Call, reason: str) -> dict[str, Any]:
    return {"actor": call.actor, "principal": call.principal, "feature": entry.get("feature"), "action": call.action,
            "resource": call.resource, "endpoint": call.endpoint, "reason": reason, "measuredBy": entry.get("measuredBy"),
            **({"group": entry["group"]} if entry.get("group") else {})}


def _beyond_stack(settings: StackSettings, resources: Sequence[AppliedResource], account: str,
                  recorded: Mapping[str, Any], holders: Mapping[str, str], documents: Documents) -> list[dict[str, Any]]:
    """The team policy's calls made on another stack's resources (a stack whose name starts with
    this one's, another group, another bucket) that the policy would still allow. A call that
    names no resource of the stack (Run Command's reads, `Resource: "*"`) cannot be scoped and is
    left out (docs/guides/training-jobs.md says what that exposes)."""
    if not holders:
        return []
    partition = partition_of(settings.region)
    data = settings.config.data
    elsewhere = [{"nameBase": f"{settings.name_base}-other"}, {"group": "other-group"}]
    if data:
        elsewhere += [{"dataBucket": f"other-{data.bucket}"}, {"writePrefix": "other-prefix/"}]
    team = [call for call in recorded.get("calls", []) if call.get("actor") == "person:jobRunner"]
    if principal_of("person:jobRunner", partition, account, settings, holders) not in holders.values():
        return []
    own, _ = _stack_calls(settings, resources, account, {"calls": team})
    other: list[dict[str, Any]] = []
    for binding in elsewhere:
        other += _stack_calls(settings, resources, account, {"calls": [_partly(call, binding) for call in team]})[0]
    allowed = []
    for entry in other:
        if entry in own:
            continue
        call = _call(entry, principal_of(entry["actor"], partition, account, settings, holders))
        decision = evaluate(call, documents)
        if decision.allowed:
            allowed.append(_listed_call(entry, call, decision.reason))
    return allowed


def _beyond_group(settings: StackSettings, resources: Sequence[AppliedResource], account: str,
                  recorded: Mapping[str, Any], holders: Mapping[str, str], documents: Documents) -> list[dict[str, Any]]:
    """Each notebook user policy's holder making the notebook user's calls on another group (the
    stack's others, one it does not have) or another stack's same group, that the policy would
    still allow: one person's policy must reach nothing of another person's notebook."""
    partition = partition_of(settings.region)
    person = [call for call in recorded.get("calls", []) if call.get("actor") == NOTEBOOK_USER]
    allowed = []
    for group in (group.name for group in settings.config.groups):
        principal = holders.get(_notebook_policy_arn(settings, partition, account, group))
        if principal is None:
            continue
        own = {_without_group(entry) for entry in _group_calls(settings, resources, account, person, group)}
        others = [other.name for other in settings.config.groups if other.name != group] + ["other-group"]
        elsewhere = [entry for other in others for entry in _group_calls(settings, resources, account, person, other)]
        elsewhere += _group_calls(settings, resources, account,
                                  [_partly(call, {"nameBase": f"{settings.name_base}-other"}) for call in person], group)
        for entry in (_called_by(entry, group) for entry in elsewhere):
            if _without_group(entry) in own:
                continue
            call = _call(entry, principal)
            decision = evaluate(call, documents)
            if decision.allowed:
                allowed.append(_listed_call(entry, call, decision.reason))
    return allowed


def _group_calls(settings: StackSettings, resources: Sequence[AppliedResource], account: str,
                 templates: Sequence[Mapping[str, Any]], group: str) -> list[dict[str, Any]]:
    """The templates filled for one group (one the stack may not have), as a person of that group makes them."""
    values = {**placeholder_values(settings, resources, account),
              **_group_values(settings, group, _group_ids(resources), account)}
    return [_as_group_member(call, group) for template in templates for call in fill(template, values)[0]]


def _called_by(entry: dict[str, Any], group: str) -> dict[str, Any]:
    """Another person's call made by `group`'s person: the resource stays the other's (a session
    tagged with their aws:userid), the caller's aws:userid becomes this person's."""
    context = entry.get("context") or {}
    if not any(key.lower() == "aws:userid" for key in context):
        return entry
    return {**entry, "context": {key: notebook_user_id(group) if key.lower() == "aws:userid" else value
                                 for key, value in context.items()}}


def _without_group(entry: Mapping[str, Any]) -> str:
    return json.dumps({k: v for k, v in entry.items() if k not in ("measuredBy", "group")}, sort_keys=True)


def _as_group_member(call: dict[str, Any], group: str) -> dict[str, Any]:
    """A notebook user's call for `group`: on an instance, the resource-tag keys that read the
    stack's tag also read the group's, which the launch template puts on each of the group's nodes
    beside the stack's (components/environment.py, `GROUP_TAG`)."""
    context = dict(call.get("context") or {})
    if ":instance/" in str(call.get("resource")):
        context |= {key.removesuffix(STACK_TAG) + GROUP_TAG: group for key in list(context) if key.endswith(f"/{STACK_TAG}")}
    return {**call, "context": context, "group": group}


def _partly(value: Any, binding: Mapping[str, str]) -> Any:
    """`value` with the placeholders `binding` names filled, the others kept."""
    return _substitute(value, binding, keep=True)


def _stack_calls(settings: StackSettings, resources: Sequence[AppliedResource], account: str,
                 recorded: Mapping[str, Any]) -> tuple[list[dict[str, Any]], set[str]]:
    """Every recorded call of a feature this stack uses, filled once per value (per group for a
    group's features), without repeats."""
    features = stack_features(settings)
    values = placeholder_values(settings, resources, account)
    group_ids = _group_ids(resources)
    calls: dict[str, dict[str, Any]] = {}
    unfilled: set[str] = set()
    for template in recorded.get("calls", []):
        if template.get("feature") not in features:
            continue
        groups = features[template["feature"]][1]
        person = template.get("actor") == NOTEBOOK_USER
        group_bound = template.get("actor") == "node" or person or bool(PER_GROUP & placeholders(template))
        for group in groups if group_bound else [None]:
            filled, missing = fill(template, {**values, **(_group_values(settings, group, group_ids, account) if group else {})})
            unfilled |= {f"{name} ({template['feature']})" for name in missing}
            for call in ([_as_group_member(call, group) for call in filled] if person and group else filled):
                calls.setdefault(json.dumps({k: v for k, v in call.items() if k != "measuredBy"}, sort_keys=True), call)
    return list(calls.values()), unfilled
