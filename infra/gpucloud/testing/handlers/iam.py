"""IAM roles, inline role policies, managed policies and instance profiles."""

from __future__ import annotations

import functools
import json
import re
from typing import Any

from gpucloud.testing.registry import Account, Created, ResourceRequest, aws_tags, drop_none, refused, resource


@resource("aws:iam/role:Role")
def create_role(account: Account, request: ResourceRequest) -> Created:
    inputs = request.inputs
    name = request.physical_name()
    role = account.client("iam").create_role(
        **drop_none(
            {
                "RoleName": name,
                "Path": inputs.get("path", "/"),
                "AssumeRolePolicyDocument": inputs["assumeRolePolicy"],
                "Description": inputs.get("description"),
                "MaxSessionDuration": inputs.get("maxSessionDuration"),
                "Tags": aws_tags(inputs.get("tags")),
            }
        )
    )["Role"]
    return Created(id=name, outputs={"arn": role["Arn"], "name": name, "uniqueId": role["RoleId"]})


ROLE_INLINE_POLICIES_LIMIT = 10_240
"""IAM user guide, "IAM and AWS STS quotas": a role's inline policies together take at most 10,240
characters, white space not counted (read 2026-11-25); moto takes any size."""


def _inline_policies_size(account: Account, role: str, replacing: str, document: str) -> int:
    """What IAM counts for the role once `document` is its policy `replacing`."""
    iam = account.client("iam")
    others = [
        json.dumps(iam.get_role_policy(RoleName=role, PolicyName=name)["PolicyDocument"])
        for name in iam.list_role_policies(RoleName=role)["PolicyNames"]
        if name != replacing
    ]
    return sum(len(re.sub(r"\s", "", text)) for text in [*others, document])


@resource("aws:iam/rolePolicy:RolePolicy")
def put_role_policy(account: Account, request: ResourceRequest) -> Created:
    name = request.physical_name()
    role = request.inputs["role"]
    size = _inline_policies_size(account, role, name, request.inputs["policy"])
    if size > ROLE_INLINE_POLICIES_LIMIT:
        raise refused(
            "PutRolePolicy", "LimitExceeded",
            f"Maximum policy size of {ROLE_INLINE_POLICIES_LIMIT} bytes exceeded for role {role} ({size} with {name})",
        )
    account.client("iam").put_role_policy(RoleName=role, PolicyName=name, PolicyDocument=request.inputs["policy"])
    return Created(id=f"{role}:{name}", outputs={"name": name})


@resource("aws:iam/instanceProfile:InstanceProfile")
def create_instance_profile(account: Account, request: ResourceRequest) -> Created:
    iam = account.client("iam")
    name = request.physical_name()
    profile = iam.create_instance_profile(
        **drop_none({"InstanceProfileName": name, "Tags": aws_tags(request.inputs.get("tags"))})
    )["InstanceProfile"]
    if request.inputs.get("role"):
        iam.add_role_to_instance_profile(InstanceProfileName=name, RoleName=request.inputs["role"])
    return Created(id=name, outputs={"arn": profile["Arn"], "name": name, "uniqueId": profile["InstanceProfileId"]})


@resource("aws:iam/policy:Policy")
def create_policy(account: Account, request: ResourceRequest) -> Created:
    inputs = request.inputs
    name = request.physical_name()
    policy = account.client("iam").create_policy(
        **drop_none(
            {
                "PolicyName": name,
                "Path": inputs.get("path", "/"),
                "PolicyDocument": inputs["policy"],
                "Description": inputs.get("description"),
                "Tags": aws_tags(inputs.get("tags")),
            }
        )
    )["Policy"]
    return Created(id=policy["Arn"], outputs={"arn": policy["Arn"], "name": name, "policyId": policy["PolicyId"]})


@functools.cache
def _aws_managed_policies() -> dict[str, Any]:
    """moto's copy of AWS's managed policies, parsed once per process (a megabyte of JSON that every
    deployment attaching one would parse again)."""
    from moto.iam.aws_managed_policies import aws_managed_policies_data

    return json.loads(aws_managed_policies_data)


def _publish_aws_managed_policy(account: Account, policy_arn: str) -> None:
    """moto loads AWS managed policies only with a slow global setting; publish just the one asked
    for, from moto's own copy of AWS's policies, so unknown ARNs still fail as AWS would."""
    from moto.iam.models import AWSManagedPolicy, iam_backends

    name = policy_arn.rsplit("/", 1)[-1]
    if not policy_arn.startswith("arn:aws:iam::aws:policy/"):
        return
    backend = iam_backends[account.account_id]["global"]
    if policy_arn in backend.managed_policies:
        return
    data = _aws_managed_policies().get(name)
    if data:
        policy = AWSManagedPolicy.from_data(name, account.account_id, "us-east-1", data)
        backend.managed_policies[policy.arn] = policy


@resource("aws:iam/rolePolicyAttachment:RolePolicyAttachment")
def attach_role_policy(account: Account, request: ResourceRequest) -> Created:
    role, policy_arn = request.inputs["role"], request.inputs["policyArn"]
    _publish_aws_managed_policy(account, policy_arn)
    account.client("iam").attach_role_policy(RoleName=role, PolicyArn=policy_arn)
    return Created(id=f"{role}-{policy_arn}")


@resource("aws:iam/serviceLinkedRole:ServiceLinkedRole")
def create_service_linked_role(account: Account, request: ResourceRequest) -> Created:
    inputs = request.inputs
    role = account.client("iam").create_service_linked_role(
        **drop_none(
            {
                "AWSServiceName": inputs["awsServiceName"],
                "Description": inputs.get("description"),
                "CustomSuffix": inputs.get("customSuffix"),
            }
        )
    )["Role"]
    if inputs.get("tags"):
        account.client("iam").tag_role(RoleName=role["RoleName"], Tags=aws_tags(inputs["tags"]))
    return Created(
        id=role["Arn"],
        outputs={"arn": role["Arn"], "name": role["RoleName"], "path": role["Path"], "uniqueId": role["RoleId"]},
    )
