"""Access proven, not assumed: every call the stack's actors were measured to make
(`gpucloud/data/access_calls.json`), filled with this stack's names and evaluated against the
plan's own policies (`gpucloud.policy.access`). A denied call fails the plan; a feature the stack
uses that no test measured is named; an identity grant no measured call uses is a hint."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from gpucloud.config import StackSettings
from gpucloud.documents.buckets import gateway_endpoint_reaches
from gpucloud.naming import instance_role_name, job_runner_policy_name, notebook_user_policy_name, role_arn
from gpucloud.plan.access_documents import collect_documents, named, plan_account
from gpucloud.plan.access_report import findings, unused_grants
from gpucloud.plan.access_secrets import secret_key_policies
from gpucloud.plan.access_templates import (  # noqa: F401 - DEPLOYING_PERSON: the tests' way in
    DEPLOYING_PERSON,
    NOTEBOOK_USER,
    PER_GROUP,
    as_group_member,
    fill,
    group_ids,
    group_values,
    notebook_user_id,
    partition_of,
    partly,
    placeholder_values,
    placeholders,
    stack_features,
)
from gpucloud.plan.model import PlanFinding
from gpucloud.policy.access import DEPLOYER, Call, Documents, evaluate
from gpucloud.testing import AppliedResource

DATA_BUCKET_POLICY_OUTPUT = "dataBucketPolicyForFileSystem"
ACCESS_CALLS_PATH = Path(__file__).resolve().parents[1] / "data" / "access_calls.json"


def load_calls(path: Path | None = None) -> dict[str, Any] | None:
    """The recorded calls, or None where they have not been recorded yet."""
    path = path or ACCESS_CALLS_PATH
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


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
                             deployer, settings.region)) for entry in calls]
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


def _notebook_policy_arn(settings: StackSettings, partition: str, account: str, group: str) -> str:
    return f"arn:{partition}:iam::{account}:policy/{notebook_user_policy_name(settings.name_base, group)}"


def _call(entry: Mapping[str, Any], principal: str, deployer: str | None = None, region: str | None = None) -> Call:
    """The call as the evaluator takes it; a call that says who AWS sees make it (a service's role,
    another account) is made by that principal, not the actor's. The deployer's calls carry the ARN
    the plan ran as, unless they say otherwise. An S3 call on a bucket of another region than the
    stack's (`region`) passes no gateway endpoint (`_endpoint`)."""
    principal = entry.get("principal") or principal
    context = dict(entry.get("context") or {})
    if principal == DEPLOYER and deployer and not any(key.lower() == "aws:principalarn" for key in context):
        context["aws:PrincipalArn"] = deployer
    return Call(actor=entry["actor"], principal=principal, action=entry["action"], resource=entry["resource"],
                context=context, endpoint=_endpoint(entry, region))


def _endpoint(entry: Mapping[str, Any], region: str | None) -> str | None:
    """The endpoint the call passes: a request to a bucket the S3 gateway endpoint cannot reach goes
    out through the NAT gateway instead, and no endpoint policy sees it."""
    endpoint = entry.get("endpoint")
    bucket = str(entry["resource"]).partition(":::")[2].split("/", 1)[0]
    if endpoint == "s3" and region and bucket and not gateway_endpoint_reaches(partition_of(region), region, bucket):
        return None
    return endpoint


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
        other += _stack_calls(settings, resources, account, {"calls": [partly(call, binding) for call in team]})[0]
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
                                  [partly(call, {"nameBase": f"{settings.name_base}-other"}) for call in person], group)
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
              **group_values(settings, group, group_ids(resources), account)}
    return [as_group_member(call, group) for template in templates for call in fill(template, values)[0]]


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


def _stack_calls(settings: StackSettings, resources: Sequence[AppliedResource], account: str,
                 recorded: Mapping[str, Any]) -> tuple[list[dict[str, Any]], set[str]]:
    """Every recorded call of a feature this stack uses, filled once per value (per group for a
    group's features), without repeats."""
    features = stack_features(settings)
    values = placeholder_values(settings, resources, account)
    ids = group_ids(resources)
    calls: dict[str, dict[str, Any]] = {}
    unfilled: set[str] = set()
    for template in recorded.get("calls", []):
        if template.get("feature") not in features:
            continue
        groups = features[template["feature"]][1]
        person = template.get("actor") == NOTEBOOK_USER
        group_bound = template.get("actor") == "node" or person or bool(PER_GROUP & placeholders(template))
        for group in groups if group_bound else [None]:
            filled, missing = fill(template, {**values, **(group_values(settings, group, ids, account) if group else {})})
            unfilled |= {f"{name} ({template['feature']})" for name in missing}
            for call in ([as_group_member(call, group) for call in filled] if person and group else filled):
                calls.setdefault(json.dumps({k: v for k, v in call.items() if k != "measuredBy"}, sort_keys=True), call)
    return list(calls.values()), unfilled
