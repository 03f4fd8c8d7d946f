"""EncryptionKey: the project's customer-managed KMS key."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pulumi
import pulumi_aws as aws

from gpucloud.documents import key_policy


@dataclass(frozen=True)
class EncryptionKeyArgs:
    project: str
    """What the names AWS wants unique are built from: the project, or for one of several stacks of a
    project in one account, the stack's name base (`gpucloud.naming.name_base`, as ProjectEnvironment passes)."""
    account_id: str
    """The deploying account's id, for the ARNs its policies name."""
    region: str
    """The key's region (its policy lets EC2 and AWS Backup there use it for the account)."""
    user_role_names: Sequence[str]
    """Roles allowed to use the key (matched by ARN, so they may be created after the key)."""
    tags: Mapping[str, str] = field(default_factory=dict)
    """Tags on every resource it creates."""
    partition: str = "aws"
    """The AWS partition of the ARNs it writes (`aws`, `aws-cn`, `aws-us-gov`)."""
    deletion_window_days: int = 30
    """Days KMS waits before deleting the key once it is scheduled for deletion (7 to 30)."""
    log_groups: Sequence[str] = ()
    """Log-group name prefixes whose groups CloudWatch Logs may encrypt with the key (e.g. `/gpu-cloud-vpc/team/`)."""
    prometheus: bool = False
    """The project has a Prometheus workspace: AMP may use the key for it and for alerts to the topic."""
    file_system: bool = False
    """A persistent FSx for Lustre file system is encrypted with the key (FSx uses it through grants)."""
    parameter_arns: Sequence[str] = ()
    """SecureString parameters under the key (the JupyterLab tokens): the account may use the key
    through Parameter Store for those only."""
    topic_publisher_role_names: Sequence[str] = ()
    """Roles that publish to the project's encrypted topic (the job supervisor's)."""
    waits_for: Sequence[pulumi.Resource] = ()
    """What the key policy names that the same program creates (the Auto Scaling service-linked
    role): KMS refuses a policy naming a principal that does not exist yet."""


class EncryptionKey(pulumi.ComponentResource):
    """A KMS key with rotation on, a 30-day deletion window and an alias; protected from deletion."""

    key_arn: pulumi.Output[str]
    """ARN of the key, for volumes, launch templates and IAM policies."""
    key_id: pulumi.Output[str]
    """Key id."""
    alias_name: pulumi.Output[str]
    """`alias/gpu-cloud/<project>`."""

    def __init__(self, name: str, args: EncryptionKeyArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpu-cloud:index:EncryptionKey", name, None, opts)
        self.key = aws.kms.Key(
            f"{name}-key",
            description=f"gpu-cloud {args.project}: EBS volumes and node data",
            enable_key_rotation=True,
            deletion_window_in_days=args.deletion_window_days,
            policy=json.dumps(
                key_policy(args.partition, args.account_id, args.region, args.user_role_names, args.log_groups, args.prometheus,
                           args.file_system, args.parameter_arns, args.topic_publisher_role_names)
            ),
            tags={**args.tags, "Name": f"gpu-cloud-{args.project}"},
            opts=pulumi.ResourceOptions(
                parent=self, protect=True, retain_on_delete=True, depends_on=list(args.waits_for)
            ),
        )
        self.alias = aws.kms.Alias(
            f"{name}-alias",
            name=f"alias/gpu-cloud/{args.project}",
            target_key_id=self.key.key_id,
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.key_arn = self.key.arn
        self.key_id = self.key.key_id
        self.alias_name = self.alias.name
        self.register_outputs({"keyArn": self.key_arn, "keyId": self.key_id, "aliasName": self.alias_name})
