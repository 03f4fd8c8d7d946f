"""IAM and KMS policy documents as small pure functions, so they are tested without any engine.

`Resource: "*"` appears only where AWS offers no resource-level permission for the action; each
such statement says so in its Sid.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gpucloud.naming import (
    AGENT_BUNDLE_PREFIX,
    NODE_METRICS_NAMESPACE,
    STACK_TAG,
    artifacts_bucket_name,
    autoscaling_group_name,
    autoscaling_service_role_arn,
    log_group_prefix,
    role_arn,
)

Document = dict[str, Any]

KEY_USE_ACTIONS = ["kms:Decrypt", "kms:DescribeKey", "kms:Encrypt", "kms:GenerateDataKey*", "kms:ReEncrypt*"]
KEY_ADMIN_ACTIONS = [
    "kms:CancelKeyDeletion",
    "kms:Create*",
    "kms:Delete*",
    "kms:Describe*",
    "kms:Disable*",
    "kms:Enable*",
    "kms:Get*",
    "kms:List*",
    "kms:Put*",
    "kms:Revoke*",
    "kms:RotateKeyOnDemand",
    "kms:ScheduleKeyDeletion",
    "kms:TagResource",
    "kms:UntagResource",
    "kms:Update*",
]


def backup_assume_role_policy() -> Document:
    return {
        "Version": "2012-10-17",
        "Statement": [
            {"Effect": "Allow", "Principal": {"Service": "backup.amazonaws.com"}, "Action": "sts:AssumeRole"}
        ],
    }


TOPIC_PUBLISHERS = ("cloudwatch.amazonaws.com", "budgets.amazonaws.com")
"""The services that publish alarms and budget alerts to the project's topic."""

KEY_USE_THROUGH_SERVICES_ACTIONS = [
    "kms:CreateGrant",
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
to read it back; read 2026-11-24)."""


def key_policy(
    partition: str,
    account_id: str,
    region: str,
    user_role_names: Sequence[str],
    log_groups: Sequence[str] = (),
    prometheus: bool = False,
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
    """
    root = f"arn:{partition}:iam::{account_id}:root"
    user_arns = [role_arn(partition, account_id, name) for name in user_role_names]
    autoscaling = autoscaling_service_role_arn(partition, account_id)
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
            {
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
                        ],
                    }
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


def ec2_assume_role_policy() -> Document:
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Service": "ec2.amazonaws.com"},
                "Action": "sts:AssumeRole",
            }
        ],
    }


def s3_prefix_statements(partition: str, bucket: str, read_prefixes: Sequence[str], write_prefixes: Sequence[str]) -> list[Document]:
    """Read on read prefixes, read/write on write prefixes, listing only under those prefixes."""
    bucket_arn = f"arn:{partition}:s3:::{bucket}"
    readable = sorted(set(read_prefixes) | set(write_prefixes))
    statements: list[Document] = [
        {
            "Sid": "ListOnlyGrantedPrefixes",
            "Effect": "Allow",
            "Action": "s3:ListBucket",
            "Resource": bucket_arn,
            "Condition": {"StringLike": {"s3:prefix": [f"{prefix}*" for prefix in readable]}},
        },
        {
            "Sid": "ReadGrantedPrefixes",
            "Effect": "Allow",
            "Action": ["s3:GetObject", "s3:GetObjectTagging", "s3:GetObjectVersion"],
            "Resource": [f"{bucket_arn}/{prefix}*" for prefix in readable],
        },
    ]
    if write_prefixes:
        statements.append(
            {
                "Sid": "WriteGrantedPrefixes",
                "Effect": "Allow",
                "Action": [
                    "s3:AbortMultipartUpload",
                    "s3:DeleteObject",
                    "s3:ListMultipartUploadParts",
                    "s3:PutObject",
                    "s3:PutObjectTagging",
                ],
                "Resource": [f"{bucket_arn}/{prefix}*" for prefix in sorted(write_prefixes)],
            }
        )
    return statements


def node_statements(
    partition: str, region: str, account_id: str, project: str, key_arn: str, session_manager: bool = True
) -> list[Document]:
    """What the node needs besides data: the agent bundle, the project key, Session Manager (unless
    SSH replaces it), the CloudWatch agent, its own Auto Scaling lifecycle, and attaching the
    group's persistent volume."""
    instances = f"arn:{partition}:ec2:{region}:{account_id}:instance/*"
    volumes = f"arn:{partition}:ec2:{region}:{account_id}:volume/*"
    groups = (
        f"arn:{partition}:autoscaling:{region}:{account_id}:autoScalingGroup:*:"
        f"autoScalingGroupName/{autoscaling_group_name(project, '')}*"
    )
    log_groups = f"arn:{partition}:logs:{region}:{account_id}:log-group:{log_group_prefix(project)}*"
    own_stack = {"StringEquals": {f"aws:ResourceTag/{STACK_TAG}": project}}
    statements = [
        {
            "Sid": "FetchAgentBundle",
            "Effect": "Allow",
            "Action": "s3:GetObject",
            "Resource": f"arn:{partition}:s3:::{artifacts_bucket_name(project, account_id)}/{AGENT_BUNDLE_PREFIX}*",
        },
        {"Sid": "UseProjectKey", "Effect": "Allow", "Action": KEY_USE_ACTIONS, "Resource": key_arn},
        {
            "Sid": "AttachEncryptedVolumesWithProjectKey",
            "Effect": "Allow",
            "Action": "kms:CreateGrant",
            "Resource": key_arn,
            "Condition": {"Bool": {"kms:GrantIsForAWSResource": "true"}},
        },
        {
            "Sid": "SessionManagerRegistersOwnInstance",
            "Effect": "Allow",
            "Action": "ssm:UpdateInstanceInformation",
            "Resource": instances,
        },
        {
            "Sid": "SessionManagerChannelsHaveNoResourceLevelPermissions",
            "Effect": "Allow",
            "Action": [
                "ec2messages:AcknowledgeMessage",
                "ec2messages:DeleteMessage",
                "ec2messages:FailMessage",
                "ec2messages:GetEndpoint",
                "ec2messages:GetMessages",
                "ec2messages:SendReply",
                "ssmmessages:CreateControlChannel",
                "ssmmessages:CreateDataChannel",
                "ssmmessages:OpenControlChannel",
                "ssmmessages:OpenDataChannel",
            ],
            "Resource": "*",
        },
        {
            "Sid": "CloudWatchAgentMetricsHaveNoResourceLevelPermissions",
            "Effect": "Allow",
            "Action": "cloudwatch:PutMetricData",
            "Resource": "*",
            "Condition": {"StringEquals": {"cloudwatch:namespace": ["CWAgent", NODE_METRICS_NAMESPACE]}},
        },
        {
            "Sid": "ReplacementCountReadsHaveNoResourceLevelPermissions",
            "Effect": "Allow",
            "Action": "cloudwatch:GetMetricStatistics",
            "Resource": "*",
        },
        {
            "Sid": "DescribeCallsHaveNoResourceLevelPermissions",
            "Effect": "Allow",
            "Action": [
                "autoscaling:DescribeAutoScalingInstances",
                "autoscaling:DescribeLifecycleHooks",
                "ec2:DescribeInstances",
                "ec2:DescribeTags",
                "ec2:DescribeVolumes",
            ],
            "Resource": "*",
        },
        {
            "Sid": "CloudWatchAgentLogsUnderProjectPrefix",
            "Effect": "Allow",
            "Action": ["logs:CreateLogGroup", "logs:CreateLogStream", "logs:DescribeLogStreams", "logs:PutLogEvents"],
            "Resource": [log_groups, f"{log_groups}:log-stream:*"],
        },
        {
            "Sid": "NodeCompletesOwnLifecycle",
            "Effect": "Allow",
            "Action": [
                "autoscaling:CompleteLifecycleAction",
                "autoscaling:RecordLifecycleActionHeartbeat",
                "autoscaling:SetInstanceHealth",
            ],
            "Resource": groups,
        },
        {
            "Sid": "NodeAttachesProjectPersistentVolume",
            "Effect": "Allow",
            "Action": "ec2:AttachVolume",
            "Resource": [instances, volumes],
            "Condition": own_stack,
        },
    ]
    if not session_manager:
        statements = [s for s in statements if not s["Sid"].startswith("SessionManager")]
    return statements


def instance_role_policy(
    *,
    partition: str,
    region: str,
    account_id: str,
    project: str,
    key_arn: str,
    bucket: str | None,
    read_prefixes: Sequence[str],
    write_prefixes: Sequence[str],
    session_manager: bool = True,
) -> Document:
    statements = node_statements(partition, region, account_id, project, key_arn, session_manager)
    if bucket:
        statements = s3_prefix_statements(partition, bucket, read_prefixes, write_prefixes) + statements
    return {"Version": "2012-10-17", "Statement": statements}


def artifacts_bucket_policy(bucket_arn: str, readers: Sequence[str]) -> Document:
    """TLS only, and objects readable by the named principals only (the node roles and whoever
    runs `pulumi up`), whatever identity policies elsewhere in the account allow.

    `aws:SecureTransport` false denies plain HTTP (S3 user guide, "Security best practices for
    Amazon S3": enforce encryption of data in transit); `aws:PrincipalArn` is a role's ARN, not its
    session's, for assumed-role callers (IAM user guide, "AWS global condition context keys"). Both
    pages read 2026-11-24."""
    objects = f"{bucket_arn}/*"
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "DenyWithoutTls",
                "Effect": "Deny",
                "Principal": "*",
                "Action": "s3:*",
                "Resource": [bucket_arn, objects],
                "Condition": {"Bool": {"aws:SecureTransport": "false"}},
            },
            {
                "Sid": "ObjectsReadableOnlyByNodeRolesAndDeployer",
                "Effect": "Deny",
                "Principal": "*",
                "Action": ["s3:GetObject", "s3:GetObjectVersion"],
                "Resource": objects,
                "Condition": {"ArnNotEquals": {"aws:PrincipalArn": sorted(set(readers))}},
            },
        ],
    }


def alerts_topic_policy(topic_arn: str, account_id: str, prometheus_workspace_arn: str | None = None) -> Document:
    """Only CloudWatch alarms and AWS Budgets of this account may publish to the alerts topic, and
    the project's Prometheus workspace when it has one: AMP's alert manager needs sns:Publish and
    sns:GetTopicAttributes on the topic, held here to that one workspace by `aws:SourceArn`
    (AMP user guide, "Give Amazon Managed Service for Prometheus permission to send alert messages
    to your Amazon SNS topic", and its troubleshooting page's "No resource based policy" error;
    read 2026-11-25)."""
    statements: list[Document] = [
        {
            "Sid": "AlarmsAndBudgetsOfThisAccountPublish",
            "Effect": "Allow",
            "Principal": {"Service": list(TOPIC_PUBLISHERS)},
            "Action": "sns:Publish",
            "Resource": topic_arn,
            "Condition": {"StringEquals": {"aws:SourceAccount": account_id}},
        }
    ]
    if prometheus_workspace_arn:
        statements.append({
            "Sid": "ProjectPrometheusWorkspacePublishes",
            "Effect": "Allow",
            "Principal": {"Service": "aps.amazonaws.com"},
            "Action": ["sns:Publish", "sns:GetTopicAttributes"],
            "Resource": topic_arn,
            "Condition": {
                "StringEquals": {"aws:SourceAccount": account_id},
                "ArnEquals": {"aws:SourceArn": prometheus_workspace_arn},
            },
        })
    return {"Version": "2012-10-17", "Statement": statements}


def prometheus_remote_write_policy(workspace_arn: str) -> Document:
    """The node role's one Prometheus permission: remote write to the project's workspace
    (aps:RemoteWrite, "perform a remote write operation", AMP user guide "IAM permissions and
    policies"; read 2026-11-25)."""
    return {
        "Version": "2012-10-17",
        "Statement": [
            {"Sid": "RemoteWriteToProjectWorkspace", "Effect": "Allow", "Action": "aps:RemoteWrite", "Resource": workspace_arn}
        ],
    }


def grafana_assume_role_policy(partition: str, region: str, account_id: str) -> Document:
    """The Grafana workspace's own role: a workspace created through the API must be
    CUSTOMER_MANAGED and name a role it assumes (Managed Grafana API reference, CreateWorkspace
    `permissionType`; read 2026-11-25). Held to Managed Grafana workspaces of this account and
    region, the confused-deputy guard of the IAM user guide."""
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Service": "grafana.amazonaws.com"},
                "Action": "sts:AssumeRole",
                "Condition": {
                    "StringEquals": {"aws:SourceAccount": account_id},
                    "ArnLike": {"aws:SourceArn": f"arn:{partition}:grafana:{region}:{account_id}:/workspaces/*"},
                },
            }
        ],
    }


PROMETHEUS_QUERY_ACTIONS = ["aps:GetLabels", "aps:GetMetricMetadata", "aps:GetSeries", "aps:QueryMetrics"]
"""What a reader of a workspace needs: AWS's AmazonPrometheusQueryAccess managed policy grants
these four (AWS Managed Policy reference, read 2026-11-25); here they are held to one workspace."""


def grafana_workspace_policy(workspace_arn: str) -> Document:
    """Grafana reads the project's Prometheus workspace and nothing else."""
    return {
        "Version": "2012-10-17",
        "Statement": [
            {"Sid": "QueryProjectPrometheus", "Effect": "Allow", "Action": PROMETHEUS_QUERY_ACTIONS, "Resource": workspace_arn},
        ],
    }


def flow_logs_assume_role_policy(partition: str, region: str, account_id: str) -> Document:
    """VPC flow logs assume the role only for this account's flow logs (confused deputy guard,
    VPC user guide, "IAM role for publishing flow logs to CloudWatch Logs", read 2026-11-24)."""
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Service": "vpc-flow-logs.amazonaws.com"},
                "Action": "sts:AssumeRole",
                "Condition": {
                    "StringEquals": {"aws:SourceAccount": account_id},
                    "ArnLike": {"aws:SourceArn": f"arn:{partition}:ec2:{region}:{account_id}:vpc-flow-log/*"},
                },
            }
        ],
    }


def flow_logs_role_policy(log_group_arn: str) -> Document:
    """Write to the one flow log group; `logs:DescribeLogGroups` has no resource-level permission."""
    group = log_group_arn.removesuffix(":*")
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "WriteFlowLogGroup",
                "Effect": "Allow",
                "Action": ["logs:CreateLogStream", "logs:DescribeLogStreams", "logs:PutLogEvents"],
                "Resource": [group, f"{group}:log-stream:*"],
            },
            {
                "Sid": "DescribeLogGroupsHasNoResourceLevelPermissions",
                "Effect": "Allow",
                "Action": "logs:DescribeLogGroups",
                "Resource": "*",
            },
        ],
    }
