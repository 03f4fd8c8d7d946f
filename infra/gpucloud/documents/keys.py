"""The project key's policy: who administers the key, who uses it directly, and who only through
AWS services."""

from __future__ import annotations

from collections.abc import Sequence

from gpucloud.documents.services import TOPIC_PUBLISHERS, Document
from gpucloud.naming import autoscaling_service_role_arn, role_arn

KEY_USE_ACTIONS = ["kms:Decrypt", "kms:DescribeKey", "kms:Encrypt", "kms:GenerateDataKey*", "kms:ReEncrypt*"]
KEY_ADMIN_ACTIONS = [
    "kms:CancelKeyDeletion",
    "kms:CreateAlias",
    "kms:DeleteAlias",
    "kms:DescribeKey",
    "kms:DisableKey",
    "kms:DisableKeyRotation",
    "kms:EnableKey",
    "kms:EnableKeyRotation",
    "kms:GetKeyPolicy",
    "kms:GetKeyRotationStatus",
    "kms:ListGrants",
    "kms:ListKeyPolicies",
    "kms:ListKeyRotations",
    "kms:ListResourceTags",
    "kms:PutKeyPolicy",
    "kms:RevokeGrant",
    "kms:RotateKeyOnDemand",
    "kms:ScheduleKeyDeletion",
    "kms:TagResource",
    "kms:UntagResource",
    "kms:UpdateAlias",
    "kms:UpdateKeyDescription",
]
"""Administering a symmetric key, action by action: no `kms:Create*`, which also grants
kms:CreateGrant (a grant lets its grantee use the key), and none of the import, asymmetric or
multi-Region actions a `Get*`/`Update*`/`Delete*` would add (Service Authorization Reference,
"Actions, resources, and condition keys for AWS Key Management Service", read 2026-11-25).
kms:PutKeyPolicy stays: KMS refuses a key policy that would not let its creator change it later
(KMS API reference, CreateKey, `BypassPolicyLockoutSafetyCheck`)."""


KEY_USE_THROUGH_SERVICES_ACTIONS = [
    "kms:Decrypt",
    "kms:DescribeKey",
    "kms:GenerateDataKey*",
    "kms:ReEncrypt*",
    "kms:RetireGrant",
]
"""What the principal running `pulumi up` needs to create an encrypted EBS volume (EBS user guide,
"Requirements for Amazon EBS encryption") and a backup vault (AWS Backup developer guide, "Backup
vault creation and deletion") under the key; both pages read on 2026-11-23. S3 makes the same calls
for whoever uploads the agent bundle to the SSE-KMS artifacts bucket (S3 user guide, "Using
server-side encryption with AWS KMS keys": the uploader needs kms:GenerateDataKey, and kms:Decrypt
to read it back; read 2026-11-24). kms:CreateGrant has a statement of its own, held to grants for
AWS resources: `kms:GrantIsForAWSResource` is absent from every other request, so it cannot join
these."""


def key_policy(
    partition: str,
    account_id: str,
    region: str,
    user_role_names: Sequence[str],
    log_groups: Sequence[str] = (),
    prometheus: bool = False,
    file_system: bool = False,
    parameter_arns: Sequence[str] = (),
    topic_publisher_role_names: Sequence[str] = (),
) -> Document:
    """Key policy: the account administers the key; only the named roles and Auto Scaling use it
    directly, and the account's principals use it only through EC2, AWS Backup and S3.

    In a key policy `Resource: "*"` means "this key". The instance roles are matched on
    `aws:PrincipalArn` under the account principal, so the key can be created before the roles;
    the Auto Scaling service-linked role is named directly, as EBS encryption at launch requires.
    Whoever runs `pulumi up` creates the persistent volumes, the backup vault and the agent bundle
    object, and EC2, Backup and S3 make KMS calls on their behalf: the statement for that is AWS's
    own `aws/ebs` key policy, held to those services in this region and to callers of this account
    (they still need an IAM policy that allows it). Nobody but the named roles can decrypt with the key directly.

    With `prometheus`, Amazon Managed Service for Prometheus joins those services (a workspace
    encrypted with the key: AMP works under grants its creator makes through it, the pattern of
    the KMS developer guide's "Permissions for AWS services in key policies"), and AMP's alert
    manager may encrypt what it publishes to the project's SNS topic (AMP user guide, "Troubleshoot
    alert manager with CloudWatch Logs": without kms:GenerateDataKey* and kms:Decrypt for
    aps.amazonaws.com every notification fails with "AMP is not authorized to call KMS"; read
    2026-11-25). `log_groups` are name prefixes whose groups CloudWatch Logs may encrypt.

    With `file_system` (a persistent `storage.lustre`), FSx joins those services: it encrypts the
    file system under grants its creator makes through fsx.<region> (FSx for Lustre user guide,
    "Encrypting data at rest", read 2026-11-25).

    With `topic_publisher_role_names` (the job supervisor's role), those roles may use the key
    through SNS, which the project's alerts topic is encrypted with: a publisher to an encrypted
    topic needs kms:GenerateDataKey and kms:Decrypt, the key policy's too (SNS developer guide,
    "Configuring AWS KMS permissions"; read 2026-11-28).

    With `parameter_arns` (the JupyterLab token parameters), the account's principals may also
    encrypt and decrypt through Parameter Store, for those parameters only
    (`parameter_store_statement`).
    """
    root = f"arn:{partition}:iam::{account_id}:root"
    user_arns = [role_arn(partition, account_id, name) for name in user_role_names]
    autoscaling = autoscaling_service_role_arn(partition, account_id)
    through_services = {
        "Sid": "AccountUsesKeyOnlyThroughAwsServices",
        "Effect": "Allow",
        "Principal": {"AWS": root},
        "Action": KEY_USE_THROUGH_SERVICES_ACTIONS,
        "Resource": "*",
        "Condition": {
            "StringEquals": {
                "kms:CallerAccount": account_id,
                "kms:ViaService": [
                    f"ec2.{region}.amazonaws.com",
                    f"backup.{region}.amazonaws.com",
                    f"s3.{region}.amazonaws.com",
                    *([f"aps.{region}.amazonaws.com"] if prometheus else []),
                    *([f"fsx.{region}.amazonaws.com"] if file_system else []),
                ],
            }
        },
    }
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "AccountAdministersKey",
                "Effect": "Allow",
                "Principal": {"AWS": root},
                "Action": KEY_ADMIN_ACTIONS,
                "Resource": "*",
            },
            {
                "Sid": "ProjectInstanceRolesUseKey",
                "Effect": "Allow",
                "Principal": {"AWS": root},
                "Action": KEY_USE_ACTIONS,
                "Resource": "*",
                "Condition": {"ArnEquals": {"aws:PrincipalArn": user_arns}},
            },
            {
                "Sid": "ProjectInstanceRolesAttachEncryptedVolumes",
                "Effect": "Allow",
                "Principal": {"AWS": root},
                "Action": "kms:CreateGrant",
                "Resource": "*",
                "Condition": {
                    "ArnEquals": {"aws:PrincipalArn": user_arns},
                    "Bool": {"kms:GrantIsForAWSResource": "true"},
                },
            },
            through_services,
            {
                "Sid": "AccountGrantsOnlyForAwsResourcesThroughAwsServices",
                "Effect": "Allow",
                "Principal": {"AWS": root},
                "Action": "kms:CreateGrant",
                "Resource": "*",
                "Condition": {
                    **through_services["Condition"],
                    "Bool": {"kms:GrantIsForAWSResource": "true"},
                },
            },
            {
                "Sid": "AutoScalingLaunchesEncryptedVolumes",
                "Effect": "Allow",
                "Principal": {"AWS": autoscaling},
                "Action": KEY_USE_ACTIONS,
                "Resource": "*",
            },
            {
                "Sid": "AlarmAndBudgetServicesPublishToEncryptedTopic",
                "Effect": "Allow",
                "Principal": {"Service": list(TOPIC_PUBLISHERS) + (["aps.amazonaws.com"] if prometheus else [])},
                "Action": ["kms:Decrypt", "kms:GenerateDataKey*"],
                "Resource": "*",
                "Condition": {"StringEquals": {"aws:SourceAccount": account_id}},
            },
            {
                "Sid": "AutoScalingAttachesEncryptedVolumes",
                "Effect": "Allow",
                "Principal": {"AWS": autoscaling},
                "Action": "kms:CreateGrant",
                "Resource": "*",
                "Condition": {"Bool": {"kms:GrantIsForAWSResource": "true"}},
            },
            *([parameter_store_statement(root, account_id, region, parameter_arns)] if parameter_arns else []),
            *([{
                "Sid": "ProjectRolesPublishToEncryptedTopic",
                "Effect": "Allow",
                "Principal": {"AWS": root},
                "Action": ["kms:Decrypt", "kms:GenerateDataKey"],
                "Resource": "*",
                "Condition": {
                    "StringEquals": {"kms:CallerAccount": account_id, "kms:ViaService": f"sns.{region}.amazonaws.com"},
                    "ArnEquals": {"aws:PrincipalArn": [role_arn(partition, account_id, name)
                                                       for name in topic_publisher_role_names]},
                },
            }] if topic_publisher_role_names else []),
            *([{
                "Sid": "CloudWatchLogsEncryptsProjectLogGroups",
                "Effect": "Allow",
                "Principal": {"Service": f"logs.{region}.amazonaws.com"},
                "Action": ["kms:Decrypt*", "kms:Describe*", "kms:Encrypt*", "kms:GenerateDataKey*", "kms:ReEncrypt*"],
                "Resource": "*",
                "Condition": {"ArnLike": {"kms:EncryptionContext:aws:logs:arn": [
                    f"arn:{partition}:logs:{region}:{account_id}:log-group:{prefix}*" for prefix in log_groups
                ]}},
            }] if log_groups else []),
        ],
    }


PARAMETER_STORE_ACTIONS = ["kms:Decrypt", "kms:Encrypt"]
"""What Parameter Store asks KMS for a standard SecureString, with the caller's credentials: Encrypt
when the value is put (`pulumi up` creating the parameter, the node writing its token), Decrypt
when it is read with decryption (the provider reads it back right after creating it,
terraform-provider-aws `internal/service/ssm/parameter.go`; a person runs the `aws ssm
get-parameter --with-decryption` that `gpucloud connect` prints). Standard parameters are
encrypted directly under the key, no data key (KMS developer guide, "How AWS Systems Manager
Parameter Store uses AWS KMS", read 2026-11-28)."""


def parameter_store_statement(root: str, account_id: str, region: str, parameter_arns: Sequence[str]) -> Document:
    """The account's principals use the key through Parameter Store in this region, and only for
    the named parameters: Parameter Store passes the parameter's ARN as the encryption context
    `PARAMETER_ARN` on every Encrypt and Decrypt (same KMS page, "Encryption context"), so
    `kms:EncryptionContext:PARAMETER_ARN` holds the statement to them. A caller still needs an
    identity policy allowing ssm:PutParameter or ssm:GetParameter on the parameter and the KMS
    action on the key."""
    return {
        "Sid": "AccountUsesKeyForStackParametersOnlyThroughParameterStore",
        "Effect": "Allow",
        "Principal": {"AWS": root},
        "Action": PARAMETER_STORE_ACTIONS,
        "Resource": "*",
        "Condition": {
            "StringEquals": {
                "kms:CallerAccount": account_id,
                "kms:ViaService": f"ssm.{region}.amazonaws.com",
                "kms:EncryptionContext:PARAMETER_ARN": sorted(parameter_arns),
            }
        },
    }
