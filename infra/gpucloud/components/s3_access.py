"""S3PrefixAccess: the node's instance role and profile, scoped to S3 prefixes of one bucket."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pulumi
import pulumi_aws as aws

from gpucloud.documents import ec2_assume_role_policy, instance_role_policy
from gpucloud.naming import instance_role_name


@dataclass(frozen=True)
class S3PrefixAccessArgs:
    project: str
    """What the names AWS wants unique are built from: the project, or for one of several stacks of a
    project in one account, the stack's name base (`gpucloud.naming.name_base`, as ProjectEnvironment passes)."""
    account_id: str
    """The deploying account's id, for the ARNs its policies name."""
    region: str
    """The region it is deployed in."""
    kms_key_arn: pulumi.Input[str]
    """The project key the node may use (volumes, parameters, objects)."""
    bucket: str | None = None
    """The data bucket the prefixes are of; none: no S3 data access."""
    read_prefixes: Sequence[str] = ()
    """Prefixes of `bucket` the node may list and read."""
    write_prefixes: Sequence[str] = ()
    """Prefixes of `bucket` the node may also write and delete under."""
    session_manager: bool = True
    """Grant what the SSM agent needs for Session Manager; False when SSH replaces it."""
    group_names: Sequence[str] = ()
    """The stack's Auto Scaling group names: the only groups whose lifecycle and health the node may set."""
    tags: Mapping[str, str] = field(default_factory=dict)
    """Tags on every resource it creates."""
    partition: str = "aws"
    """The AWS partition of the ARNs it writes (`aws`, `aws-cn`, `aws-us-gov`)."""


class S3PrefixAccess(pulumi.ComponentResource):
    """Instance role + profile: S3 read/write by prefix, the project key, SSM and CloudWatch agent."""

    role_arn: pulumi.Output[str]
    """ARN of the node role."""
    role_name: pulumi.Output[str]
    """Name of the node role (fixed: `gpu-cloud-<project>-node`)."""
    instance_profile_arn: pulumi.Output[str]
    """ARN of the instance profile that launch templates use."""
    instance_profile_name: pulumi.Output[str]
    """Name of the instance profile."""

    def __init__(self, name: str, args: S3PrefixAccessArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpu-cloud:index:S3PrefixAccess", name, None, opts)
        role_name = instance_role_name(args.project)
        self.role = aws.iam.Role(
            f"{name}-role",
            name=role_name,
            description=f"gpu-cloud {args.project}: GPU nodes",
            assume_role_policy=json.dumps(ec2_assume_role_policy()),
            max_session_duration=3600,
            tags={**args.tags, "Name": role_name},
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.policy = aws.iam.RolePolicy(
            f"{name}-policy",
            role=self.role.name,
            name="gpu-cloud-node-access",
            policy=pulumi.Output.from_input(args.kms_key_arn).apply(
                lambda key_arn: json.dumps(
                    instance_role_policy(
                        partition=args.partition,
                        region=args.region,
                        account_id=args.account_id,
                        project=args.project,
                        key_arn=key_arn,
                        bucket=args.bucket,
                        read_prefixes=args.read_prefixes,
                        write_prefixes=args.write_prefixes,
                        session_manager=args.session_manager,
                        group_names=args.group_names,
                    )
                )
            ),
            opts=pulumi.ResourceOptions(parent=self.role),
        )
        self.instance_profile = aws.iam.InstanceProfile(
            f"{name}-profile",
            name=role_name,
            role=self.role.name,
            tags={**args.tags, "Name": role_name},
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.role_arn = self.role.arn
        self.role_name = self.role.name
        self.instance_profile_arn = self.instance_profile.arn
        self.instance_profile_name = self.instance_profile.name
        self.register_outputs(
            {
                "roleArn": self.role_arn,
                "roleName": self.role_name,
                "instanceProfileArn": self.instance_profile_arn,
                "instanceProfileName": self.instance_profile_name,
            }
        )
