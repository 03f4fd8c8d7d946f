"""The policies a plan's resources hold, gathered for the access check (`gpucloud.policy.access`):
each role's identity policies (inline, role policies, attached managed ones), the key, bucket and
topic policies, and each VPC endpoint's policy. Which property of which resource holds a policy is
the review gate's own reading (`gpucloud.policy.rules.iam`)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from functools import cache
from typing import Any

from gpucloud.policy.access import Documents
from gpucloud.policy.resource_types import (
    BUCKET,
    BUCKET_POLICY,
    BUCKET_V2,
    IAM_POLICY,
    IAM_ROLE,
    IAM_ROLE_POLICY,
    KMS_KEY,
    TOPIC,
    TOPIC_POLICY,
    VPC_ENDPOINT,
)
from gpucloud.policy.rules.iam import attached_policy_arns, identity_documents
from gpucloud.testing import AppliedResource

AWS_MANAGED = "AWS managed policy"
_ARN_ACCOUNT = re.compile(r"^arn:[^:]+:[^:]*:[^:]*:(\d{12}):")
_AWS_MANAGED_ARN = re.compile(r"^arn:aws[a-z-]*:iam::aws:policy/(?:.+/)?(?P<name>[^/]+)$")


def plan_account(resources: Iterable[AppliedResource]) -> str | None:
    """The account the plan ran in, from the first role or key ARN."""
    for resource in resources:
        if resource.type in (IAM_ROLE, KMS_KEY):
            found = _ARN_ACCOUNT.match(str(resource.state.get("arn") or ""))
            if found:
                return found.group(1)
    return None


def default_key_policy(partition: str, account: str) -> dict:
    """What KMS gives a key created without a policy: full control to the account, that is, to IAM
    (KMS developer guide, "Default key policy", read 2026-11-28)."""
    return {"Version": "2012-10-17", "Statement": [{
        "Sid": "Enable IAM User Permissions", "Effect": "Allow",
        "Principal": {"AWS": f"arn:{partition}:iam::{account}:root"}, "Action": "kms:*", "Resource": "*"}]}


def collect_documents(resources: Iterable[AppliedResource], partition: str, account: str,
                      holders: Mapping[str, str] | None = None) -> Documents:
    """The plan's policies. `holders`: policy ARN -> the principal the plan takes as holding it (a
    team policy the account attaches to its own people)."""
    custom = [resource for resource in resources if resource.custom]
    role_arns = {str(r.state.get("name")): str(r.state.get("arn")) for r in custom if r.type == IAM_ROLE}
    managed = {str(r.state.get("arn")): named(r.state.get("policy"), f"policy {r.name}")
               for r in custom if r.type == IAM_POLICY}
    identity: dict[str, list[dict]] = {}
    for resource in custom:
        owner = _owner(resource, role_arns)
        if owner is None:
            continue
        for where, document in identity_documents(resource.type, resource.state):
            if document:
                identity.setdefault(owner, []).append(named(document, f"{resource.name} {where}"))
        for policy_arn in attached_policy_arns(resource.type, resource.state):
            document = managed.get(str(policy_arn)) or _aws_managed(str(policy_arn))
            if document:
                identity.setdefault(owner, []).append(document)
    for policy_arn, principal in (holders or {}).items():
        if policy_arn in managed:
            identity.setdefault(principal, []).append(managed[policy_arn])
    return Documents(identity=identity, resource=_resource_policies(custom, partition, account),
                     endpoints=_endpoint_policies(custom), account=account)


def _owner(resource: AppliedResource, role_arns: Mapping[str, str]) -> str | None:
    """The role ARN whose identity a role, role policy or attachment adds to."""
    if resource.type == IAM_ROLE:
        return str(resource.state.get("arn"))
    role = resource.state.get("role")
    if role is None or resource.type == IAM_POLICY:
        return None
    return role_arns.get(str(role), str(role) if str(role).startswith("arn:") else None)


def _resource_policies(custom: list[AppliedResource], partition: str, account: str) -> list[tuple[str, dict]]:
    policies = []
    for resource in custom:
        state, name = resource.state, resource.name
        if resource.type == KMS_KEY:
            document = state.get("policy") or default_key_policy(partition, account)
            policies.append((str(state.get("arn")), named(document, f"key policy of {name}")))
        elif resource.type == BUCKET_POLICY and state.get("policy"):
            policies.append((f"arn:{partition}:s3:::{state.get('bucket')}", named(state["policy"], f"bucket policy {name}")))
        elif resource.type in (BUCKET, BUCKET_V2) and _present(state.get("policy")):
            policies.append((f"arn:{partition}:s3:::{state.get('bucket')}", named(state["policy"], f"bucket policy of {name}")))
        elif resource.type == TOPIC_POLICY and state.get("policy"):
            policies.append((str(state.get("arn")), named(state["policy"], f"topic policy {name}")))
        elif resource.type == TOPIC and _present(state.get("policy")):
            policies.append((str(state.get("arn")), named(state["policy"], f"topic policy of {name}")))
    return policies


def _endpoint_policies(custom: list[AppliedResource]) -> dict[str, dict]:
    """Endpoint service (`s3`, `ecr.api`) -> policy, for each endpoint that has one; one without
    keeps AWS's full-access default and is left out."""
    policies = {}
    for resource in custom:
        if resource.type == VPC_ENDPOINT and _present(resource.state.get("policy")):
            service = str(resource.state.get("serviceName") or "").split(".", 3)[-1]
            policies[service] = named(resource.state["policy"], f"{service} endpoint policy ({resource.name})")
    return policies


def _present(document: Any) -> bool:
    return bool(document) and not (isinstance(document, str) and not document.strip())


def named(document: Any, name: str) -> dict:
    """The document as a dict, its `Id` (the optional policy element) naming where it comes from."""
    body = json.loads(document) if isinstance(document, str) else dict(document)
    return {**body, "Id": name} if isinstance(body, dict) else body


@cache
def _managed_policies() -> dict[str, Any]:
    from moto.iam.aws_managed_policies import aws_managed_policies_data

    return json.loads(aws_managed_policies_data)


def _aws_managed(policy_arn: str) -> dict | None:
    """An AWS managed policy's document, from moto's copy of AWS's policies."""
    found = _AWS_MANAGED_ARN.match(policy_arn)
    data = _managed_policies().get(found["name"]) if found else None
    return named(data["Document"], f"{AWS_MANAGED} {found['name']}") if found and data else None
