"""Access proven, not assumed: every call the stack's actors were measured to make
(`gpucloud/data/access_calls.json`), filled with this stack's names and evaluated against the
plan's own policies (`gpucloud.policy.access`). A denied call fails the plan; a feature the stack
uses that no test measured is named; an identity grant no measured call uses is a hint."""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from gpucloud.config import StackSettings
from gpucloud.config.node_endpoints import group_features
from gpucloud.naming import (
    autoscaling_group_name,
    instance_role_name,
    job_log_group_name,
    job_runner_policy_name,
    jupyter_token_parameter_name,
    role_arn,
)
from gpucloud.plan.access_documents import collect_documents, plan_account
from gpucloud.plan.model import PlanFinding
from gpucloud.policy.access import DEPLOYER, Call, Documents, action_matches, evaluate
from gpucloud.policy.iam_documents import parse_document
from gpucloud.testing import AppliedResource

ACCESS_CALLS_PATH = Path(__file__).resolve().parents[1] / "data" / "access_calls.json"
_PLACEHOLDER = re.compile(r"\$\{([A-Za-z][A-Za-z0-9]*)\}")
EXAMPLE_JOB_TIME = "20261128120000-0a1b"
"""A job id is `<group>-<utc time>-<4 hex>` (ops/jobs.py new_job_id); the check uses this one."""
EXAMPLE_INSTANCE = "i-0123456789abcdef0"
EXAMPLE_VOLUME = "vol-0123456789abcdef0"
PER_GROUP = frozenset({"group", "job", "parameterName", "autoScalingGroupId"})
BUCKET_OBJECT = "aws:s3/bucketObjectv2:BucketObjectv2"
AUTOSCALING_GROUP = "aws:autoscaling/group:Group"
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
    stack_wide = {
        "sessionManager": ("node", config.access.ssm), "run": ("person:jobRunner", config.access.ssm),
        "logs": ("person:jobRunner", config.access.ssm), "stop": ("person:jobRunner", config.access.ssm),
        "connect": ("person:notebookUser", config.access.ssm), "services.jupyter": ("deployer", bool(jupyter)),
        "storage.lustre": ("deployer", config.storage.lustre is not None),
        "storage.s3Mount": ("node", config.storage.s3_mount is not None),
        "monitoring.prometheus": ("deployer", config.monitoring.prometheus.enabled),
        "monitoring.grafana": ("deployer", config.monitoring.grafana.enabled),
        "monitoring.alarms": ("service:cloudwatch.amazonaws.com", True), "budget": ("service:budgets.amazonaws.com", True),
        "endpoint.accessLogs": ("service:logdelivery.elasticloadbalancing.amazonaws.com", any(
            group.endpoint is not None and group.endpoint.access_logs.enabled for group in config.groups)),
        "backup": ("deployer", any(group.persistent_volume_gib for group in config.groups)),
        "logGroups": ("service:logs.amazonaws.com", True),
    }
    for feature, (actor, used) in stack_wide.items():
        if used:
            features.setdefault(feature, (actor, everyone))
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
        "repository": sorted({match["repository"] for group in config.groups for match in group.services.ecr_images}),
    }
    found = {"keyArn": ("aws:kms/key:Key", "arn"), "keyId": ("aws:kms/key:Key", "keyId"),
             "topicArn": ("aws:sns/topic:Topic", "arn"), "fileSystemId": ("aws:fsx/lustreFileSystem:LustreFileSystem", "id")}
    for name, (kind, key) in found.items():
        values[name] = sorted({str(r.state.get(key) or r.id) for r in resources if r.custom and r.type == kind})
    bundle = [r.state for r in resources if r.custom and r.type == BUCKET_OBJECT and str(r.state.get("key")).startswith("agent/")]
    values["artifactsBucket"] = [str(bundle[0]["bucket"])] if bundle else []
    values["agentBundleKey"] = [str(bundle[0]["key"])] if bundle else []
    workspace = config.monitoring.prometheus.workspace_id
    values["workspaceId"] = [workspace] if workspace else sorted(
        str(r.id) for r in resources if r.custom and r.type == "aws:amp/workspace:Workspace")
    values["autoScalingGroupId"] = sorted(set(_group_ids(resources).values()))[:1]
    return values


def _group_ids(resources: Sequence[AppliedResource]) -> dict[str, str]:
    """Auto Scaling group name -> the id inside its ARN (`autoScalingGroup:<id>:autoScalingGroupName/<name>`)."""
    ids = {}
    for resource in resources:
        found = _GROUP_ARN.search(str(resource.state.get("arn") or "")) if resource.type == AUTOSCALING_GROUP else None
        if found:
            ids[found["name"]] = found["id"]
    return ids


def _group_values(settings: StackSettings, group: str, group_ids: Mapping[str, str]) -> dict[str, list[str]]:
    values = {"group": [group], "job": [f"{group}-{EXAMPLE_JOB_TIME}"],
              "parameterName": [jupyter_token_parameter_name(settings.name_base, group)]}
    own = group_ids.get(autoscaling_group_name(settings.name_base, group))
    return {**values, "autoScalingGroupId": [own]} if own else values


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


def _substitute(value: Any, binding: Mapping[str, str]) -> Any:
    if isinstance(value, str):
        return _PLACEHOLDER.sub(lambda match: binding[match.group(1)], value)
    if isinstance(value, Mapping):
        return {_substitute(key, binding): _substitute(item, binding) for key, item in value.items()}
    if isinstance(value, list):
        return [_substitute(item, binding) for item in value]
    return value


def principal_of(actor: str, partition: str, account: str, settings: StackSettings, holders: Mapping[str, str]) -> str:
    """The principal an actor calls as: the node role, a role holding the stack's team policy, the
    deployer, a person outside the plan, or an AWS service."""
    if actor == "node":
        return role_arn(partition, account, instance_role_name(settings.name_base))
    if actor == "person:jobRunner":
        team = f"arn:{partition}:iam::{account}:policy/{job_runner_policy_name(settings.name_base)}"
        return holders.get(team, actor)
    if actor.startswith("service:"):
        return actor.removeprefix("service:")
    return DEPLOYER if actor == "deployer" else actor


def check_access(settings: StackSettings, resources: Sequence[AppliedResource],
                 recorded: Mapping[str, Any] | None) -> tuple[dict[str, Any] | None, list[PlanFinding]]:
    """The plan's `access` object and its findings; (None, []) where no calls are recorded."""
    account = plan_account(resources)
    if recorded is None or account is None:
        return None, []
    partition = partition_of(settings.region)
    team = f"arn:{partition}:iam::{account}:policy/{job_runner_policy_name(settings.name_base)}"
    holders = {team: f"arn:{partition}:iam::{account}:role/{job_runner_policy_name(settings.name_base)}"}
    if not any(r.custom and r.state.get("arn") == team for r in resources):
        holders = {}
    documents = collect_documents(resources, partition, account, holders)
    calls, unfilled = _stack_calls(settings, resources, account, recorded)
    checked: list[tuple[dict[str, Any], Call]] = []
    for entry in calls:
        principal = principal_of(entry["actor"], partition, account, settings, holders)
        checked.append((entry, Call(actor=entry["actor"], principal=principal, action=entry["action"],
                                    resource=entry["resource"], context=entry.get("context") or {},
                                    endpoint=entry.get("endpoint"))))
    denied = []
    for entry, call in checked:
        decision = evaluate(call, documents)
        if not decision.allowed:
            denied.append({"actor": call.actor, "principal": call.principal, "feature": entry.get("feature"),
                           "action": call.action, "resource": call.resource, "endpoint": call.endpoint,
                           "reason": decision.reason, "measuredBy": entry.get("measuredBy")})
    measured = {call["feature"] for call in recorded.get("calls", [])}
    measured |= {feature for features in (recorded.get("features") or {}).values() for feature in features}
    unmeasured = [{"feature": feature, "actor": actor} for feature, (actor, _groups) in stack_features(settings).items()
                  if feature not in measured]
    access = {"calls": len(checked), "actors": len({call.actor for _entry, call in checked}), "denied": denied,
              "unmeasured": unmeasured, "unusedGrants": unused_grants(documents, [call for _entry, call in checked])}
    if unfilled:
        access["unfilled"] = sorted(unfilled)
    return access, _findings(access)


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
        group_bound = template.get("actor") == "node" or bool(PER_GROUP & placeholders(template))
        for group in groups if group_bound else [None]:
            filled, missing = fill(template, {**values, **(_group_values(settings, group, group_ids) if group else {})})
            unfilled |= {f"{name} ({template['feature']})" for name in missing}
            for call in filled:
                calls.setdefault(json.dumps({k: v for k, v in call.items() if k != "measuredBy"}, sort_keys=True), call)
    return list(calls.values()), unfilled


def unused_grants(documents: Documents, calls: Sequence[Call]) -> list[dict[str, str]]:
    """Identity-policy actions that no checked call of the principal uses, for the principals the
    recordings speak for: least-privilege hints."""
    by_principal: dict[str, list[str]] = {}
    for call in calls:
        by_principal.setdefault(call.principal, []).append(call.action)
    hints = []
    for principal, actions in sorted(by_principal.items()):
        for document in documents.identity.get(principal, ()):
            for statement in parse_document(document):
                if not statement.allow or statement.not_actions:
                    continue
                hints += [{"principal": principal, "policy": str(document.get("Id", "")), "sid": statement.sid,
                           "action": pattern}
                          for pattern in statement.actions if not any(action_matches(pattern, a) for a in actions)]
    return hints


def _findings(access: Mapping[str, Any]) -> list[PlanFinding]:
    findings = [
        PlanFinding(source="access", severity="failure", rule="access-denied",
                    message=f"{call['actor']} cannot {call['action']} on {call['resource']}"
                            + (f" through the {call['endpoint']} endpoint" if call["endpoint"] else "")
                            + f": {call['reason']} (feature {call['feature']}, {call['measuredBy']})")
        for call in access["denied"]
    ]
    findings += [
        PlanFinding(source="access", severity="warning", rule="access-unmeasured",
                    message=f"{item['feature']} ({item['actor']}) is used by this stack, but no test measured its "
                            "calls, so its access is not proven (access_calls.json)")
        for item in access["unmeasured"]
    ]
    if access.get("unfilled"):
        findings.append(PlanFinding(source="access", severity="warning", rule="access-unfilled",
                                    message="calls left unchecked, the plan has no value for: "
                                            + ", ".join(access["unfilled"])))
    by_principal: dict[str, list[str]] = {}
    for hint in access["unusedGrants"]:
        by_principal.setdefault(hint["principal"], []).append(hint["action"])
    findings += [
        PlanFinding(source="access", severity="info", rule="access-unused-grant",
                    message=f"{principal} is granted {len(actions)} action(s) no measured call uses: "
                            f"{', '.join(sorted(set(actions)))} (least-privilege hint)")
        for principal, actions in by_principal.items()
    ]
    return findings


def access_summary(access: Mapping[str, Any]) -> str:
    """The plan's one line on access."""
    return (f"Access: {access['calls']} calls of {access['actors']} actors checked, {len(access['denied'])} denied, "
            f"{len(access['unmeasured'])} unmeasured")
