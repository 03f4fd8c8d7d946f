"""VolumeBackup: daily AWS Backup of a project's tagged volumes into a vault under the project key."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field

import pulumi
import pulumi_aws as aws

from gpucloud.components.encrypted_volume import BACKUP_TAG
from gpucloud.documents import backup_assume_role_policy
from gpucloud.naming import backup_name, backup_role_name

BACKUP_SERVICE_POLICY = "arn:{partition}:iam::aws:policy/service-role/AWSBackupServiceRolePolicyForBackup"
DAILY_AT_3_UTC = "cron(0 3 * * ? *)"


@dataclass(frozen=True)
class VolumeBackupArgs:
    project: str
    """What the names AWS wants unique are built from: the project, or for one of several stacks of a
    project in one account, the stack's name base (`gpucloud.naming.name_base`, as ProjectEnvironment passes)."""
    kms_key_arn: pulumi.Input[str]
    """The key the backup vault encrypts recovery points with."""
    retention_days: int = 7
    """Days each daily recovery point is kept."""
    partition: str = "aws"
    """The AWS partition of the ARNs it writes (`aws`, `aws-cn`, `aws-us-gov`)."""
    tags: Mapping[str, str] = field(default_factory=dict)
    """Tags on every resource it creates."""


class VolumeBackup(pulumi.ComponentResource):
    """Backs up every volume tagged `gpu-cloud:backup=<project>` daily, kept `retention_days`.

    The vault is encrypted with the project key and, like the key, protected and retained:
    recovery points must outlive the stack that made them.
    """

    vault_name: pulumi.Output[str]
    """The backup vault."""
    plan_id: pulumi.Output[str]
    """The backup plan."""

    def __init__(self, name: str, args: VolumeBackupArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpu-cloud:index:VolumeBackup", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        name_of_all = backup_name(args.project)
        vault_name = name_of_all
        self.vault = aws.backup.Vault(
            f"{name}-vault",
            name=vault_name,
            kms_key_arn=args.kms_key_arn,
            tags={**args.tags, "Name": vault_name},
            opts=pulumi.ResourceOptions(parent=self, protect=True, retain_on_delete=True),
        )
        self.plan = aws.backup.Plan(
            f"{name}-plan",
            name=name_of_all,
            rules=[
                {
                    "rule_name": "daily",
                    "target_vault_name": self.vault.name,
                    "schedule": DAILY_AT_3_UTC,
                    "start_window": 60,
                    "completion_window": 360,
                    "lifecycle": {"delete_after": args.retention_days},
                    "recovery_point_tags": dict(args.tags),
                }
            ],
            tags=dict(args.tags),
            opts=child,
        )
        role_name = backup_role_name(args.project)
        self.role = aws.iam.Role(
            f"{name}-role",
            name=role_name,
            description=f"gpu-cloud {args.project}: AWS Backup of persistent volumes",
            assume_role_policy=json.dumps(backup_assume_role_policy()),
            tags={**args.tags, "Name": role_name},
            opts=child,
        )
        aws.iam.RolePolicyAttachment(
            f"{name}-role-backup",
            role=self.role.name,
            policy_arn=BACKUP_SERVICE_POLICY.format(partition=args.partition),
            opts=pulumi.ResourceOptions(parent=self.role),
        )
        self.selection = aws.backup.Selection(
            f"{name}-selection",
            name=name_of_all,
            plan_id=self.plan.id,
            iam_role_arn=self.role.arn,
            selection_tags=[{"type": "STRINGEQUALS", "key": BACKUP_TAG, "value": args.project}],
            opts=child,
        )
        self.vault_name = self.vault.name
        self.plan_id = self.plan.id
        self.register_outputs({"vaultName": self.vault_name, "planId": self.plan_id})
